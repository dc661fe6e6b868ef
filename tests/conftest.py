"""Shared fixtures: a tiny aligned corpus and tiny real training runs (through the real CLI);
the helpers they use live in :mod:`tests.helpers`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seq2seq.training.distributed import TIMEOUT_ENV
from tests.helpers.processes import MARK, end_marked
from tests.helpers.runs import TINY_OVERRIDES, TINY_TRANSFORMER, run_script, write_toy_corpus


@pytest.fixture(autouse=True)
def no_process_left(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Processes this test starts carry its mark; whatever is still running at its end is
    killed (see :mod:`tests.helpers.processes`)."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    monkeypatch.setenv(TIMEOUT_ENV, "120")  # a rank whose peer died fails in 2 min, not 30
    yield
    end_marked(mark)


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("toy_corpus"))


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, toy_corpus: Path) -> Callable[..., Path]:
    """``tiny_run("additive")`` -> a finished run folder (cached per attention and seed);
    ``tiny_run("transformer")`` a tiny Transformer's (:data:`TINY_TRANSFORMER`)."""
    cache: dict[tuple[str, int], Path] = {}

    def make(attention: str = "additive", seed: int = 0) -> Path:
        key = (attention, seed)
        if key not in cache:
            run_dir = tmp_path_factory.mktemp(f"run_{attention}_{seed}")
            transformer = attention == "transformer"
            network = TINY_TRANSFORMER if transformer else (f"attention={attention}",)
            result = run_script(
                "train.py",
                *TINY_OVERRIDES,
                f"data.dir={toy_corpus}",
                *network,
                f"seed={seed}",
                f"hydra.run.dir={run_dir}",
            )
            assert result.returncode == 0, result.stderr[-3000:]
            cache[key] = run_dir
        return cache[key]

    return make


#: The longest test files (minutes of the suite: a notebook, many subprocess trainings), run
#: first so that the test workers (pytest-xdist, one file each at a time) end together.
LONGEST_FIRST = (
    "test_notebook.py",
    "test_train_errors.py",
    "test_launch.py",
    "test_distributed.py",
    "test_signals.py",
    "test_bench.py",
    "test_translate_errors.py",
    "test_evaluate_errors.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the files longest first (see :data:`LONGEST_FIRST`), each file's tests as written."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
