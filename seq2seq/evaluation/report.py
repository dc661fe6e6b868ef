"""Evaluating a finished run folder and printing its metrics (``scripts/evaluate.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.loading import check_same_file, load_splits, segment_targets
from seq2seq.errors import UserError
from seq2seq.evaluation.alignment_report import format_report
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.scoring import evaluate_dataset
from seq2seq.evaluation.summary import METRICS_FILE, record_scores
from seq2seq.runtime import resolve_device


def evaluate_run(
    run_dir: str | Path,
    *,
    split: str = "test",
    beam_size: int = 1,
    batch_size: int = 256,
    checkpoint: str = "best.pt",
    data_dir: str | None = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Full metrics of a run's checkpoint on ``split``, merged into ``metrics.json``."""
    if beam_size < 1 or batch_size < 1:
        raise UserError("--beam-size and --batch-size must be at least 1")
    run = TrainedRun.load(run_dir, checkpoint, device=str(resolve_device(device)))
    # Plain data, read as it is: the stored config was saved resolved, and resolving it again
    # would expand a crafted "${oc.env:...}". Older checkpoints' corpus seed was the run's seed.
    data = {"seed": run.config["seed"], **run.config["data"]}
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise UserError(
                f"--data-dir {data_dir} does not exist; pass the folder holding {split}.tsv"
            )
        data.update(dir=data_dir, path=None, synthetic=False)
    check_same_file(data, run.corpus_sha256)
    splits = load_splits(data)
    if run.tgt_vocab.subwords is not None:
        splits = segment_targets(splits, run.tgt_vocab.subwords)
    dataset = ParallelDataset(splits[split], run.src_vocab, run.tgt_vocab)
    valid = ParallelDataset(splits["valid"], run.src_vocab, run.tgt_vocab)
    scores, _ = evaluate_dataset(
        run.model,
        dataset,
        run.tgt_vocab,
        batch_size=batch_size,
        device=next(run.model.parameters()).device,
        beam_size=beam_size,
        select_head_on=("valid", valid) if split != "valid" else None,
    )
    record_scores(Path(run_dir) / METRICS_FILE, split, scores)
    return scores


def format_metrics(scores: dict[str, Any], title: str = "") -> str:
    """A small text table of the headline metrics, BLEU by source length and (when present)
    a few lines of the alignment error report."""

    def number(value: Any, scale: float = 1.0) -> str:
        return "n/a" if value is None else f"{value * scale:.2f}"

    rows = [
        ("BLEU", number(scores["bleu"])),
        ("chrF", number(scores.get("chrf"))),
        ("exact match %", number(scores["exact_match"], 100)),
        ("token accuracy %", number(scores.get("token_accuracy"), 100)),
        ("AER (sure + possible)", number(scores.get("aer"), 1)),
        ("AER (sure only)", number(scores.get("aer_sure_only"), 1)),
        ("AER best head", number(scores.get("aer_best_head"), 1)),
        ("attention entropy", number(scores.get("attention_entropy"))),
        ("loss", number(scores["loss"])),
    ]
    lines = [title] if title else []
    lines += [f"  {name:<20}{value:>10}" for name, value in rows]
    if scores.get("bleu_by_length"):
        lines.append("  BLEU by source length:")
        sizes = scores.get("bucket_sizes", {})
        for bucket, bleu in scores["bleu_by_length"].items():
            lines.append(f"    {bucket:<8}{bleu:>8.2f}   (n={sizes.get(bucket, '?')})")
    if scores.get("alignment_report"):
        lines += format_report(scores["alignment_report"])
    if scores.get("bleu_signature"):
        lines.append(f"  {scores['bleu_signature']}")
    return "\n".join(lines)
