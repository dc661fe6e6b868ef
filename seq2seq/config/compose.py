"""Composing ``conf/`` outside ``@hydra.main`` (for scripts that make no run folder)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from seq2seq.config.schema import Config, register_configs, to_config
from seq2seq.errors import UserError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def load_config(overrides: list[str]) -> Config:
    """``conf/config.yaml`` with Hydra-style overrides (``attention=dot train.lr=1e-3``), as
    the schema's dataclasses. Inside a Hydra app (a sweep's jobs, checked before they start)
    the app's own config search path composes it."""
    register_configs()
    try:
        if GlobalHydra.instance().is_initialized():
            composed = compose("config", overrides=overrides)
        else:
            with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
                composed = compose("config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:
        message = str(err).split("Config search path")[0]
        if err.__cause__ is not None:
            message += ": " + str(err.__cause__).splitlines()[0]
        raise UserError(" ".join(message.split())) from None
    return to_config(composed)
