"""Training on two processes (torchrun, DDP, gloo on CPU): the same losses as one process, one
run folder, agreed stops on a signal to any rank, resume, early stopping and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.errors import UserError
from seq2seq.launch.processes import check_batch_size, refuse_multirun, worker_overrides
from seq2seq.training.distributed import ProcessGroup, shard
from seq2seq.training.ranks import WorldPosition
from tests.helpers.bad_input import PROCESS_TIMEOUT, run_processes
from tests.helpers.processes import rank_pid
from tests.helpers.runs import (
    REPO,
    TINY_OVERRIDES,
    TINY_TRANSFORMER,
    loss_curve,
    run_script,
    script_env,
)

EXACT = ["model.dropout=0", "train.num_threads=1"]


def torchrun_command(*args: str, processes: int = 2) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        f"--nproc-per-node={processes}", str(REPO / "scripts/train.py"), *args,
    ]  # fmt: skip


def torchrun(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """``torchrun --standalone --nproc-per-node=2 scripts/train.py args``; never raises."""
    return run_processes(torchrun_command(*args), cwd)


def tiny(*extra: str, toy_corpus: Path) -> list[str]:
    kept = [o for o in TINY_OVERRIDES if not o.startswith(("train.max_steps", "train.eval_every"))]
    return [*kept, f"data.dir={toy_corpus}", *EXACT, *extra]


def test_shards_cover_the_global_batch_once_in_rank_order() -> None:
    batch = list(range(10, 17))
    shards = [shard(batch, rank, 3) for rank in range(3)]
    assert sorted(i for own, _ in shards for i in own) == batch
    assert all(weight == 1.0 for _, weight in shards)
    assert shard([5], 1, 2) == ([5], 0.0)  # too few pairs: a zero-weight stand-in


def test_workers_drop_the_users_hydra_output_settings() -> None:
    argv = ["attention=dot", "hydra.run.dir=/x", "hydra/job_logging=default", "seed=1"]
    quiet = worker_overrides(argv)
    assert quiet[:2] == ["attention=dot", "seed=1"]
    assert "hydra.run.dir=." in quiet and "hydra.output_subdir=null" in quiet
    assert "hydra/job_logging=disabled" in quiet and "/x" not in " ".join(quiet)


def test_launch_checks_name_the_problem() -> None:
    two = WorldPosition(rank=0, local_rank=0, world_size=2)
    refuse_multirun(WorldPosition(), multirun=True)  # one process: sweeps are fine
    check_batch_size(two.world_size, batch_size=2)
    with pytest.raises(UserError, match="global batch"):
        check_batch_size(two.world_size, batch_size=1)
    with pytest.raises(UserError, match="multirun"):
        refuse_multirun(two, multirun=True)


def curve(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    events = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    return [(event.step, event.value) for event in events.Scalars(tag)]


@pytest.mark.parametrize(
    ("guided", "network"),
    [(False, ()), (True, ()), (True, TINY_TRANSFORMER)],
    ids=["plain", "guided", "guided-transformer"],
)
def test_two_processes_follow_one_process_loss_in_one_run_folder(
    toy_corpus, tmp_path, guided: bool, network: tuple[str, ...]
) -> None:
    """The one update under DDP: the same losses as one process (guided alignment too; the
    Transformer too)."""
    guidance = ["train.alignment_weight=1.0"] if guided else []
    args = tiny(
        "train.max_steps=10", "train.eval_every=10", *guidance, *network, toy_corpus=toy_corpus
    )
    single = run_script("train.py", *args, f"hydra.run.dir={tmp_path / 'single'}")
    assert single.returncode == 0, single.stderr[-3000:]
    result = torchrun(*args, cwd=tmp_path)  # Hydra's timestamped default folder
    assert result.returncode == 0, result.stderr[-3000:]
    runs = [p for p in (tmp_path / "outputs").rglob("*") if (p / "train.log").exists()]
    assert len(runs) == 1, runs  # rank 1 made no folder of its own
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs", "single"]
    run = runs[0]
    assert [p.name for p in (run / "tb").iterdir()] == [next((run / "tb").iterdir()).name]
    assert "world size 2, backend gloo" in (run / "train.log").read_text(encoding="utf-8")
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["distributed"] == {"world_size": 2, "backend": "gloo", "world_sizes": [2]}
    assert metrics["steps"] == 10
    tags = ["loss/train", "loss/alignment"] if guided else ["loss/train"]
    for tag in tags:
        one, two = curve(tmp_path / "single", tag), curve(run, tag)
        assert [s for s, _ in two] == [s for s, _ in one] == list(range(1, 11))
        for (step, a), (_, b) in zip(one, two, strict=True):
            assert b == pytest.approx(a, rel=1e-5), f"{tag} at step {step}: {a} vs {b}"
    assert loss_curve(run) == curve(run, "loss/train")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_sigterm_to_rank_1_stops_both_once_then_resume_and_early_stop(toy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    args = tiny(
        "train.max_steps=100000",
        "train.max_epochs=0",
        "train.eval_every=1000",
        toy_corpus=toy_corpus,
    )
    log = tmp_path / "stop.log"
    with open(log, "w", encoding="utf-8") as handle:
        process = subprocess.Popen(
            torchrun_command(*args, f"hydra.run.dir={run_dir}"),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=script_env({"SEQ2SEQ_DDP_TIMEOUT_S": "120"}),
        )
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not list((run_dir / "tb").glob("events.*")) and time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    time.sleep(2.0)  # a few steps in
    worker = rank_pid(process.pid, 1)
    assert worker is not None
    os.kill(worker, signal.SIGTERM)
    process.wait(timeout=PROCESS_TIMEOUT)
    output = log.read_text(encoding="utf-8")
    assert process.returncode != 0
    assert output.count("stopped by SIGTERM") == 1, output[-3000:]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["last.pt"]
    stopped_at = torch.load(run_dir / "checkpoints/last.pt", weights_only=True)["state"]["step"]
    assert loss_curve(run_dir)[-1][0] == stopped_at > 0

    # Resume under DDP; stop_at_exact_match=0 stops both ranks at the first validation.
    resumed = torchrun(
        *tiny(
            "train.max_steps=100000",
            "train.max_epochs=0",
            "train.eval_every=5",
            toy_corpus=toy_corpus,
        ),
        "train.stop_at_exact_match=0.0",
        "resume=true",
        f"hydra.run.dir={run_dir}",
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    first_eval = (stopped_at // 5 + 1) * 5
    assert metrics["steps"] == first_eval
    steps = [s for s, _ in loss_curve(run_dir)]
    assert steps == list(range(1, first_eval + 1))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.lr=-1", "error: train.lr must be positive"),
        ("attention=nonexistent", "Could not find 'attention/nonexistent'"),
        ("-m", "error: -m/--multirun cannot run under torchrun"),
    ],
)
def test_bad_input_under_torchrun_says_it_once_and_fails(toy_corpus, tmp_path, override, message):
    result = torchrun(*tiny("train.max_steps=10", toy_corpus=toy_corpus), override, cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.count(message) == 1, result.stderr[-3000:]
    assert not (tmp_path / "multirun").exists()  # no sweep folder from any rank


def test_train_log_says_which_device_the_processes_compute_on() -> None:
    """A learner on a GPU notebook sees in ``train.log`` that training runs on the GPU."""
    one = ProcessGroup(WorldPosition(), None, torch.device("cpu"))
    assert one.describe() == "world size 1, backend none, device cpu"
    two = ProcessGroup(WorldPosition(1, 1, 2, 2), "nccl", torch.device("cuda", 1))
    assert two.describe() == "world size 2, backend nccl, device cuda"
