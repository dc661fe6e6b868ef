"""Score a trained run: ``python scripts/evaluate.py RUN_DIR [--split test] [--beam-size 5]``.

Prints a table of the split's metrics, with the alignment error report (where each English
word's attention link goes) when the model has attention and the split has gold links, and
where exact match is lost (the missed sentences per source length, their first wrong words;
``--misses N`` shows N of them), then records them in RUN_DIR/metrics.json under
``evaluations`` (keyed by split, checkpoint, beam and corpus); training's own ``test``
scores are never replaced. A progress bar on stderr shows the decoding (when stderr is a
terminal). Scores that cannot be recorded (a read-only
run folder, a full disk) are still printed, then one line says why they were not recorded.

``--intervention uniform`` (shuffle, argmax, head:H, head:L.H) scores the split with the
model's attention replaced (seq2seq/evaluation/interventions.py). ``--explain`` puts the
attention to the test: every intervention, and how well attention and attributions
(gradient × input, integrated gradients, Shift-Att) align with the gold links; printed and
recorded under ``explain`` in metrics.json (seq2seq/evaluation/explain.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seq2seq.errors import UserError, WriteError, exit_on_user_error
from seq2seq.evaluation.run_files import checkpoint_file


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder made by scripts/train.py")
    parser.add_argument("--split", choices=("train", "valid", "test"), default="test")
    parser.add_argument("--beam-size", type=int, default=1, help="1 = greedy")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--checkpoint", default="best.pt", help="file in RUN_DIR/checkpoints")
    parser.add_argument("--data-dir", help="where the corpus is, if not where training read it")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument(
        "--misses", type=int, default=0, metavar="N",
        help="show N of the sentences not translated exactly, first wrong word in brackets",
    )  # fmt: skip
    parser.add_argument(
        "--intervention", metavar="NAME",
        help="score with the attention replaced: uniform, shuffle, argmax, head:H or head:L.H",
    )  # fmt: skip
    parser.add_argument(
        "--explain", action="store_true",
        help="put the attention to the test: every intervention, and the alignment error rate "
        "of attention, gradient × input, integrated gradients (and Shift-Att)",
    )  # fmt: skip
    parser.add_argument(
        "--ig-sentences", type=int, default=20, metavar="N",
        help="--explain: integrated gradients on the first N sentences of each length bucket",
    )  # fmt: skip
    parser.add_argument(
        "--ig-steps", type=int, default=16, metavar="N",
        help="--explain: integrated gradients' steps (Gauss-Legendre points)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.misses < 0:
        raise UserError(f"--misses must be 0 or more, got {args.misses}")
    if args.ig_sentences < 1 or args.ig_steps < 1:
        raise UserError(
            f"--ig-sentences and --ig-steps must be at least 1, got {args.ig_sentences} and "
            f"{args.ig_steps}"
        )
    if args.explain and args.intervention:
        raise UserError("--explain runs every intervention itself: drop --intervention")
    intervention = None
    if args.intervention is not None:
        from seq2seq.evaluation.interventions import Intervention

        intervention = Intervention.parse(args.intervention)
    checkpoint_file(args.run_dir, args.checkpoint)  # a wrong folder: one line, before torch

    from seq2seq.evaluation.misses import format_misses
    from seq2seq.evaluation.report import (
        RunSplits,
        evaluate_run,
        explain_run,
        format_explanation,
        format_layers,
        format_metrics,
    )
    from seq2seq.evaluation.summary import METRICS_FILE, record_evaluation
    from seq2seq.runtime import resolve_device

    device = str(resolve_device(args.device, option="--device"))
    loaded = RunSplits.load(args.run_dir, args.split, args.checkpoint, args.data_dir, device)
    evaluation, misses = evaluate_run(
        args.run_dir,
        split=args.split,
        beam_size=args.beam_size,
        batch_size=args.batch_size,
        checkpoint=args.checkpoint,
        intervention=intervention,
        progress=True,
        loaded=loaded,
    )
    title = f"{args.run_dir} — {args.split}, {args.checkpoint} (step {evaluation.step})"
    if intervention is not None:
        title += f", attention replaced: {intervention.name}"
    print(format_metrics(evaluation.scores, title=title), flush=True)
    for line in format_layers(evaluation.layers) + format_misses(misses, args.misses):
        print(line, flush=True)
    records = [evaluation]
    if args.explain:
        explanation = explain_run(
            loaded, split=args.split, checkpoint=args.checkpoint, batch_size=args.batch_size,
            ig_per_bucket=args.ig_sentences, ig_steps=args.ig_steps,
            progress=lambda step: print(f"explain: {step}", file=sys.stderr, flush=True),
        )  # fmt: skip
        for line in format_explanation(explanation):
            print(line, flush=True)
        records.append(explanation)
    metrics = args.run_dir / METRICS_FILE
    try:
        for record in records:
            record_evaluation(metrics, record)
    except WriteError as err:
        raise UserError(
            f"the scores above were not recorded in {metrics}: {err.reason}; to record them, "
            "copy the run folder to a writable place and evaluate the copy"
        ) from err
    except UserError as err:
        raise UserError(f"the scores above were not recorded: {err}") from err


if __name__ == "__main__":
    main()
