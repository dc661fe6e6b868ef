"""Composing the real ``conf/`` in tests, and small data configs."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from seq2seq.config.schema import DataConfig, register_configs
from tests.helpers.runs import REPO

CONF = str(REPO / "conf")
#: Synthetic corpus sizes small enough to generate in a test.
SMALL = {"train_size": 60, "valid_size": 10, "test_size": 10, "max_len": 12}


def compose_config(*overrides: str) -> DictConfig:
    """``conf/config.yaml`` with Hydra overrides, composed as ``scripts/train.py`` does."""
    register_configs()
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=list(overrides))


def small_data(directory: Path | None = None, **changes: object) -> DictConfig:
    """A synthetic ``data`` config with small sizes (its default folder unless ``directory``)."""
    data = OmegaConf.merge(OmegaConf.structured(DataConfig), {**SMALL, **changes})
    if directory is not None:
        data.dir = str(directory)
    return data


def tatoeba_data(**changes: object) -> DictConfig:
    """``data=tatoeba`` with ``data.<key>=<value>`` changes."""
    return compose_config("data=tatoeba", *(f"data.{k}={v}" for k, v in changes.items())).data
