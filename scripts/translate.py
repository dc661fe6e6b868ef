"""Translate with a trained run: ``python scripts/translate.py RUN_DIR "我 爱 中国"``.

Without sentences, reads one sentence per line from stdin (UTF-8; lines end at ``\\n`` or
``\\r\\n``; a byte-order mark is dropped). ``--heatmap out.png`` saves the attention plot of
each sentence (``out.png``, or ``out_1.png``, ``out_2.png``, … for several) in the format
its suffix names (``.png``, ``.pdf``, ``.svg``, …).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seq2seq.errors import UserError, exit_on_user_error
from seq2seq.evaluation.run_files import checkpoint_file

STDIN_ADVICE = "convert the input to UTF-8 (e.g. iconv -f GB18030 -t UTF-8)"
#: The largest length penalty accepted: GNMT's ``((5 + |Y|) / 6) ** alpha`` is tuned in [0, 1];
#: far above, the penalty, not the model, decides how long the output is.
MAX_ALPHA = 2.0


def heatmap_paths(path: Path, count: int) -> list[Path]:
    if count == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{k}{path.suffix or '.png'}") for k in range(1, count + 1)]


def check_heatmap_path(path: Path) -> None:
    """Refuse, before anything is translated, a heatmap path that can never be written."""
    from seq2seq.viz.figures import image_format

    if path.is_dir():
        raise UserError(
            f"--heatmap {path} is a folder; give a file name (e.g. {path / 'attention.png'})"
        )
    image_format(path)


def argument_sentences(arguments: list[str]) -> list[str]:
    """The sentences given as arguments, checked like stdin's: UTF-8, byte-order marks
    dropped (Python hands over other bytes as surrogate escapes)."""
    from seq2seq.data.corpus import BYTE_ORDER_MARK

    sentences = []
    for number, text in enumerate(arguments, start=1):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(
                f"sentence {number} (an argument) is not valid UTF-8; pass UTF-8 text"
            ) from None
        sentences.append(text.replace(BYTE_ORDER_MARK, ""))
    return sentences


def stdin_sentences() -> list[str]:
    """The non-blank lines of stdin, read by the corpus files' rules (one line per sentence:
    ``stdin:LINE`` errors for bytes that are not UTF-8 or a carriage return inside a line)."""
    from seq2seq.data.corpus import decode_utf8, text_lines

    text = decode_utf8(sys.stdin.buffer.read(), "stdin", STDIN_ADVICE)
    return [line.strip() for line in text_lines(text, "stdin") if line.strip()]


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder made by scripts/train.py")
    parser.add_argument("sentences", nargs="*", help="Chinese sentences (default: stdin lines)")
    parser.add_argument("--beam-size", type=int, default=1, help="1 = greedy")
    parser.add_argument(
        "--alpha", type=float, default=0.6,
        help=f"beam length penalty, 0 (none) to {MAX_ALPHA:g}",
    )  # fmt: skip
    parser.add_argument(
        "--heatmap", type=Path, help="save attention heatmap(s) to this file (.png, .pdf, .svg…)"
    )
    parser.add_argument(
        "--intervention", metavar="NAME",
        help="translate with the attention replaced: uniform, shuffle, argmax, head:H or "
        "head:L.H (seq2seq/evaluation/interventions.py)",
    )  # fmt: skip
    parser.add_argument("--checkpoint", default="best.pt")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    args = parser.parse_intermixed_args(argv)  # RUN --beam-size 5 SENTENCE … as well
    if args.beam_size < 1:
        raise UserError("--beam-size must be at least 1")
    if not 0.0 <= args.alpha <= MAX_ALPHA:  # nan fails every comparison
        raise UserError(
            f"--alpha must be a number from 0 (no length penalty) to {MAX_ALPHA:g}, "
            f"got {args.alpha}"
        )
    if args.heatmap:
        check_heatmap_path(args.heatmap)
    intervention = None
    if args.intervention is not None:
        from seq2seq.evaluation.interventions import Intervention

        intervention = Intervention.parse(args.intervention)
        if not intervention.free_running:
            raise UserError(
                f"--intervention {intervention.name} exists along a reference translation only; "
                "a sentence of your own has none: use uniform, shuffle, argmax or a head"
            )
    checkpoint_file(args.run_dir, args.checkpoint)  # before stdin is read and torch imported
    sentences = argument_sentences(args.sentences) if args.sentences else stdin_sentences()
    if not sentences or not all(s.strip() for s in sentences):
        raise UserError("empty input: pass Chinese sentences as arguments or lines on stdin")

    import warnings

    from seq2seq.evaluation.inference import TrainedRun
    from seq2seq.runtime import resolve_device

    device = resolve_device(args.device, option="--device")
    run = TrainedRun.load(args.run_dir, args.checkpoint, device=str(device))
    if intervention is not None:
        intervention.check(run.model.spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        translations = run.translate(
            sentences, beam_size=args.beam_size, alpha=args.alpha, intervention=intervention
        )
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    for translation in translations:
        print(translation.text)
    if args.heatmap:
        if not run.model.attention.has_weights:
            raise UserError(
                "this run has no attention (attention=none): there is no heatmap to draw"
            )
        from seq2seq.viz.heatmap import plot_attention

        sys.stdout.flush()  # the translations come first, whatever happens to the heatmaps
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
