"""The measurements: training throughput of contestants taking turns, the machine's fp32 GEMM
rate, batched greedy/beam decoding speed, wall time to a valid exact match target with the real
training loop, and peak memory. Each times only what it names (GPU work is synchronized)."""

from __future__ import annotations

import math
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.analysis.bench.flops import BatchShape, train_flops
from seq2seq.analysis.bench.reference import TutorialTrainer
from seq2seq.config.compose import load_config
from seq2seq.evaluation.scoring import translate_dataset
from seq2seq.model import ModelSpec
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import RunLogger
from seq2seq.training.trainer import Trainer

Progress = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default progress callback: say nothing."""


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work (a no-op on the CPU), so wall-clock times are complete."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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


def trainer_contestant(name: str, trainer: Trainer) -> Contestant:
    """The real trainer: ``Trainer.train_step`` over its own bucketed sampler's batches."""
    dataset = trainer.train_set

    def step(indices: Sequence[int]) -> int:
        return trainer.train_step(list(indices))[2]

    def shape(indices: Sequence[int]) -> BatchShape:
        src = [len(dataset.src_ids[i]) for i in indices]
        tgt = [len(dataset.tgt_ids[i]) for i in indices]
        return BatchShape(len(indices), max(src), max(tgt), sum(src))

    def batches() -> Iterator[list[int]]:
        epoch = 0
        while True:
            trainer.sampler.set_epoch(epoch)
            yield from trainer.sampler.batches()
            epoch += 1

    return Contestant(name, trainer.spec, step, shape, batches())


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


def measure_gemm(device: torch.device, size: int, seconds: float) -> dict[str, float]:
    """fp32 ``size × size`` matrix products in a loop: GFLOP/s at the current thread settings."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
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
    }


def measure_decoding(trainer: Trainer, beam_size: int) -> dict[str, Any]:
    """Sentences/s of batched greedy and beam decoding of the valid split (``translate_dataset``,
    length-sorted batches of ``train.eval_batch_size``), with the trainer's current model."""
    result: dict[str, Any] = {
        "sentences": len(trainer.valid_set),
        "batch_size": trainer.cfg.train.eval_batch_size,
        "beam_size": beam_size,
    }
    for name, beam in (("greedy", 1), ("beam", beam_size)):
        synchronize(trainer.device)
        start = time.perf_counter()
        hypotheses = translate_dataset(
            trainer.model,
            trainer.valid_set,
            trainer.corpus.tgt_vocab,
            batch_size=trainer.cfg.train.eval_batch_size,
            device=trainer.device,
            beam_size=beam,
        )
        synchronize(trainer.device)
        elapsed = time.perf_counter() - start
        result[f"{name}_sentences_per_s"] = len(hypotheses) / elapsed
        result[f"{name}_seconds"] = elapsed
        result[f"{name}_mean_output_words"] = sum(map(len, hypotheses)) / max(len(hypotheses), 1)
    return result


def wall_budget(budget_s: float) -> Callable[[TrainState], bool]:
    """A stop condition for :meth:`Trainer.fit` that holds once ``budget_s`` of wall time
    passed from now (``fit`` then validates a last time, as it does whenever it ends)."""
    deadline = time.perf_counter() + budget_s
    return lambda _state: time.perf_counter() >= deadline


def time_to_target(
    overrides: Sequence[str], run_dir: Path, target: float, budget_s: float
) -> tuple[dict[str, Any], Trainer]:
    """Train the configured model with the real loop until valid exact match reaches
    ``target`` or ``budget_s`` of wall time passed; returns the result and the trainer.

    The run keeps the config's step or epoch limit, because the learning-rate schedule is
    planned over it; only early stopping on stalled BLEU is turned off. ``seconds`` is the
    trainer's ``train_seconds`` (update steps only, validation excluded) at the first
    validation that reached the target, or None if none did.
    """
    cfg = load_config([*overrides, f"train.stop_at_exact_match={target}", "train.patience=0"])
    trainer = Trainer(cfg, run_dir)
    logger = RunLogger(run_dir / "tb")
    start = time.perf_counter()
    try:
        trainer.fit(logger, should_stop=wall_budget(budget_s))
    finally:
        logger.close()
    history = trainer.state.history
    reached = next((h for h in history if h["valid_exact_match"] >= target), None)
    result = {
        "target": target,
        "seconds": reached["train_seconds"] if reached else None,
        "step": reached["step"] if reached else None,
        "reached": reached is not None,
        "best_exact_match": max((h["valid_exact_match"] for h in history), default=0.0),
        "steps_run": trainer.state.step,
        "train_seconds_used": trainer.state.train_seconds,
        "wall_seconds_used": time.perf_counter() - start,
        "budget_s": budget_s,
        "eval_every": cfg.train.eval_every,
        "attention": cfg.attention.type,
        "curve": [  # every validation: where the run stood
            {k: h[k] for k in ("step", "train_seconds", "valid_exact_match")} for h in history
        ],
    }
    return result, trainer


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
