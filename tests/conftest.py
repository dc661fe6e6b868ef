"""Shared fixtures: a tiny aligned corpus and tiny real training runs (through the real CLI);
the helpers they use live in :mod:`tests.helpers`."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from seq2seq.training.distributed import TIMEOUT_ENV
from tests.helpers.cuda import CUDA_MARK, NO_CUDA, cuda_visible
from tests.helpers.processes import MARK, end_marked
from tests.helpers.runs import (
    SHARED_RUN_OVERRIDES,
    TINY_TRANSFORMER,
    made_once,
    run_script,
    write_toy_corpus,
)


def pytest_configure(config: pytest.Config) -> None:
    """A test worker of pytest-xdist (one per core) computes in-process on one thread: two
    workers of the default two threads each on two cores run the small tensors of the model
    tests about ten times slower than one thread each (measured: 0.7 s -> 9.6 s)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one test worker per core this process may use (as training counts them),
    not psutil's physical cores."""
    return len(os.sched_getaffinity(0))


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
def shared_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test session that every pytest-xdist worker sees (the parent of each
    worker's own temporary folder): what the session fixtures make once for all workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def toy_corpus(shared_tmp: Path) -> Path:
    return made_once(shared_tmp / "toy_corpus", write_toy_corpus)


@pytest.fixture(scope="session")
def tiny_run(shared_tmp: Path, toy_corpus: Path) -> Callable[..., Path]:
    """``tiny_run("additive")`` -> a finished run folder (one per attention and seed, trained
    once for all test workers); ``tiny_run("transformer")`` a tiny Transformer's
    (:data:`TINY_TRANSFORMER`). Shared: a test that writes into one works on a copy."""
    cache: dict[tuple[str, int], Path] = {}

    def train(run_dir: Path, attention: str, seed: int) -> None:
        transformer = attention == "transformer"
        network = TINY_TRANSFORMER if transformer else (f"attention={attention}",)
        result = run_script(
            "train.py",
            *SHARED_RUN_OVERRIDES,
            f"data.dir={toy_corpus}",
            *network,
            f"seed={seed}",
            f"hydra.run.dir={run_dir}",
        )
        assert result.returncode == 0, result.stderr[-3000:]

    def make(attention: str = "additive", seed: int = 0) -> Path:
        key = (attention, seed)
        if key not in cache:
            run_dir = shared_tmp / f"run_{attention}_{seed}"
            cache[key] = made_once(run_dir, lambda path: train(path, attention, seed))
        return cache[key]

    return make


#: The longest test files (minutes of the suite: a notebook, many subprocess trainings), run
#: first so that the test workers (pytest-xdist, one file each at a time) end together; roughly in
#: the order of their measured time (``--durations=0``, two workers on the 2-core machine). The
#: order holds because pyproject's addopts turn off xdist's own (files with the most tests
#: first, which sent the three-test notebook file last).
LONGEST_FIRST = (
    "test_launch.py",
    "test_distributed.py",
    "test_notebook.py",
    "test_train_errors.py",
    "test_explorer.py",
    "test_bench.py",
    "test_scripts.py",
    "test_signals.py",
    "test_train_app.py",
    "test_run_folder.py",
    "test_explorer_page.py",
    "test_synthetic.py",
    "test_tatoeba.py",
    "test_evaluate_errors.py",
    "test_transformer_runs.py",
    "test_translate_errors.py",
    "test_guidance.py",
    "test_compare.py",
    "test_subwords.py",
    "test_sweeps.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the files longest first (see :data:`LONGEST_FIRST`), each file's tests as written;
    skip the tests marked ``cuda`` where no CUDA device is visible (:mod:`tests.helpers.cuda`)."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    if any(item.get_closest_marker(CUDA_MARK) for item in items) and not cuda_visible():
        for item in items:
            if item.get_closest_marker(CUDA_MARK):
                item.add_marker(pytest.mark.skip(reason=NO_CUDA))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many tests were skipped for want of a CUDA device, so a green run on a CPU
    machine does not read as if they had passed."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and report.longrepr[2].endswith(NO_CUDA)
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} CUDA test(s) skipped: {NO_CUDA} (they run on a GPU machine: "
            "bash scripts/gpu_check.sh, docs/gpu.md)"
        )
