"""The default launch (train.processes=auto): one run on every core through PyTorch's elastic
launcher, one process on one core; Ctrl-C and SIGTERM stop it cleanly with a loadable last.pt;
the resumed run continues every rank's random streams."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from seq2seq.errors import UserError
from seq2seq.launch.processes import (
    MIN_PAIRS_PER_PROCESS,
    failure_code,
    killed_worker,
    planned_processes,
)
from seq2seq.model.checkpoint import load_checkpoint
from tests.helpers.bad_input import PROCESS_TIMEOUT, run_processes
from tests.helpers.config import compose_config
from tests.helpers.processes import MARK, marked, rank_pid
from tests.helpers.runs import REPO, TINY_OVERRIDES, loss_curve, script_env

# the tiny run with the default train.processes (auto), dropout 0 so runs compare exactly
AUTO = [o for o in TINY_OVERRIDES if not o.startswith("train.processes")]
EXACT = ["model.dropout=0"]
taskset = shutil.which("taskset")


def train_command(*args: str, cores: str | None = None) -> list[str]:
    """``python scripts/train.py args``, pinned to ``cores`` (e.g. "0") when given."""
    command = [sys.executable, str(REPO / "scripts/train.py"), *args]
    return [taskset, "-c", cores, *command] if cores and taskset else command


def run(*args: str, cores: str | None = None) -> subprocess.CompletedProcess:
    return run_processes(train_command(*args, cores=cores))


def test_auto_means_one_process_per_core_or_gpu_within_the_batch() -> None:
    cfg = compose_config("device=cpu")
    assert cfg.train.processes == "auto"
    batch = cfg.train.batch_size
    assert planned_processes(cfg, multirun=False, cores=1) == 1
    assert planned_processes(cfg, multirun=False, cores=2) == 2
    assert planned_processes(cfg, multirun=False, cores=64) == batch // MIN_PAIRS_PER_PROCESS
    assert planned_processes(cfg, multirun=True, cores=2) == 1  # a sweep's job
    three = compose_config("train.processes=3")
    assert planned_processes(three, multirun=False, cores=4) == 3
    assert planned_processes(three, multirun=False, cores=1, gpus=4) == 3  # one per GPU
    with pytest.raises(UserError, match=r"train.processes=3 is more than the 2 CPU cores this"):
        planned_processes(three, multirun=False, cores=2, gpus=0)
    cuda = compose_config("device=cuda")
    assert planned_processes(cuda, multirun=False, cores=16, gpus=4) == 4


@pytest.mark.skipif(
    (os.cpu_count() or 1) < 2 or taskset is None, reason="needs 2 cores and taskset"
)
def test_the_default_launch_takes_every_core_and_one_on_one_core(toy_corpus, tmp_path) -> None:
    args = [*AUTO, f"data.dir={toy_corpus}", "train.max_steps=12", "train.eval_every=12"]
    two = run(*args, f"hydra.run.dir={tmp_path / 'two'}", cores="0,1")
    one = run(*args, f"hydra.run.dir={tmp_path / 'one'}", cores="0")
    for result in (two, one):
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stdout + result.stderr
    worlds = [
        json.loads((tmp_path / name / "metrics.json").read_text())["distributed"]["world_size"]
        for name in ("two", "one")
    ]
    assert worlds == [2, 1]
    log = (tmp_path / "two" / "train.log").read_text(encoding="utf-8")
    assert "world size 2, backend gloo" in log and log.count("run folder:") == 1
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == [
        ".hydra", "checkpoints", "metrics.json", "tb", "train.log",
    ]  # fmt: skip


def start(run_dir: Path, log: Path, *args: str) -> subprocess.Popen:
    with open(log, "w", encoding="utf-8") as handle:
        return subprocess.Popen(
            train_command(*args, f"hydra.run.dir={run_dir}"),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=script_env({"SEQ2SEQ_DDP_TIMEOUT_S": "120"}),
        )


def wait_for_steps(run_dir: Path, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not list((run_dir / "tb").glob("events.*")):
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    time.sleep(2.0)  # a few steps in


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the default launch needs 2 cores")
@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
def test_a_signal_to_the_launcher_stops_every_worker_with_a_loadable_last_pt(
    toy_corpus, tmp_path, signum
) -> None:
    run_dir, log = tmp_path / "run", tmp_path / "out.log"
    endless = ["train.max_steps=100000", "train.max_epochs=0", "train.eval_every=1000"]
    args = [*AUTO, *EXACT, f"data.dir={toy_corpus}", *endless]
    process = start(run_dir, log, *args)
    wait_for_steps(run_dir, process, log)
    process.send_signal(signum)  # what Ctrl-C (a scheduler's SIGTERM, a closed terminal) does
    process.wait(timeout=PROCESS_TIMEOUT)
    output = log.read_text(encoding="utf-8")
    name = signal.Signals(signum).name
    assert process.returncode == 128 + signum, output[-3000:]
    assert output.count(f"stopped by {name}") == 1 and "Traceback" not in output, output[-3000:]
    assert f"stopped by {name}" in (run_dir / "train.log").read_text(encoding="utf-8")
    checkpoint = load_checkpoint(run_dir / "checkpoints" / "last.pt")
    stopped_at = checkpoint.state["step"]
    assert stopped_at > 0 and len(checkpoint.rng["ranks"]) == 2  # every rank's streams
    assert loss_curve(run_dir)[-1][0] == stopped_at


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the default launch needs 2 cores")
def test_an_interrupted_two_process_run_resumes_exactly(toy_corpus, tmp_path) -> None:
    """With dropout on, each rank draws its own masks: a resumed run continues every rank's
    streams, so its losses equal the uninterrupted run's."""
    # plateau: a linear schedule plans its decay to max_steps, which differs between the runs
    args = [*AUTO, f"data.dir={toy_corpus}", "model.dropout=0.3",
            "train.lr_schedule=plateau"]  # fmt: skip
    whole = run(
        *args, "train.max_steps=20", "train.eval_every=8", f"hydra.run.dir={tmp_path / 'a'}"
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    first = run(*args, "train.max_steps=8", "train.eval_every=8", f"hydra.run.dir={tmp_path / 'b'}")
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = run(
        *args, "train.max_steps=20", "train.eval_every=8", "resume=true",
        f"hydra.run.dir={tmp_path / 'b'}",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected, curve = loss_curve(tmp_path / "a"), loss_curve(tmp_path / "b")
    assert [s for s, _ in curve] == [s for s, _ in expected] == list(range(1, 21))
    assert curve == expected
    assert torch.equal(
        load_checkpoint(tmp_path / "a" / "checkpoints/last.pt").model["bridge.weight"],
        load_checkpoint(tmp_path / "b" / "checkpoints/last.pt").model["bridge.weight"],
    )


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the default launch needs 2 cores")
def test_workers_never_outlive_a_killed_launcher(toy_corpus, tmp_path) -> None:
    """SIGKILL to the launcher: its workers end with it (the kernel's parent-death signal), so
    nothing writes into the folder unlocked, and the next command resumes from last.pt."""
    run_dir, log = tmp_path / "run", tmp_path / "out.log"
    endless = ["train.max_steps=100000", "train.max_epochs=0", "train.eval_every=10"]
    args = [*AUTO, *EXACT, f"data.dir={toy_corpus}", *endless]
    process = start(run_dir, log, *args)
    last = run_dir / "checkpoints" / "last.pt"
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not last.exists():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    workers = [p for p in marked(os.environ[MARK]) if p != process.pid]
    assert len(workers) >= 2, "the launch should have started two workers"
    process.kill()
    process.wait(timeout=PROCESS_TIMEOUT)
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{pid}").exists() for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived its killed launcher"
        time.sleep(0.05)
    kept = load_checkpoint(last).state["step"]
    resumed = run(*args[:-3], "train.max_steps=40", "train.max_epochs=0", "train.eval_every=10",
                  "train.processes=1", "resume=true", f"hydra.run.dir={run_dir}")  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    text = (run_dir / "train.log").read_text(encoding="utf-8")
    assert f"resumed from {last} at step {kept}" in text
    assert text.count("training stopped at step") == 1  # the killed run wrote no more


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the default launch needs 2 cores")
@pytest.mark.parametrize("rank", [0, 1])
def test_a_killed_worker_is_one_line_naming_it_and_the_checkpoint_kept(
    toy_corpus, tmp_path, rank
) -> None:
    run_dir, log = tmp_path / "run", tmp_path / "out.log"
    endless = ["train.max_steps=100000", "train.max_epochs=0", "train.eval_every=10"]
    process = start(run_dir, log, *AUTO, *EXACT, f"data.dir={toy_corpus}", *endless)
    last = run_dir / "checkpoints" / "last.pt"
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not last.exists() or rank_pid(process.pid, rank) is None:
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    os.kill(rank_pid(process.pid, rank), signal.SIGKILL)
    process.wait(timeout=PROCESS_TIMEOUT)
    output = log.read_text(encoding="utf-8")
    assert process.returncode == 128 + signal.SIGKILL, output[-3000:]
    assert "Traceback" not in output and "Error executing job" not in output, output[-3000:]
    step = load_checkpoint(last).state["step"]
    (line,) = [line for line in output.splitlines() if line.startswith("error: ")]
    assert line == (
        f"error: rank {rank} of 2 was killed by SIGKILL; {last} (step {step}) is kept: "
        f"continue with the same command and resume=true hydra.run.dir={run_dir}"
    ), output[-3000:]


def test_the_worker_killed_first_is_named_not_the_one_the_launcher_stopped_after_it() -> None:
    """A worker killed by SIGKILL makes the launcher stop the others with SIGTERM; a worker
    that dies of that SIGTERM is not the cause (seen once: the message named rank 0)."""

    def failure(exitcode: int, timestamp: int) -> SimpleNamespace:
        return SimpleNamespace(exitcode=exitcode, timestamp=timestamp)

    kill, term = -signal.SIGKILL, -signal.SIGTERM
    assert killed_worker({0: failure(term, 5), 1: failure(kill, 5)}) == (1, signal.SIGKILL)
    assert killed_worker({0: failure(kill, 6), 1: failure(term, 5)}) == (0, signal.SIGKILL)
    assert killed_worker({0: failure(term, 6), 1: failure(term, 5)}) == (1, signal.SIGTERM)
    assert killed_worker({0: failure(2, 5), 1: failure(kill, 6)}) == (1, signal.SIGKILL)
    assert killed_worker({0: failure(2, 5)}) is None
    # a worker that refused the command said why and exited 2; the launcher then stopped
    # the other with SIGTERM: that is no death to report (it said "rank 1 was killed")
    assert killed_worker({0: failure(2, 5), 1: failure(term, 5)}) is None
    assert killed_worker({0: failure(term, 5), 1: failure(2, 5)}) is None
    assert failure_code({0: failure(term, 5), 1: failure(2, 5)}) == 2
    assert failure_code({0: failure(1, 6), 1: failure(2, 5)}) == 2


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the default launch needs 2 cores")
def test_a_corpus_error_under_the_default_launch_is_rank_0s_one_line(toy_corpus, tmp_path) -> None:
    """Every worker finds the bad line; rank 0 says so, and the launcher neither adds a
    line about the worker it stopped after that nor keeps the run folder."""
    corpus = tmp_path / "corpus"
    shutil.copytree(toy_corpus, corpus)
    lines = (corpus / "valid.tsv").read_bytes().split(b"\n")
    lines[2] = "我 爱 中国 I love China".encode()
    (corpus / "valid.tsv").write_bytes(b"\n".join(lines))
    run_dir = tmp_path / "run"
    done = run(*AUTO, f"data.dir={corpus}", f"hydra.run.dir={run_dir}")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "valid.tsv:3:" in errors[0], output[-3000:]
    assert "Traceback" not in output and not run_dir.exists(), output[-3000:]
