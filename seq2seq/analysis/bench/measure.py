"""The measurements: training throughput of contestants taking turns, the machine's fp32 GEMM
rate (at the trainer's thread count and on one core), the FLOP count's cross-check, batched
greedy/beam decoding speed, wall time and FLOPs to a valid exact match target of the default
``scripts/train.py`` launch, and peak memory. Each times only what it names (GPU work is
synchronized)."""

from __future__ import annotations

import math
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.analysis.bench.flops import BatchShape, flop_counter_total, train_flops
from seq2seq.analysis.bench.processes import train_within
from seq2seq.analysis.bench.reference import TutorialTrainer
from seq2seq.choices import ModelKind, variant_name
from seq2seq.config.compose import load_config
from seq2seq.config.schema import Config
from seq2seq.data.batching import BucketBatchSampler, ParallelDataset
from seq2seq.evaluation.scoring import translate_dataset
from seq2seq.launch.processes import planned_processes
from seq2seq.model import ModelSpec
from seq2seq.model.checkpoint import load_checkpoint
from seq2seq.runtime import set_threads, synchronize
from seq2seq.training.checkpointing import BEST, LAST
from seq2seq.training.state import TrainState
from seq2seq.training.trainer import Trainer

#: The benchmark's row of the Transformer (``model=transformer``).
TRANSFORMER_ROW = ModelKind.transformer.value


def contestant_name(cfg: Config) -> str:
    """The row of the configured model: its attention, or :data:`TRANSFORMER_ROW`
    (:func:`~seq2seq.choices.variant_name`, which also names its run folder)."""
    return variant_name(cfg.model.kind, cfg.attention.type)


Progress = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default progress callback: say nothing."""


@dataclass
class Contestant:
    """Something whose training throughput is measured: a step and its batches."""

    name: str
    spec: ModelSpec
    step: Callable[[Sequence[int]], int]  # one update -> real target tokens
    shape: Callable[[Sequence[int]], BatchShape]
    batches: Iterator[list[int]]


@dataclass
class Throughput:
    """What a contestant did while the clock ran."""

    tokens: int = 0
    batches: int = 0
    seconds: float = 0.0
    flops: int = 0
    decoder_slots: int = 0  # B·T summed: target positions the decoder ran, padding included

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def record(self, tokens: int, shape: BatchShape, flops: int) -> None:
        self.tokens += tokens
        self.batches += 1
        self.flops += flops
        self.decoder_slots += shape.batch * shape.tgt_len


def batch_shape(dataset: ParallelDataset, indices: Sequence[int]) -> BatchShape:
    """The shape the trainer runs the pairs ``indices`` at (:meth:`BatchShape.of`)."""
    return BatchShape.of(
        [len(dataset.src_ids[i]) for i in indices], [len(dataset.tgt_ids[i]) for i in indices]
    )


def training_batches(sampler: BucketBatchSampler) -> Iterator[list[int]]:
    """The global batches of update steps 1, 2, ... in the order :meth:`Trainer.fit` draws
    them: every batch of epoch 0, then of epoch 1, ... (moves ``sampler``'s epoch)."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from sampler.batches()
        epoch += 1


def trainer_contestant(name: str, trainer: Trainer) -> Contestant:
    """The real trainer: ``Trainer.train_step`` over its own bucketed sampler's batches."""

    def step(indices: Sequence[int]) -> int:
        return trainer.train_step(list(indices)).tokens

    def shape(indices: Sequence[int]) -> BatchShape:
        return batch_shape(trainer.train_set, indices)

    return Contestant(name, trainer.spec, step, shape, training_batches(trainer.sampler))


def reference_contestant(reference: TutorialTrainer, seed: int) -> Contestant:
    return Contestant(
        reference.name,
        reference.spec,
        reference.train_step,
        reference.shape,
        reference.batches(seed),
    )


def _run_for(
    contestant: Contestant,
    into: Throughput,
    seconds: float,
    max_batches: int | None,
    device: torch.device,
) -> None:
    """Train ``contestant`` until ``seconds`` have passed or ``max_batches`` ran (one at least)."""
    synchronize(device)
    start = time.perf_counter()
    done = 0
    while True:
        indices = next(contestant.batches)
        shape = contestant.shape(indices)
        tokens = contestant.step(indices)
        into.record(tokens, shape, train_flops(contestant.spec, shape))
        done += 1
        synchronize(device)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds or (max_batches is not None and done >= max_batches):
            break
    into.seconds += elapsed


def measure_training(
    contestants: Sequence[Contestant],
    *,
    seconds: float,
    rounds: int,
    warmup: int,
    max_batches: int | None,
    device: torch.device,
    progress: Progress = quiet,
) -> dict[str, Throughput]:
    """Tokens/s of each contestant after ``warmup`` untimed batches.

    Each contestant gets ``seconds`` in all (and at most ``max_batches``), split into
    ``rounds`` turns taken in rotation, so slow drifts of a shared machine hit all alike.
    """
    results = {c.name: Throughput() for c in contestants}
    for contestant in contestants:
        progress(f"warming up {contestant.name}")
        for _ in range(warmup):
            contestant.step(next(contestant.batches))
    turn_batches = None if max_batches is None else max(1, math.ceil(max_batches / rounds))
    for round_index in range(rounds):
        for contestant in contestants:
            progress(f"round {round_index + 1}/{rounds}: training {contestant.name}")
            _run_for(contestant, results[contestant.name], seconds / rounds, turn_batches, device)
    return results


def check_flop_count(contestant: Contestant) -> dict[str, float]:
    """One training step of ``contestant`` (on its next batch) under PyTorch's FlopCounterMode:
    the benchmark's own count of that step, FlopCounterMode's, and their ratio (counted /
    FlopCounterMode; see :mod:`.flops` for why they need not agree exactly)."""
    indices = next(contestant.batches)
    counted = train_flops(contestant.spec, contestant.shape(indices))
    seen = flop_counter_total(lambda: contestant.step(indices))
    return {"counted": counted, "flop_counter": seen, "ratio": counted / seen if seen else 0.0}


def trainer_threads(num_threads: int) -> int:
    """The intra-op thread count ``seq2seq.runtime.set_threads`` makes of ``train.num_threads``
    (0 = auto), found by applying it and putting the previous count back."""
    before = torch.get_num_threads()
    set_threads(num_threads)
    used = torch.get_num_threads()
    torch.set_num_threads(before)
    return used


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """PyTorch's intra-op thread count set to ``count`` for the block, then put back."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measure_gemm(device: torch.device, size: int, seconds: float) -> dict[str, float]:
    """fp32 ``size × size`` matrix products in a loop: GFLOP/s at the current thread settings
    (its operands from a generator of its own: the caller's random streams are untouched)."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(device)
    b = torch.randn(size, size, generator=generator).to(device)
    out = torch.empty_like(a)
    chunk = 20 if device.type == "cuda" else 1
    for _ in range(3):
        torch.mm(a, b, out=out)
    synchronize(device)
    start, count = time.perf_counter(), 0
    while True:
        for _ in range(chunk):
            torch.mm(a, b, out=out)
        count += chunk
        synchronize(device)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    return {
        "gflops": 2 * size**3 * count / elapsed / 1e9,
        "size": size,
        "matmuls": count,
        "seconds": elapsed,
        "threads": torch.get_num_threads(),
    }


def measure_gemm_rates(
    device: torch.device, size: int, seconds: float, num_threads: int
) -> dict[str, Any]:
    """The three GEMM rates bench.json holds (see the package docstring), each measured once:

    - ``gemm_gflops``: on ``device`` at the thread settings in force (the Trainers' own, since
      building one calls ``set_threads``), with its details in ``gemm``;
    - ``gemm_gflops_at_threads``: on ``device`` at ``gemm_threads``, the count the trainer
      uses for ``train.num_threads = num_threads`` (the same measurement when that is the
      count in force);
    - ``gemm_gflops_per_core``: on the CPU with one thread, the machine-normalising rate.
    """
    gemm = measure_gemm(device, size, seconds)
    used = trainer_threads(num_threads)
    at_threads = gemm
    if used != gemm["threads"]:
        with torch_threads(used):
            at_threads = measure_gemm(device, size, seconds)
    per_core = at_threads
    if device.type != "cpu" or used != 1:
        with torch_threads(1):
            per_core = measure_gemm(torch.device("cpu"), size, seconds)
    return {
        "gemm_gflops": gemm["gflops"],
        "gemm_gflops_at_threads": at_threads["gflops"],
        "gemm_gflops_per_core": per_core["gflops"],
        "gemm_threads": used,
        "gemm": gemm,
    }


def measure_decoding(trainer: Trainer, beam_size: int) -> dict[str, Any]:
    """Sentences/s of batched greedy and beam decoding of the valid split (``translate_dataset``,
    length-sorted batches of ``train.eval_batch_size``), with the trainer's current model."""
    result: dict[str, Any] = {
        "sentences": len(trainer.valid_set),
        "batch_size": trainer.train.eval_batch_size,
        "beam_size": beam_size,
    }
    for name, beam in (("greedy", 1), ("beam", beam_size)):
        synchronize(trainer.device)
        start = time.perf_counter()
        hypotheses = translate_dataset(
            trainer.model,
            trainer.valid_set,
            trainer.corpus.tgt_vocab,
            batch_size=trainer.train.eval_batch_size,
            device=trainer.device,
            beam_size=beam,
        )
        synchronize(trainer.device)
        elapsed = time.perf_counter() - start
        result[f"{name}_sentences_per_s"] = len(hypotheses) / elapsed
        result[f"{name}_seconds"] = elapsed
        result[f"{name}_mean_output_words"] = sum(map(len, hypotheses)) / max(len(hypotheses), 1)
    return result


def training_flops(trainer: Trainer, steps: int) -> list[int]:
    """Training FLOPs (:func:`.flops.train_flops` of each global batch's shape) spent by
    update steps 1..s, for s = 1..``steps``: entry ``s - 1``. The batches are those
    :meth:`Trainer.fit` draws from ``trainer.sampler``, epoch by epoch (the order depends only
    on the seed and the corpus, and is the same on 1 or N processes), so no step needs to run.
    Under DDP each process pads its share of a batch to its own longest pair, so the count is
    of the global batch as one process runs it."""
    totals: list[int] = []
    batches = training_batches(trainer.sampler)
    for _ in range(steps):
        shape = batch_shape(trainer.train_set, next(batches))
        totals.append((totals[-1] if totals else 0) + train_flops(trainer.spec, shape))
    return totals


def time_to_target(
    overrides: Sequence[str], work_dir: Path, target: float, budget_s: float
) -> tuple[dict[str, Any], Trainer]:
    """Train the configured run as ``python scripts/train.py`` does by default (its
    ``train.processes``; see :func:`.processes.train_within`) until valid exact match reaches
    ``target`` or the wall budget is spent; returns the result and a Trainer of the same
    config in this process, never trained, holding the run's ``best.pt`` weights (else
    ``last.pt``'s; the initial ones if it saved neither; ``model`` in the result says which).

    Only early stopping on stalled BLEU is turned off (``train.patience=0``); the step or epoch
    limit is kept, because the learning-rate schedule is planned over it. ``seconds`` is rank
    0's ``train_seconds`` (update steps only, validation excluded) at the first validation
    that reached the target, or None if none did; ``flops`` is the training FLOPs (the
    benchmark's count, :func:`training_flops`) of the update steps until then, or None, and
    ``flops_spent`` those of every step the run took.
    """
    run_overrides = [*overrides, f"train.stop_at_exact_match={target}", "train.patience=0"]
    cfg = load_config(run_overrides)
    planned = planned_processes(cfg, multirun=False)
    run = train_within(run_overrides, budget_s, work_dir / "run", planned)
    trainer = Trainer(cfg, work_dir / "count")
    totals = training_flops(trainer, run.steps)
    model = load_trained_weights(trainer, work_dir / "run" / "checkpoints")
    reached = next((h for h in run.history if h.valid_exact_match >= target), None)
    result = {
        "target": target,
        "seconds": reached.train_seconds if reached else None,
        "step": reached.step if reached else None,
        "flops": totals[reached.step - 1] if reached else None,
        "flops_spent": totals[-1] if totals else 0,
        "reached": reached is not None,
        "best_exact_match": max((h.valid_exact_match for h in run.history), default=0.0),
        "steps_run": run.steps,
        "train_seconds_used": run.train_seconds,
        "wall_seconds_used": run.wall_seconds,
        "budget_s": budget_s,
        "wall_limit_s": run.wall_limit_s,
        "stopped_by_budget": run.stopped_by_budget,
        "eval_every": cfg.train.eval_every,
        "attention": contestant_name(cfg),
        "train_processes": str(cfg.train.processes),
        "processes": run.processes,
        "read_from": run.source,
        "command": run.command,
        "model": model,
        "curve": [  # every validation: where the run stood
            {
                "step": h.step,
                "train_seconds": h.train_seconds,
                "flops": totals[h.step - 1] if h.step else 0,
                "valid_exact_match": h.valid_exact_match,
            }
            for h in run.history
        ],
    }
    return result, trainer


def load_trained_weights(trainer: Trainer, checkpoints: Path) -> dict[str, Any]:
    """Put the weights of ``checkpoints/best.pt`` (else ``last.pt``) into ``trainer.model``;
    returns which checkpoint, its step and that step's valid exact match (``checkpoint`` None:
    neither file, the model keeps its initial weights)."""
    for name in (BEST, LAST):
        if (checkpoints / name).exists():
            saved = load_checkpoint(checkpoints / name, trainer.device)
            trainer.model.load_state_dict(saved.model)
            state = TrainState.from_dict(saved.state)
            record = next((h for h in state.history if h.step == state.step), None)
            return {
                "checkpoint": name,
                "step": state.step,
                "valid_exact_match": record.valid_exact_match if record else None,
            }
    return {"checkpoint": None, "step": 0, "valid_exact_match": None}


def peak_memory(device: torch.device) -> dict[str, Any]:
    """Peak memory in MiB: the process' max resident set size, and on CUDA the allocator's peak."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mib = rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes vs KiB
    if device.type == "cuda":
        return {
            "peak_memory_mb": torch.cuda.max_memory_allocated(device) / 2**20,
            "peak_memory_source": "torch.cuda.max_memory_allocated",
            "peak_rss_mb": rss_mib,
        }
    return {"peak_memory_mb": rss_mib, "peak_memory_source": "ru_maxrss", "peak_rss_mb": rss_mib}
