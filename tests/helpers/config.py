"""Composing the real ``conf/`` in tests, and small data configs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from seq2seq.config.compose import load_config
from seq2seq.config.schema import Config, register_configs
from seq2seq.data.config import DataConfig
from tests.helpers.runs import REPO

CONF = str(REPO / "conf")
#: Synthetic corpus sizes small enough to generate in a test.
SMALL = {"train_size": 60, "valid_size": 10, "test_size": 10, "max_len": 12}


def compose_raw(*overrides: str, with_hydra: bool = False) -> DictConfig:
    """``conf/config.yaml`` with Hydra overrides, as Hydra composes it (before conversion);
    ``with_hydra`` keeps Hydra's own section (run folders, sweeper, launcher)."""
    register_configs()
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=with_hydra)


def compose_config(*overrides: str) -> Config:
    """The typed config ``scripts/train.py`` trains with for these overrides (composed, then
    converted: a bad value raises its one-line :class:`~seq2seq.errors.UserError`)."""
    return load_config(list(overrides))


def small_data(directory: Path | None = None, **changes: object) -> DataConfig:
    """A synthetic ``data`` config with small sizes (its default folder unless ``directory``)."""
    overrides = {**SMALL, **changes}
    data = compose_config(*(f"data.{k}={_override(v)}" for k, v in overrides.items())).data
    return data if directory is None else replace(data, dir=str(directory))


def _override(value: object) -> str:
    """``value`` as a Hydra override writes it."""
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def tatoeba_data(**changes: object) -> DataConfig:
    """``data=tatoeba`` with ``data.<key>=<value>`` changes."""
    return compose_config("data=tatoeba", *(f"data.{k}={v}" for k, v in changes.items())).data
