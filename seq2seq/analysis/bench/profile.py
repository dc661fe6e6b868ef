"""Where a training step's time goes on its device (``python scripts/bench.py --profile``):
the wall time of an update against the time its kernels keep the device busy, and how many
operators and kernels one update dispatches (PyTorch's ``torch.profiler``).

An update is *launch-bound* when its kernels fill a small share of its wall time: the device
waits for the Python loop and the kernel launches, so a faster device changes nothing and a
larger batch costs almost no time per update. The teacher-forced Bahdanau recurrence is such
a loop (a handful of small products per target position), which is why each row is measured on
both ``model.recurrence`` paths and at each batch size asked for.

Per row (:func:`profile_row`), after ``warmup`` untimed updates:

- ``wall_ms_per_step`` and ``tokens_per_s``: ``steps`` updates timed without the profiler,
  the device synchronized before and after (the profiler's own bookkeeping slows the host);
- ``ops_per_step``: the ``aten::`` operators the profiler saw per update (nested calls too);
- ``kernels_per_step``, ``kernel_ms_per_step``: the device activities (kernels, copies) per
  update and their summed device time, from ``profiled_steps`` more updates under the
  profiler; ``busy_share`` = ``kernel_ms_per_step / wall_ms_per_step``. None on the CPU, where
  the operators are the work.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from seq2seq.analysis.bench.machine import machine_info
from seq2seq.analysis.bench.measure import (
    Contestant,
    contestant_name,
    quiet,
    trainer_contestant,
)
from seq2seq.analysis.bench.run import tiny_overrides
from seq2seq.choices import DecoderArrangement, ModelKind, Recurrence
from seq2seq.config.compose import load_config
from seq2seq.runtime import synchronize
from seq2seq.training.trainer import Trainer

#: The device activities a step's busy time is summed over (kernels, copies, fills).
DEVICE_TYPES = (DeviceType.CUDA,)


@dataclass(frozen=True)
class StepProfile:
    """One row of the profile: a model at a batch size on one recurrence (see the module)."""

    name: str
    batch_size: int
    steps: int
    wall_ms_per_step: float
    tokens_per_s: float
    ops_per_step: float
    kernels_per_step: float | None
    kernel_ms_per_step: float | None
    busy_share: float | None


def profile_row(
    name: str,
    contestant: Contestant,
    batch_size: int,
    device: torch.device,
    *,
    steps: int,
    profiled_steps: int,
    warmup: int,
) -> tuple[StepProfile, str]:
    """The :class:`StepProfile` of ``contestant``'s updates, and the profiler's table of the
    operators that took the most host time (for the reader who wants the names)."""
    for _ in range(warmup):
        contestant.step(next(contestant.batches))
    synchronize(device)
    start, tokens = time.perf_counter(), 0
    for _ in range(steps):
        tokens += contestant.step(next(contestant.batches))
    synchronize(device)
    wall = time.perf_counter() - start
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as profiler:
        for _ in range(profiled_steps):
            contestant.step(next(contestant.batches))
        synchronize(device)
    events = profiler.events()
    ops = sum(1 for e in events if e.device_type == DeviceType.CPU and e.name.startswith("aten::"))
    on_device = [e for e in events if e.device_type in DEVICE_TYPES]
    wall_ms = 1e3 * wall / steps
    kernels = kernel_ms = busy = None
    if device.type == "cuda":
        kernels = len(on_device) / profiled_steps
        kernel_ms = sum(e.time_range.elapsed_us() for e in on_device) / 1e3 / profiled_steps
        busy = kernel_ms / wall_ms
    row = StepProfile(
        name=name,
        batch_size=batch_size,
        steps=steps,
        wall_ms_per_step=wall_ms,
        tokens_per_s=tokens / wall,
        ops_per_step=ops / profiled_steps,
        kernels_per_step=kernels,
        kernel_ms_per_step=kernel_ms,
        busy_share=busy,
    )
    table = profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return row, table


def profile_overrides(overrides: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The rows' names and overrides: the configured model, and for a Bahdanau decoder with
    attention weights the same model on the other ``model.recurrence`` too."""
    cfg = load_config(list(overrides))
    name = contestant_name(cfg)
    rows = [(f"{name} ({cfg.model.recurrence})", [])]
    bahdanau = cfg.model.decoder == DecoderArrangement.bahdanau
    if cfg.model.kind == ModelKind.rnn and bahdanau and cfg.attention.type != "none":
        other = next(r for r in Recurrence if r != cfg.model.recurrence)
        rows.append((f"{name} ({other})", [f"model.recurrence={other}"]))
    return rows


#: Updates per row: untimed, timed, and under the profiler (a few: the profiler's events of a
#: launch-bound update number in the thousands, and reading them takes seconds); ``--tiny``'s
#: are fewer.
STEPS = {"warmup": 3, "steps": 10, "profiled_steps": 2}
TINY_STEPS = {"warmup": 1, "steps": 3, "profiled_steps": 2}


def run_profile(
    overrides: Sequence[str],
    batch_sizes: Sequence[int],
    *,
    tiny: bool = False,
    progress: Callable[[str], None] = quiet,
) -> dict[str, Any]:
    """Every row of :func:`profile_overrides` at every batch size (the configured one when
    none is given): what ``--profile`` writes (``rows``, ``tables``: each row's operator
    table, ``machine``, ``overrides``). ``tiny``: the benchmark's tiny model and corpus
    (:func:`.run.tiny_overrides`) and :data:`TINY_STEPS`."""
    rows: list[dict[str, Any]] = []
    tables: dict[str, str] = {}
    device = torch.device("cpu")
    counts = TINY_STEPS if tiny else STEPS
    with tempfile.TemporaryDirectory(prefix="seq2seq-profile-") as tmp_name:
        tmp = Path(tmp_name)
        overrides = tiny_overrides(overrides, tmp / "corpus") if tiny else list(overrides)
        sizes = list(batch_sizes) or [load_config(overrides).train.batch_size]
        for index, (name, extra) in enumerate(profile_overrides(overrides)):
            for batch_size in sizes:
                progress(f"profiling {name} at batch {batch_size}")
                config = load_config([*overrides, *extra, f"train.batch_size={batch_size}"])
                trainer = Trainer(config, tmp / f"run_{index}_{batch_size}")
                device = trainer.device
                row, table = profile_row(
                    name, trainer_contestant(name, trainer), batch_size, device, **counts
                )
                rows.append(asdict(row))
                tables[f"{name} batch {batch_size}"] = table
                del trainer
    return {
        "machine": machine_info(device),
        "overrides": list(overrides),
        "rows": rows,
        "tables": tables,
    }


def format_profile(result: dict[str, Any]) -> str:
    """The printed table of a :func:`run_profile` result."""

    def number(value: float | None, form: str) -> str:
        return "n/a" if value is None else format(value, form)

    m = result["machine"]
    lines = [
        f"seq2seq step profile — {m['device']}{' (' + m['gpu'] + ')' if m['gpu'] else ''}, "
        f"torch {m['torch']}",
        "",
        f"{'row':<24}{'batch':>6}{'ms/step':>9}{'tok/s':>10}{'ops':>7}{'kernels':>9}"
        f"{'kernel ms':>11}{'busy':>7}",
    ]
    for r in result["rows"]:
        busy = r["busy_share"]
        lines.append(
            f"{r['name']:<24}{r['batch_size']:>6}{r['wall_ms_per_step']:>9.2f}"
            f"{r['tokens_per_s']:>10,.0f}{r['ops_per_step']:>7.0f}"
            f"{number(r['kernels_per_step'], '.0f'):>9}"
            f"{number(r['kernel_ms_per_step'], '.2f'):>11}"
            f"{'n/a' if busy is None else format(100 * busy, '.0f') + '%':>7}"
        )
    return "\n".join(lines)
