"""The whole benchmark: options, which trainers to measure, running every measurement (in this
process, and the training runs as ``scripts/train.py`` subprocesses), assembling bench.json,
and the printed table."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from seq2seq.analysis.bench.machine import load_average, machine_info
from seq2seq.analysis.bench.measure import (
    TRANSFORMER_ROW,
    Progress,
    Throughput,
    check_flop_count,
    contestant_name,
    measure_decoding,
    measure_gemm_rates,
    measure_training,
    peak_memory,
    quiet,
    reference_contestant,
    time_to_target,
    trainer_contestant,
)
from seq2seq.analysis.bench.processes import (
    format_processes,
    measure_processes,
    unavailable,
)
from seq2seq.analysis.bench.reference import TutorialSeq2Seq, TutorialTrainer
from seq2seq.choices import DECODER_TYPES, DecoderArrangement, ModelKind, Recurrence
from seq2seq.config.compose import load_config
from seq2seq.config.schema import Config
from seq2seq.files import write_json
from seq2seq.launch.processes import planned_processes
from seq2seq.model.attention import ATTENTION_TYPES, has_weights
from seq2seq.training.trainer import Trainer


@dataclass(frozen=True)
class BenchOptions:
    """What to run; :meth:`create` fills in the full or ``--tiny`` defaults."""

    overrides: tuple[str, ...] = ()
    tiny: bool = False
    seconds: float = 14.0  # measured training time per contestant
    rounds: int = 3
    warmup: int = 3
    max_batches: int | None = None
    gemm_size: int = 1024
    gemm_seconds: float = 3.0
    beam_size: int = 5
    target: float = 0.99
    time_budget: float = 300.0
    variants: tuple[str, ...] = tuple(ATTENTION_TYPES)
    other_decoder: bool = True  # also measure each variant in the other decoder arrangement
    other_recurrence: bool = True  # and each Bahdanau row with weights on the other recurrence
    transformer: bool = True  # and the Transformer (model=transformer)
    ddp_steps: int = 64  # training steps of the 1- and 2-process runs (~65 s for both)

    @classmethod
    def create(
        cls, overrides: Sequence[str] = (), tiny: bool = False, **given: Any
    ) -> BenchOptions:
        """Options with ``given`` values (None = default for the mode) on top of the defaults."""
        defaults: dict[str, Any] = {}
        if tiny:
            defaults = {
                "seconds": 1.0,
                "rounds": 1,
                "warmup": 1,
                "max_batches": 4,
                "gemm_size": 256,
                "gemm_seconds": 0.2,
                "target": 0.0,
                "time_budget": 60.0,  # a cap: the target 0 stops the run at its first validation
                "ddp_steps": 8,
            }
        chosen = {k: v for k, v in given.items() if v is not None}
        return cls(overrides=tuple(overrides), tiny=tiny, **(defaults | chosen))


def tiny_overrides(user: Sequence[str], corpus_dir: Path) -> list[str]:
    """A tiny model, batches, one training process (unless the user chose
    ``train.processes``) and (unless the user chose data) a tiny synthetic corpus written
    into ``corpus_dir``; the user's overrides come after, so they win."""
    small = [
        "model.embed_size=16",
        "model.hidden_size=16",
        "train.batch_size=16",
        "train.eval_batch_size=64",
        "train.eval_every=5",
        "train.log_every=5",
    ]
    if not any(o.lstrip("+~").startswith("train.processes") for o in user):
        small.append("train.processes=1")  # a launcher and N workers would dwarf tiny training
    if not any(o.lstrip("+~").startswith("data") for o in user):
        small += [
            f"data.dir={corpus_dir}",
            "data.train_size=200",
            "data.valid_size=24",
            "data.test_size=24",
            "data.max_len=10",
            "data.samples=[]",
        ]
    return [*small, *user]


def contestant_overrides(options: BenchOptions, cfg: Config) -> list[tuple[str, list[str]]]:
    """Name and extra overrides of every trainer measured: each variant in the configured
    decoder arrangement (named after the attention), then, with ``other_decoder``, each
    attention variant in the other arrangement (e.g. ``additive/luong``), then, with
    ``other_recurrence``, each of those rows that runs the Bahdanau recurrence with attention
    weights on the other ``model.recurrence`` (``additive (textbook)``: the same model, so the
    two rows say which path is faster on this device), then the Transformer
    (``transformer``, with ``model=transformer``'s sizes)."""
    if cfg.model.kind == ModelKind.transformer:  # model=transformer: that row alone
        return [(TRANSFORMER_ROW, [])]
    configured = cfg.model.decoder
    # (row, attention, arrangement, overrides)
    rows = [(name, name, configured, [f"attention={name}"]) for name in options.variants]
    if options.other_decoder:
        other = next(d for d in DECODER_TYPES if d != configured)
        rows += [
            (f"{name}/{other}", name, other, [f"attention={name}", f"model.decoder={other}"])
            for name in options.variants
            if has_weights(name)  # no attention, no arrangement: the same model
        ]
    if options.other_recurrence:
        recurrence = next(r for r in Recurrence if r != cfg.model.recurrence)
        rows += [
            (f"{row} ({recurrence})", name, decoder, [*extra, f"model.recurrence={recurrence}"])
            for row, name, decoder, extra in list(rows)
            if decoder == DecoderArrangement.bahdanau and has_weights(name)
        ]
    runs = [(row, extra) for row, _, _, extra in rows]
    if options.transformer:
        runs.append((TRANSFORMER_ROW, ["model=transformer"]))
    return runs


def _entry(throughput: Throughput, gemm_gflops: float) -> dict[str, Any]:
    return {
        "tokens_per_s": throughput.tokens_per_s,
        "tokens": throughput.tokens,
        "batches": throughput.batches,
        "seconds": throughput.seconds,
        "achieved_gflops": throughput.gflops,
        "fraction_of_peak": throughput.gflops / gemm_gflops,
        "target_padding_share": 1 - throughput.tokens / max(throughput.decoder_slots, 1),
    }


def run_benchmark(options: BenchOptions, progress: Progress = quiet) -> dict[str, Any]:
    """Run every measurement of the module docstring; returns what bench.json holds."""
    with tempfile.TemporaryDirectory(prefix="seq2seq-bench-") as tmp_name:
        tmp = Path(tmp_name)
        load_at_start = load_average()
        started = time.perf_counter()
        overrides = list(options.overrides)
        if options.tiny:
            overrides = tiny_overrides(overrides, tmp / "corpus")
        cfg = load_config(overrides)
        progress("building trainers")
        trainers = {
            name: Trainer(load_config([*overrides, *extra]), tmp / f"run_{index}")
            for index, (name, extra) in enumerate(contestant_overrides(options, cfg))
        }
        first = next(iter(trainers.values()))
        device = first.device
        reference = TutorialTrainer(
            replace(first.spec, attention="additive", num_heads=1, decoder="bahdanau"),
            first.train_set,
            cfg.train,
            device,
        )
        progress(f"measuring fp32 GEMM ({options.gemm_size}³)")
        gemm = measure_gemm_rates(
            device, options.gemm_size, options.gemm_seconds, cfg.train.num_threads
        )
        contestants = [trainer_contestant(n, t) for n, t in trainers.items()]
        contestants.append(reference_contestant(reference, cfg.seed))
        progress("cross-checking the FLOP count with FlopCounterMode (one step each)")
        flop_check = {c.name: check_flop_count(c) for c in contestants}
        throughput = measure_training(
            contestants,
            seconds=options.seconds,
            rounds=options.rounds,
            warmup=options.warmup,
            max_batches=options.max_batches,
            device=device,
            progress=progress,
        )
        del trainers, contestants, reference
        processes, skipped = _processes(options, overrides, device, tmp, progress)
        progress(
            f"training {contestant_name(cfg)} to {options.target:.0%} valid exact match with "
            f"scripts/train.py on {planned_processes(cfg, multirun=False)} process(es) "
            f"(train.processes={cfg.train.processes}; budget {options.time_budget:.0f} s)"
        )
        to_target, trained = time_to_target(
            overrides, tmp / "time_to_target", options.target, options.time_budget
        )
        progress(f"decoding the valid split (greedy, beam {options.beam_size})")
        decoding = measure_decoding(trained, options.beam_size)
        decoding["model_exact_match"] = to_target["model"]["valid_exact_match"]
    result = _assemble(options, cfg, device, gemm, throughput, decoding, to_target)
    result["flop_count_check"] = flop_check
    result["processes"], result["processes_skipped"] = processes, skipped
    result["machine"]["load_average_at_start"] = load_at_start
    result["bench_wall_seconds"] = time.perf_counter() - started
    return result


def _processes(
    options: BenchOptions,
    overrides: Sequence[str],
    device: torch.device,
    tmp: Path,
    progress: Progress,
) -> tuple[dict[str, Any] | None, str | None]:
    """The 1- vs 2-process measurement (:mod:`.processes`), or None and why it was skipped."""
    reason = unavailable(device)
    if reason is not None:
        progress(f"skipping the 1- vs 2-process measurement: {reason}")
        return None, reason
    progress(f"training {options.ddp_steps} steps on 1 and on 2 processes (torch.distributed.run)")
    return measure_processes(overrides, options.ddp_steps, tmp / "processes"), None


def _assemble(
    options: BenchOptions,
    cfg: Config,
    device: torch.device,
    gemm: dict[str, Any],
    throughput: dict[str, Throughput],
    decoding: dict[str, Any],
    to_target: dict[str, Any],
) -> dict[str, Any]:
    peak = gemm["gemm_gflops_at_threads"]  # the rate the trainer's thread count can reach
    seconds = to_target["seconds"]
    reference = throughput[TutorialTrainer.name].tokens_per_s
    training = {
        name: _entry(t, peak) | {"speedup_vs_reference": t.tokens_per_s / reference}
        for name, t in throughput.items()
        if name != TutorialTrainer.name
    }
    main = training.get(contestant_name(cfg)) or next(iter(training.values()))
    return {
        "machine": machine_info(device),
        "config": {
            "overrides": list(options.overrides),
            "options": {k: v for k, v in asdict(options).items() if k != "overrides"},
            "attention": contestant_name(cfg),
            "batch_size": cfg.train.batch_size,
            "embed_size": cfg.model.embed_size,
            "hidden_size": cfg.model.hidden_size,
            "decoder": cfg.model.decoder,
            "recurrence": cfg.model.recurrence,
            "lr_schedule": cfg.train.lr_schedule,
            "data": cfg.data.name,
        },
        "training": training,
        "reference": {"model": TutorialSeq2Seq.__name__, "attention": "additive"}
        | _entry(throughput[TutorialTrainer.name], peak),
        "speedup_vs_reference": {n: e["speedup_vs_reference"] for n, e in training.items()},
        **gemm,
        "achieved_gflops": main["achieved_gflops"],
        "fraction_of_peak": main["fraction_of_peak"],
        "decoding": decoding,
        "time_to_99_s": seconds,
        "time_to_99_gflop": None if seconds is None else seconds * gemm["gemm_gflops_per_core"],
        "flops_to_99": to_target["flops"],
        "flops_spent": to_target["flops_spent"],
        "time_to_99": to_target,
        **peak_memory(device),
    }


def format_table(result: dict[str, Any]) -> str:
    """The printed summary of a :func:`run_benchmark` result."""
    m, c = result["machine"], result["config"]
    lines = [
        f"seq2seq benchmark — {m['device']}{' (' + m['gpu'] + ')' if m['gpu'] else ''}, "
        f"{m['cpu']}, {m['torch_threads']} threads, torch {m['torch']}, load average "
        f"{m.get('load_average_at_start')} -> {m['load_average']}",
        f"config: data={c['data']} batch={c['batch_size']} embed={c['embed_size']} "
        f"hidden={c['hidden_size']} decoder={c['decoder']} "
        f"overrides={' '.join(c['overrides']) or '(none)'}",
    ]
    rows = [
        *result["training"].items(),
        (f"{TutorialTrainer.name} (tutorial)", result["reference"]),
    ]
    width = max(22, *(len(name) + 2 for name, _ in rows))
    lines += [
        "",
        f"{'training':<{width}}{'tok/s':>10}{'batches':>9}{'seconds':>9}{'GFLOP/s':>9}"
        f"{'%peak':>7}{'pad':>6}{'× ref':>7}",
    ]
    for name, e in rows:
        speedup = e.get("speedup_vs_reference", 1.0)
        lines.append(
            f"{name:<{width}}{e['tokens_per_s']:>10,.0f}{e['batches']:>9}{e['seconds']:>9.1f}"
            f"{e['achieved_gflops']:>9.2f}{100 * e['fraction_of_peak']:>6.1f}%"
            f"{100 * e['target_padding_share']:>5.0f}%{speedup:>6.2f}×"
        )
    g, d, t = result["gemm"], result["decoding"], result["time_to_99"]
    lines += [
        "",
        f"fp32 GEMM {g['size']}×{g['size']}: {result['gemm_gflops_at_threads']:.1f} GFLOP/s at "
        f"the trainer's {result['gemm_threads']} thread(s), "
        f"{result['gemm_gflops_per_core']:.1f} on one core; trainer ({c['attention']}) reaches "
        f"{result['achieved_gflops']:.2f} GFLOP/s = {100 * result['fraction_of_peak']:.1f}% "
        "of the former",
        "FLOP count / FlopCounterMode, one step: "
        + ", ".join(f"{n} {e['ratio']:.2f}" for n, e in result["flop_count_check"].items()),
        f"decoding {d['sentences']} valid sentences (batch {d['batch_size']}): greedy "
        f"{d['greedy_sentences_per_s']:,.1f} sent/s, beam {d['beam_size']} "
        f"{d['beam_sentences_per_s']:,.1f} sent/s ({_decoded_model(t['model'])})",
    ]
    lines.append(format_time_to_target(t, result["time_to_99_gflop"]))
    lines += format_processes(result["processes"], result["processes_skipped"])
    lines.append(
        f"peak memory: {result['peak_memory_mb']:,.0f} MiB ({result['peak_memory_source']}); "
        f"benchmark wall time {result['bench_wall_seconds']:.0f} s"
    )
    return "\n".join(lines)


def format_time_to_target(t: dict[str, Any], normalised_gflop: float | None) -> str:
    """The table's line for the ``time_to_99`` field (``normalised_gflop``: time_to_99_gflop)."""
    runs = f"{t['attention']}, {t['processes']} process{'es' if t['processes'] != 1 else ''}"
    head = f"time to {t['target']:.0%} valid exact match ({runs})"
    wall = f"{t['wall_seconds_used']:.0f} s wall (budget {t['budget_s']:.0f} s from the first step)"
    if not t["reached"] or normalised_gflop is None:
        return (
            f"{head}: not reached; {t['train_seconds_used']:.1f} s of training "
            f"({t['steps_run']} steps, {_gflop(t['flops_spent'])} GFLOP by the benchmark's "
            f"count), best {t['best_exact_match']:.3f}; {wall}"
        )
    return (
        f"{head}: {t['seconds']:.1f} s of training (step {t['step']}, "
        f"{_gflop(t['flops'])} GFLOP by the benchmark's count); {wall}; "
        f"× one core's GEMM rate = {_gflop(normalised_gflop * 1e9)} GFLOP"
    )


def _decoded_model(model: dict[str, Any]) -> str:
    """Which weights the decoding measurement ran (``time_to_99.model``)."""
    if model["checkpoint"] is None:
        return "initial weights: the run saved no checkpoint"
    matched = model["valid_exact_match"]
    return f"the run's {model['checkpoint']} of step {model['step']}" + (
        "" if matched is None else f", valid exact match {matched:.3f}"
    )


def _gflop(flops: float) -> str:
    """``flops`` in GFLOP: to the unit (11,600) from 100 up, else to 3 digits (tiny runs)."""
    gflop = flops / 1e9
    return f"{gflop:,.0f}" if gflop >= 100 else f"{gflop:.3g}"


def save_result(result: dict[str, Any], path: Path) -> None:
    """Write ``result`` as indented JSON (atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)
