"""Training as subprocesses through the real entry point: the run a user gets by default,
trained to a valid exact match target, and one run on 1 and on 2 processes side by side.

**To the target** (:func:`train_within`): ``python scripts/train.py overrides...
train.stop_at_exact_match=<target> train.patience=0`` exactly as a user types it, so its
``train.processes`` (auto by default: one DDP process per core, see
:mod:`seq2seq.launch.processes`) decides how many processes train. The config's step or epoch
limit is kept (the learning-rate schedule is planned over it). The command gets the wall
budget, counted from its first TensorBoard event (after the imports, the corpus and the
launcher: :data:`START_LIMIT_S` at most); past that it
gets SIGTERM: the processes stop together after a step and rank 0 saves ``last.pt``. What the
run did is read back from ``metrics.json``, else from ``last.pt`` (:func:`read_run`).

**1 vs 2 processes** (:func:`measure_processes`): ``python -m torch.distributed.run
--standalone --nproc-per-node=N scripts/train.py`` (``sys.executable -m`` so no ``torchrun``
needs to be on PATH; the 1-process run goes through the same launcher so both pay the same
start-up), with ``train.num_threads=1`` (one core per process) and a fixed ``train.max_steps``.
``train.batch_size`` is the global batch, so both runs do the same work per step.

Tokens/s is read from rank 0's TensorBoard scalar ``throughput/tgt_tokens_per_s``: the trainer
logs the *global* target tokens of every ``log_every``-step window over that window's wall time
(validation excluded). The first window is skipped (first-step allocations, DDP's gradient
buckets, the process start still settling); ``tokens_per_s`` is the median of the others, which
a burst from another process on this shared machine moves less than the mean. Counting tokens
over ``train_seconds`` instead would include that first window. ``wall_s`` is the whole
subprocess (start, corpus loading, training, the final validation and test) and so tells what
the launch costs, not the training speed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary, ValidationRecord
from seq2seq.launch.processes import SHUTDOWN_TIMEOUT_S
from seq2seq.model.checkpoint import load_checkpoint
from seq2seq.training.checkpointing import LAST
from seq2seq.training.state import TrainState

THROUGHPUT_TAG = "throughput/tgt_tokens_per_s"
WINDOWS = 8  # throughput windows per run: log_every = steps // WINDOWS
# After SIGTERM: the launcher's own wait for its workers to finish a step and save, and more.
STOP_GRACE_S = SHUTDOWN_TIMEOUT_S + 30.0
START_LIMIT_S = 300.0  # at most this long to start (imports, corpus, launcher): the budget
#  counts from the run's first TensorBoard event, so a loaded machine's slow start costs none
REPO = Path(__file__).resolve().parents[3]


def unavailable(device: torch.device) -> str | None:
    """Why two processes cannot be compared on this machine, or None if they can."""
    if device.type == "cuda":
        gpus = torch.cuda.device_count()
        return None if gpus >= 2 else f"{gpus} CUDA device(s); 2 processes need 2 GPUs"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return None if (cores or 1) >= 2 else f"{cores} CPU core(s); 2 processes need 2 cores"


def launch_command(processes: int, overrides: Sequence[str]) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc-per-node=N scripts/train.py``."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={processes}",
        str(REPO / "scripts" / "train.py"),
        *overrides,
    ]


def _env() -> dict[str, str]:
    """This environment, with this checkout first on PYTHONPATH so every rank imports it."""
    path = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONUNBUFFERED": "1"}


def _run(
    command: list[str],
    limit_s: float,
    graceful: bool,
    started: Callable[[], bool] | None = None,
) -> tuple[int | None, str, float]:
    """Run ``command`` for at most ``limit_s`` — counted from when ``started()`` first holds
    (polled; at most :data:`START_LIMIT_S` later), or from the launch without it; then, if
    ``graceful``, ask it to stop (SIGTERM to the launcher, which passes it to the ranks), else
    kill it. Returns the exit code (None when it was stopped gracefully), stderr and wall
    seconds."""
    launched = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=_env()
        )
        if started is not None:
            start_by = launched + START_LIMIT_S
            while proc.poll() is None and not started() and time.perf_counter() < start_by:
                time.sleep(0.2)
        begun = time.perf_counter()
        try:
            proc.wait(timeout=max(0.0, limit_s - (begun - launched if started is None else 0)))
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            code = None if graceful else proc.returncode
        err.seek(0)
        return code, err.read(), time.perf_counter() - launched


def _failed(processes: int, code: int | None, stderr: str, command: list[str]) -> UserError:
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    return UserError(
        f"the {processes}-process bench training failed (exit {code}: {last}); "
        f"run it by hand to see why: {' '.join(command)}"
    )


def steady_tokens_per_s(tb_dir: Path) -> float:
    """Median of the ``throughput/tgt_tokens_per_s`` windows after the first (see module)."""
    events = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
    events.Reload()
    if THROUGHPUT_TAG not in events.Tags().get("scalars", []):
        raise UserError(f"no {THROUGHPUT_TAG} in {tb_dir}; raise --ddp-steps")
    rates = [e.value for e in sorted(events.Scalars(THROUGHPUT_TAG), key=lambda e: e.step)]
    return median(rates[1:] or rates)


def measure_throughput(
    processes: int, overrides: Sequence[str], steps: int, run_dir: Path
) -> dict[str, Any]:
    """Train ``steps`` updates on ``processes`` processes: steady tokens/s, steps and wall
    seconds."""
    command = launch_command(
        processes,
        [
            *overrides,
            "train.num_threads=1",
            f"train.max_steps={steps}",
            f"train.eval_every={steps + 1}",  # no validation inside the measured steps
            f"train.log_every={max(1, steps // WINDOWS)}",
            f"hydra.run.dir={run_dir}",
        ],
    )
    code, stderr, wall = _run(command, 600.0 + 20 * steps, graceful=False)
    if code != 0:
        raise _failed(processes, code, stderr, command)
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return {
        "tokens_per_s": steady_tokens_per_s(run_dir / "tb"),
        "steps": metrics["steps"],
        "wall_s": wall,
    }


@dataclass(frozen=True)
class Trained:
    """What one ``scripts/train.py`` subprocess did, read back from its run folder: from
    ``metrics.json`` when the run finished, else from ``checkpoints/last.pt`` (saved at every
    validation and when a signal stopped it), else nothing (stopped before either)."""

    command: list[str]
    wall_seconds: float  # the whole subprocess: start, corpus, training, validation, test
    wall_limit_s: float  # when it gets SIGTERM: the budget, from its first TensorBoard event
    stopped_by_budget: bool  # got SIGTERM at the wall limit
    source: str | None  # "metrics.json", "last.pt" or None
    history: list[ValidationRecord]  # every validation, in order
    steps: int  # update steps run
    train_seconds: float  # rank 0's time in update steps, validation excluded
    processes: int  # DDP processes that trained it


def read_run(run_dir: Path, planned: int) -> tuple[str | None, TrainState, int]:
    """Where a run in ``run_dir`` stands and how many processes trained it: ``metrics.json``'s
    history and ``distributed.world_size``; else ``last.pt``'s state and the count of its
    per-rank RNG streams (one process keeps no list); else an empty state and ``planned``."""
    metrics = run_dir / METRICS_FILE
    if metrics.exists():
        summary = RunSummary.load(metrics)
        state = TrainState(
            step=summary.steps or 0,
            train_seconds=summary.train_seconds,
            history=list(summary.history),
        )
        ran = summary.distributed.world_size if summary.distributed else planned
        return METRICS_FILE, state, ran
    last = run_dir / "checkpoints" / LAST
    if last.exists():
        saved = load_checkpoint(last)
        ranks = saved.rng.get("ranks")  # see seq2seq.training.checkpointing.rng_record
        return LAST, TrainState.from_dict(saved.state), 1 if ranks is None else len(ranks)
    return None, TrainState(), planned


def train_command(overrides: Sequence[str]) -> list[str]:
    """``python scripts/train.py overrides...``: the command a user runs, with its default
    launch (``train.processes``)."""
    return [sys.executable, str(REPO / "scripts" / "train.py"), *overrides]


def train_within(overrides: Sequence[str], budget_s: float, run_dir: Path, planned: int) -> Trained:
    """Run ``python scripts/train.py overrides... hydra.run.dir=run_dir`` for at most
    ``budget_s`` of wall time from its first TensorBoard event (its start: at most
    :data:`START_LIMIT_S`); past it the command gets SIGTERM
    (the processes stop together after a step and rank 0 saves ``last.pt``). ``planned``: the
    processes the launch takes, reported when the run stopped before saving anything."""
    command = train_command([*overrides, f"hydra.run.dir={run_dir}"])
    limit_s = budget_s
    code, stderr, wall = _run(
        command, limit_s, graceful=True, started=lambda: any((run_dir / "tb").glob("events.*"))
    )
    if code not in (0, None):
        raise _failed(planned, code, stderr, command)
    source, state, ran = read_run(run_dir, planned)
    return Trained(
        command=command,
        wall_seconds=wall,
        wall_limit_s=limit_s,
        stopped_by_budget=code is None,
        source=source,
        history=state.history,
        steps=state.step,
        train_seconds=state.train_seconds,
        processes=ran,
    )


def measure_processes(overrides: Sequence[str], steps: int, work_dir: Path) -> dict[str, Any]:
    """The ``processes`` field of bench.json: ``{"1": {...}, "2": {...}, "speedup"}``."""
    if steps < 1:
        raise UserError(f"--ddp-steps must be at least 1, not {steps}")
    runs = {str(n): measure_throughput(n, overrides, steps, work_dir / f"ddp_{n}") for n in (1, 2)}
    speedup = runs["2"]["tokens_per_s"] / runs["1"]["tokens_per_s"]
    return {**runs, "speedup": speedup}


def format_processes(processes: dict[str, Any] | None, skipped: str | None) -> list[str]:
    """The table's lines for the ``processes`` field."""
    if processes is None:
        return [f"processes: skipped ({skipped})"]
    one, two = processes["1"], processes["2"]
    return [
        f"processes (DDP, {one['steps']} steps): 1 → {one['tokens_per_s']:,.0f} tok/s "
        f"({one['wall_s']:.0f} s wall), 2 → {two['tokens_per_s']:,.0f} tok/s "
        f"({two['wall_s']:.0f} s wall): {processes['speedup']:.2f}×"
    ]
