"""Benchmark the trainer: ``python scripts/bench.py [overrides...] [--tiny] [--out bench.json]``.

Takes the same Hydra-style overrides as training (``device=cuda train.batch_size=128``),
prints a table and writes bench.json; see seq2seq.analysis.bench for what is measured and how.
``--profile [--batch-sizes 64,256]`` measures instead where an update's time goes on its
device (seq2seq.analysis.bench.profile), into profile.json unless ``--out`` says otherwise.
``--explorer RUN [--sentence TEXT]`` times instead the attention explorer's answer to a
sentence (seq2seq.analysis.bench.explorer), into explorer.json.
``--record results/bench.json`` also keeps the benchmark's result as the record
docs/performance.md's benchmark tables are rendered from, with this command, its wall time
and this machine (``--explorer``: ``results/explorer.json``, docs/explorer.md's).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from seq2seq.analysis.bench import BenchOptions, format_table, run_benchmark, save_result
from seq2seq.analysis.bench.record import EXPLORER_KEY, check_results_file, record_bench
from seq2seq.errors import UserError, exit_on_user_error


def batch_sizes(text: str) -> list[int]:
    """``64,256`` -> [64, 256]; anything else is refused in one line."""
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of batch sizes such as 64,256")
    return sizes


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. model.hidden_size=256")
    parser.add_argument("--tiny", action="store_true", help="tiny model, corpus and budgets")
    parser.add_argument(
        "--out", type=Path, help="JSON output file (bench.json; profile.json with --profile)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="only profile updates: wall time against device busy time, operators and kernels "
        "per update, of the configured model on both model.recurrence paths",
    )
    parser.add_argument(
        "--batch-sizes",
        type=batch_sizes,
        default=[],
        help="--profile at these batch sizes, e.g. 64,256 (the configured train.batch_size)",
    )
    parser.add_argument(
        "--explorer",
        metavar="RUN",
        type=Path,
        action="append",
        default=[],
        help="only time the attention explorer's answers with this finished run (twice: two runs "
        "side by side) on its test sentences and each --sentence",
    )
    parser.add_argument(
        "--sentence",
        action="append",
        default=[],
        help="with --explorer: a typed sentence to time too, e.g. '我 爱 中国'",
    )
    parser.add_argument(
        "--record",
        metavar="RESULTS_JSON",
        type=Path,
        help="also keep the result as a results file (results/bench.json: docs/performance.md's "
        "benchmark tables are rendered from it), with this command, its wall time and this "
        "machine",
    )
    parser.add_argument(
        "--beside",
        default=None,
        help="with --record: what else ran on the machine meanwhile (default: nothing else)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        help=f"measured training seconds per variant ({BenchOptions.seconds:g}; tiny 1)",
    )
    parser.add_argument("--rounds", type=int, help="turns the variants take in rotation (3)")
    parser.add_argument("--warmup", type=int, help="untimed batches per variant first (3)")
    parser.add_argument("--max-batches", type=int, help="measured batches per variant at most")
    parser.add_argument(
        "--time-budget",
        type=float,
        help="wall seconds for the time-to-99%% run of scripts/train.py, from its first "
        f"step ({BenchOptions.time_budget:g}; tiny 60)",
    )
    parser.add_argument("--target", type=float, help="valid exact match to reach (0.99)")
    parser.add_argument("--beam-size", type=int, help="beam size of the decoding benchmark (5)")
    parser.add_argument(
        "--ddp-steps",
        type=int,
        help="training steps of the 1- vs 2-process (DDP) comparison (64; tiny 8)",
    )
    return parser.parse_intermixed_args(argv)  # overrides before and after the options


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.record is not None:
        check_results_file(args.record)  # before minutes of measuring, not after
    options = BenchOptions.create(
        args.overrides,
        args.tiny,
        seconds=args.seconds,
        rounds=args.rounds,
        warmup=args.warmup,
        max_batches=args.max_batches,
        time_budget=args.time_budget,
        target=args.target,
        beam_size=args.beam_size,
        ddp_steps=args.ddp_steps,
    )
    # What the in-process trainers log (e.g. generating the corpus); the training
    # subprocesses keep their own logs in their run folders.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[train] %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger("seq2seq").setLevel(logging.INFO)
    if args.explorer:
        from seq2seq.analysis.bench.explorer import format_explorer, time_explorer
        from seq2seq.evaluation.run_files import finished_run_metrics

        if len(args.explorer) > 2:
            raise UserError(f"{len(args.explorer)} --explorer runs; the page shows one or two")
        for run in args.explorer:  # a wrong folder: one line, before the runs load
            finished_run_metrics(run, "best.pt")
        out = args.out or Path("explorer.json")
        result = time_explorer(args.explorer, args.sentence, progress=progress)
        save_result(result, out)
        print(format_explorer(result))
        print(f"wrote {out}", file=sys.stderr)
        if args.record is not None:
            record_bench(args.record, result, argv, args.beside, EXPLORER_KEY)
            print(f"recorded {args.record}", file=sys.stderr)
        return
    if args.profile:
        from seq2seq.analysis.bench.profile import format_profile, run_profile

        out = args.out or Path("profile.json")
        result = run_profile(args.overrides, args.batch_sizes, tiny=args.tiny, progress=progress)
        save_result(result, out)
        print(format_profile(result))
        first = next(iter(result["tables"]))
        print(f"\noperators of {first}, by host time:\n{result['tables'][first]}")
        print(f"wrote {out}", file=sys.stderr)
        return
    out = args.out or Path("bench.json")
    result = run_benchmark(options, progress)
    save_result(result, out)
    print(format_table(result))
    print(f"wrote {out}", file=sys.stderr)
    if args.record is not None:
        record_bench(args.record, result, argv, args.beside)
        print(f"recorded {args.record}", file=sys.stderr)


if __name__ == "__main__":
    main()
