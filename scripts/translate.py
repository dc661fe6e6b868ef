"""Translate with a trained run: ``python scripts/translate.py RUN_DIR "我 爱 中国"``.

Without sentences, reads one sentence per line from stdin. ``--heatmap out.png`` saves the
attention plot of each sentence (``out.png``, or ``out_1.png``, ``out_2.png``, … for several).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from seq2seq.errors import UserError, exit_on_user_error
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.runtime import resolve_device


def heatmap_paths(path: Path, count: int) -> list[Path]:
    if count == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{k}{path.suffix or '.png'}") for k in range(1, count + 1)]


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder made by scripts/train.py")
    parser.add_argument("sentences", nargs="*", help="Chinese sentences (default: stdin lines)")
    parser.add_argument("--beam-size", type=int, default=1, help="1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="beam length penalty")
    parser.add_argument("--heatmap", type=Path, help="save attention heatmap(s) to this PNG")
    parser.add_argument("--checkpoint", default="best.pt")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    if args.beam_size < 1:
        raise UserError("--beam-size must be at least 1")
    sentences = args.sentences or [line.strip() for line in sys.stdin if line.strip()]
    if not sentences or not all(s.strip() for s in sentences):
        raise UserError("empty input: pass Chinese sentences as arguments or lines on stdin")
    run = TrainedRun.load(args.run_dir, args.checkpoint, device=str(resolve_device(args.device)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        translations = run.translate(sentences, beam_size=args.beam_size, alpha=args.alpha)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    for translation in translations:
        print(translation.text)
    if args.heatmap:
        if not run.model.attention.has_weights:
            raise UserError(
                "this run has no attention (attention=none): there is no heatmap to draw"
            )
        from seq2seq.viz import plot_attention

        for translation, path in zip(
            translations, heatmap_paths(args.heatmap, len(translations)), strict=True
        ):
            plot_attention(
                translation.weights,
                [*translation.source, "<eos>"],
                [*translation.output, "<eos>"][: translation.weights.shape[1]],
                path=path,
            )
            print(f"heatmap: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
