"""Shared fixtures: a tiny aligned corpus and tiny real training runs (through the real CLI);
the helpers they use live in :mod:`tests.helpers`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.runs import TINY_OVERRIDES, run_script, write_toy_corpus


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("toy_corpus"))


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, toy_corpus: Path) -> Callable[..., Path]:
    """``tiny_run("additive")`` -> a finished run folder (cached per attention and seed)."""
    cache: dict[tuple[str, int], Path] = {}

    def make(attention: str = "additive", seed: int = 0) -> Path:
        key = (attention, seed)
        if key not in cache:
            run_dir = tmp_path_factory.mktemp(f"run_{attention}_{seed}")
            result = run_script(
                "train.py",
                *TINY_OVERRIDES,
                f"data.dir={toy_corpus}",
                f"attention={attention}",
                f"seed={seed}",
                f"hydra.run.dir={run_dir}",
            )
            assert result.returncode == 0, result.stderr[-3000:]
            cache[key] = run_dir
        return cache[key]

    return make
