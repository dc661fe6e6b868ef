"""Compare finished runs: ``python scripts/compare.py multirun/<time> [--out DIR]``.

Writes comparison.md (also printed), comparison.csv, comparison.json, the figures
(bleu_by_length.png, aer.png, valid_loss.png; explain_aer.png and interventions.png from the runs
``evaluate.py --explain`` put to the test) and tb/ into the sweep folder, or into --out (see
seq2seq.analysis.compare).
The scores compared are training's own test scores of each run; run folders whose training did
not finish are left out, with one warning naming them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seq2seq.errors import UserError, exit_on_user_error


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(
            "Compare attention variants over seeds: tables (markdown, CSV, JSON), figures "
            "and TensorBoard summaries of finished runs."
        )
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="SWEEP_OR_RUN_DIR",
        help="sweep folders (searched recursively for run folders with metrics.json) "
        "and/or run folders",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="output folder; required unless exactly one sweep folder is given "
        "(the outputs then go into it)",
    )
    parser.add_argument(
        "--record",
        metavar="RESULTS_JSON",
        type=Path,
        help="also keep the comparison as a results file (results/compare.json: README's and "
        "docs' tables and figures are rendered from it), with the sweep's command, wall time "
        "and this machine; give the one sweep folder Hydra made",
    )
    parser.add_argument(
        "--beside",
        default=None,
        help="with --record: what else ran on the machine during the sweep (default: nothing else)",
    )
    parser.add_argument(
        "--allow-mixed-data",
        action="store_true",
        help="compare runs trained on different datasets (a warning instead of an error)",
    )
    return parser.parse_intermixed_args(argv)  # A --out DIR B as well as A B --out DIR


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from seq2seq.analysis.compare import MARKDOWN_FILE, compare, render_markdown

    if args.record is not None and len(args.paths) != 1:
        raise UserError("--record keeps one sweep: give the one sweep folder Hydra made")
    comparison, out = compare(args.paths, args.out, allow_mixed_data=args.allow_mixed_data)
    print(render_markdown(comparison), end="")
    if args.record is not None:
        from seq2seq.analysis.compare import to_json
        from seq2seq.analysis.compare.record import record_sweep

        runs = [run.path for variant in comparison.variants for run in variant.runs]
        record_sweep(args.record, Path(args.paths[0]), runs, to_json(comparison), args.beside)
        print(f"recorded {args.record}", file=sys.stderr)
    for warning in comparison.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {out / MARKDOWN_FILE} (and .csv, .json, figures, tb/)", file=sys.stderr)


if __name__ == "__main__":
    main()
