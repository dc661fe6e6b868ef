"""The run folder: one training at a time (a lock released on any exit), nothing written
before the command is accepted (not even Hydra's record), no empty folder left by a refused
command, the stop line in train.log; and what the command line answers without training."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.bad_input import PROCESS_TIMEOUT, snapshot
from tests.helpers.runs import REPO, TINY_OVERRIDES, run_script, script_env


def tiny(toy_corpus: Path, *extra: str) -> list[str]:
    return [*TINY_OVERRIDES, f"data.dir={toy_corpus}", "train.num_threads=1", *extra]


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-3000:]
    return errors[0]


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["model.hidden_size=64", "attention=dot"], ("already holds a training run",)),
        (["resume=true", "model.hidden_size=64"], ("cannot resume", "model.hidden_size")),
        (["resume=true", "data.seed=5"], ("cannot resume", "data.seed")),
    ],
    ids=["new-settings", "resume-other-model", "resume-other-corpus"],
)
def test_a_refused_command_leaves_a_finished_run_exactly_as_it_was(
    tiny_run, toy_corpus, tmp_path, extra, fragments
) -> None:
    run_dir = tmp_path / "run"  # a copy: the shared run stays out of reach of a failure here
    shutil.copytree(tiny_run("additive"), run_dir)
    before = snapshot(run_dir)
    result = run_script("train.py", *tiny(toy_corpus, *extra), f"hydra.run.dir={run_dir}")
    message = one_error_line(result)
    for fragment in fragments:
        assert fragment in message, message
    assert snapshot(run_dir) == before  # .hydra/ and train.log included
    assert not list((REPO / "data" / "synthetic").glob("seed5-*"))  # no corpus generated


def test_a_refused_command_leaves_no_empty_run_folder(tmp_path) -> None:
    run_dir = tmp_path / "new" / "run"
    result = run_script("train.py", "data=tsv", "train.processes=1", f"hydra.run.dir={run_dir}")
    assert "data=tsv reads train.tsv" in one_error_line(result) and "data.dir=" in result.stderr
    assert not run_dir.exists()
    default = subprocess.run(
        [sys.executable, str(REPO / "scripts/train.py"), "data=tsv", "train.processes=1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=PROCESS_TIMEOUT, env=script_env(),
    )  # fmt: skip
    one_error_line(default)
    assert not list((tmp_path / "outputs").rglob("*.log"))  # Hydra's default folder: gone too
    assert not [p for p in (tmp_path / "outputs").rglob("*") if p.is_file()]


def test_a_second_training_into_a_busy_folder_refuses_and_a_dead_ones_lock_is_no_lock(
    toy_corpus, tmp_path
) -> None:
    run_dir, log = tmp_path / "run", tmp_path / "first.log"
    endless = ["train.max_steps=100000", "train.max_epochs=0", "train.eval_every=1000"]
    with open(log, "w", encoding="utf-8") as handle:
        first = subprocess.Popen(
            [sys.executable, str(REPO / "scripts/train.py"), *tiny(toy_corpus, *endless),
             f"hydra.run.dir={run_dir}"],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
            env=script_env(),
        )  # fmt: skip
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not list((run_dir / "tb").glob("events.*")):
        assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    try:
        second = run_script("train.py", *tiny(toy_corpus, "seed=1"), f"hydra.run.dir={run_dir}")
        message = one_error_line(second)
        assert "is in use by another training" in message and str(run_dir) in message
        assert first.poll() is None  # the first one goes on, alone
    finally:
        os.kill(first.pid, signal.SIGKILL)  # no clean-up: its lock dies with it
        first.wait(timeout=PROCESS_TIMEOUT)
    log_lines = (run_dir / "train.log").read_text(encoding="utf-8").count("run folder:")
    assert log_lines == 1  # only the first one ever logged there
    third = run_script("train.py", *tiny(toy_corpus), "resume=true", f"hydra.run.dir={run_dir}")
    assert "is in use" not in third.stderr  # the dead process's lock went with it


def test_help_lists_every_option_with_its_help_text_without_importing_torch() -> None:
    code = (
        "import runpy, sys\n"
        "sys.argv = ['scripts/train.py', '--help', 'train.lr=0.005']\n"
        "try:\n    runpy.run_path('scripts/train.py', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    out = result.stdout
    assert "torch imported: False" in out
    assert "train.lr=0.005\n      Adam learning rate" in out  # the value these arguments give
    assert "train.processes=auto" in out and "one per CPU core" in out
    assert "attention: additive, dot, multihead, none" in out


def test_the_stop_line_is_in_train_log_too(tiny_run) -> None:
    """(The signal tests check the line itself; here: a finished run logs why it stopped.)"""
    log = (tiny_run("additive") / "train.log").read_text(encoding="utf-8")
    assert "training stopped at step 24: train.max_steps=24 reached" in log
    metrics = json.loads((tiny_run("additive") / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["steps"] == 24
