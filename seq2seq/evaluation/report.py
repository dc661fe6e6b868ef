"""Evaluating a finished run folder and printing its metrics (``scripts/evaluate.py``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from seq2seq.data.batching import ParallelDataset
from seq2seq.errors import UserError
from seq2seq.evaluation.alignment_report import format_report
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.misses import Misses, find_misses
from seq2seq.evaluation.scores import Scores
from seq2seq.evaluation.scoring import evaluate, layer_alignment
from seq2seq.evaluation.summary import Evaluation
from seq2seq.files import file_sha256
from seq2seq.runtime import resolve_device


class RunEvaluation(NamedTuple):
    """What :func:`evaluate_run` found: the scores to record, and the sentences missed."""

    evaluation: Evaluation
    misses: Misses


def evaluate_run(
    run_dir: str | Path,
    *,
    split: str = "test",
    beam_size: int = 1,
    batch_size: int = 256,
    checkpoint: str = "best.pt",
    data_dir: str | None = None,
    device: str = "auto",
    progress: bool = False,
) -> RunEvaluation:
    """Full metrics of a run's checkpoint on ``split``, with what produced them, and the
    split's sentences the model does not translate exactly; nothing is written
    (:func:`seq2seq.evaluation.summary.record_evaluation` does that). ``progress`` draws a
    progress bar on stderr while decoding (when it is a terminal)."""
    if beam_size < 1 or batch_size < 1:
        raise UserError("--beam-size and --batch-size must be at least 1")
    run = TrainedRun.load(run_dir, checkpoint, device=str(resolve_device(device)))
    data = run.data
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise UserError(
                f"--data-dir {data_dir} does not exist; pass the folder holding {split}.tsv"
            )
        data = replace(data, dir=data_dir, path=None, synthetic=False)
    splits = run.splits(data)
    dataset = ParallelDataset(splits[split], run.src_vocab, run.tgt_vocab)
    valid = ParallelDataset(splits["valid"], run.src_vocab, run.tgt_vocab)
    device_of = next(run.model.parameters()).device
    scores, hypotheses = evaluate(
        run.model, dataset, run.tgt_vocab, batch_size=batch_size, device=device_of,
        beam_size=beam_size, select_head_on=("valid", valid) if split != "valid" else None,
        progress=progress,
    )  # fmt: skip
    has_gold = any(pair.alignment is not None for pair in dataset.pairs)
    layers = []
    if run.model.decoder_layer_count and has_gold:
        layers = layer_alignment(run.model, dataset, batch_size=batch_size, device=device_of)
    source = Path(data.path) if data.path else Path(data.dir or "") / f"{split}.tsv"
    evaluation = Evaluation(
        checkpoint=checkpoint,
        step=run.step,
        split=split,
        beam_size=beam_size,
        corpus=str(data.path or data.dir),
        corpus_sha256=file_sha256(source) if source.is_file() else None,
        scores=scores,
        layers=layers,
    )
    return RunEvaluation(evaluation, find_misses(hypotheses, dataset.pairs))


def format_layers(layers: list[dict[str, Any]]) -> list[str]:
    """A Transformer's AER per decoder layer: heads averaged, then each head."""
    if not layers:
        return []
    lines = ["  AER per decoder layer (heads averaged; each head):"]
    for number, scores in enumerate(layers, start=1):
        heads = ", ".join(f"{aer:.3f}" for aer in scores["aer_per_head"])
        lines.append(f"    layer {number:<3}{scores['aer']:>8.3f}   ({heads})")
    return lines


def format_metrics(scores: Scores, title: str = "") -> str:
    """A small text table of the headline metrics, BLEU by source length and (when present)
    a few lines of the alignment error report."""

    def number(value: Any, scale: float = 1.0) -> str:
        return "n/a" if value is None else f"{value * scale:.2f}"

    alignment = scores.alignment
    rows = [
        ("BLEU", number(scores.bleu)),
        ("chrF", number(scores.chrf)),
        ("exact match %", number(scores.exact_match, 100)),
        ("token accuracy %", number(scores.token_accuracy, 100)),
        ("AER (sure + possible)", number(alignment and alignment.aer)),
        ("AER (sure only)", number(alignment and alignment.aer_sure_only)),
        ("AER best head", number(alignment and alignment.aer_best_head)),
        ("attention entropy", number(alignment and alignment.attention_entropy)),
        ("loss", number(scores.loss)),
    ]
    lines = [title] if title else []
    lines += [f"  {name:<20}{value:>10}" for name, value in rows]
    if scores.bleu_by_length:
        lines.append("  BLEU by source length:")
        sizes = scores.bucket_sizes or {}
        for bucket, bleu in scores.bleu_by_length.items():
            lines.append(f"    {bucket:<8}{bleu:>8.2f}   (n={sizes.get(bucket, '?')})")
    if alignment is not None and alignment.alignment_report:
        lines += format_report(alignment.alignment_report)
    if scores.bleu_signature:
        lines.append(f"  {scores.bleu_signature}")
    return "\n".join(lines)
