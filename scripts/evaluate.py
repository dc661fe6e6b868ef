"""Score a trained run: ``python scripts/evaluate.py RUN_DIR [--split test] [--beam-size 5]``.

Prints a table of the split's metrics, with the alignment error report (where each English
word's attention link goes) when the model has attention and the split has gold links, then
records them in RUN_DIR/metrics.json under ``evaluations`` (keyed by split, checkpoint, beam
and corpus); training's own ``test`` scores are never replaced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2seq.errors import exit_on_user_error
from seq2seq.evaluation.report import evaluate_run, format_metrics
from seq2seq.evaluation.summary import METRICS_FILE, record_evaluation


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder made by scripts/train.py")
    parser.add_argument("--split", choices=("train", "valid", "test"), default="test")
    parser.add_argument("--beam-size", type=int, default=1, help="1 = greedy")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--checkpoint", default="best.pt", help="file in RUN_DIR/checkpoints")
    parser.add_argument("--data-dir", help="where the corpus is, if not where training read it")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    args = parser.parse_args(argv)
    evaluation = evaluate_run(
        args.run_dir,
        split=args.split,
        beam_size=args.beam_size,
        batch_size=args.batch_size,
        checkpoint=args.checkpoint,
        data_dir=args.data_dir,
        device=args.device,
    )
    title = f"{args.run_dir} — {args.split}, {args.checkpoint} (step {evaluation.step})"
    print(format_metrics(evaluation.scores, title=title), flush=True)
    record_evaluation(args.run_dir / METRICS_FILE, evaluation)


if __name__ == "__main__":
    main()
