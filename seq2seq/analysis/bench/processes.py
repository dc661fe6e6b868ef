"""Scale-out: one training run on 1 and on 2 processes (DDP), side by side.

Both runs are real subprocesses through the real entry point, ``python -m torch.distributed.run
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

With ``time_to_target`` the 2-process run is also trained with
``train.stop_at_exact_match=<target>`` (patience off, the config's step/epoch limit kept, as
for the 1-process time-to-99) within the same wall budget (plus ``START_ALLOWANCE_S`` for the
launch, since the 1-process budget starts at its first step); past it the launcher gets SIGTERM,
the ranks stop together after a step and rank 0 saves ``last.pt``, whose history is read.
``time_to_99_s`` is the ``train_seconds`` of the first validation at or above the target.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.errors import UserError
from seq2seq.model.checkpoint import load_checkpoint

THROUGHPUT_TAG = "throughput/tgt_tokens_per_s"
WINDOWS = 8  # throughput windows per run: log_every = steps // WINDOWS
STOP_GRACE_S = 120.0  # after SIGTERM: time for the ranks to finish a step and save
START_ALLOWANCE_S = 30.0  # launcher, imports, corpus: the 1-process budget starts at step 1
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


def _run(command: list[str], limit_s: float, graceful: bool) -> tuple[int | None, str, float]:
    """Run ``command`` for at most ``limit_s``; then, if ``graceful``, ask it to stop (SIGTERM
    to the launcher, which passes it to the ranks), else kill it. Returns the exit code (None
    when it was stopped gracefully), stderr and wall seconds."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=_env()
        )
        try:
            proc.wait(timeout=limit_s)
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
        return code, err.read(), time.perf_counter() - started


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
    """Train ``steps`` updates on ``processes`` processes; tokens/s, steps and wall seconds."""
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


def _history(run_dir: Path) -> list[dict[str, Any]]:
    """Validation records: metrics.json's, else (stopped at the budget) those in last.pt."""
    metrics = run_dir / "metrics.json"
    if metrics.exists():
        return json.loads(metrics.read_text(encoding="utf-8"))["history"]
    last = run_dir / "checkpoints" / "last.pt"
    return load_checkpoint(last).state.get("history", []) if last.exists() else []


def time_to_target(
    processes: int, overrides: Sequence[str], target: float, budget_s: float, run_dir: Path
) -> dict[str, Any]:
    """Train on ``processes`` processes until valid exact match reaches ``target`` or
    ``budget_s`` of wall time passed; ``seconds`` is None when no validation reached it."""
    command = launch_command(
        processes,
        [
            *overrides,
            "train.num_threads=1",
            f"train.stop_at_exact_match={target}",
            "train.patience=0",
            f"hydra.run.dir={run_dir}",
        ],
    )
    code, stderr, wall = _run(command, budget_s + START_ALLOWANCE_S, graceful=True)
    history = _history(run_dir)
    if code not in (0, None):
        raise _failed(processes, code, stderr, command)
    reached = next((h for h in history if h["valid_exact_match"] >= target), None)
    return {
        "seconds": reached["train_seconds"] if reached else None,
        "step": reached["step"] if reached else None,
        "reached": reached is not None,
        "best_exact_match": max((h["valid_exact_match"] for h in history), default=0.0),
        "wall_seconds_used": wall,
        "budget_s": budget_s,
    }


def measure_processes(
    overrides: Sequence[str],
    steps: int,
    work_dir: Path,
    target: float | None = None,
    budget_s: float = 0.0,
) -> dict[str, Any]:
    """The ``processes`` field of bench.json: ``{"1": {...}, "2": {...}, "speedup"}``; with a
    ``target``, the 2-process time to it as well (``"2".time_to_99_s``, else null)."""
    if steps < 1:
        raise UserError(f"--ddp-steps must be at least 1, not {steps}")
    runs = {str(n): measure_throughput(n, overrides, steps, work_dir / f"ddp_{n}") for n in (1, 2)}
    to_target = None
    if target is not None:
        to_target = time_to_target(2, overrides, target, budget_s, work_dir / "ddp_2_target")
    runs["2"] |= {
        "time_to_99_s": to_target["seconds"] if to_target else None,
        "time_to_99": to_target,
    }
    speedup = runs["2"]["tokens_per_s"] / runs["1"]["tokens_per_s"]
    return {**runs, "speedup": speedup}


def format_processes(processes: dict[str, Any] | None, skipped: str | None) -> list[str]:
    """The table's lines for the ``processes`` field."""
    if processes is None:
        return [f"processes: skipped ({skipped})"]
    one, two = processes["1"], processes["2"]
    lines = [
        f"processes (DDP, {one['steps']} steps): 1 → {one['tokens_per_s']:,.0f} tok/s "
        f"({one['wall_s']:.0f} s wall), 2 → {two['tokens_per_s']:,.0f} tok/s "
        f"({two['wall_s']:.0f} s wall): {processes['speedup']:.2f}×"
    ]
    t = two["time_to_99"]
    if t is not None:
        outcome = (
            f"{t['seconds']:.1f} s of training (step {t['step']})"
            if t["reached"]
            else f"not reached, best {t['best_exact_match']:.3f}"
        )
        lines.append(
            f"time to target on 2 processes: {outcome}; {t['wall_seconds_used']:.0f} s wall"
        )
    return lines
