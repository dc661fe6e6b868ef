"""Evaluating a finished run folder and printing its metrics (``scripts/evaluate.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import torch

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.config import DataConfig
from seq2seq.errors import UserError
from seq2seq.evaluation.alignment_report import format_report
from seq2seq.evaluation.attributions import IG_STEPS
from seq2seq.evaluation.explain import IG_PER_BUCKET, explain
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.interventions import Intervention, intervening
from seq2seq.evaluation.misses import Misses, find_misses
from seq2seq.evaluation.scores import Explanation, Scores
from seq2seq.evaluation.scoring import evaluate, layer_alignment
from seq2seq.evaluation.summary import Evaluation
from seq2seq.files import file_sha256
from seq2seq.runtime import resolve_device


class RunEvaluation(NamedTuple):
    """What :func:`evaluate_run` found: the scores to record, and the sentences missed."""

    evaluation: Evaluation
    misses: Misses


class RunSplits(NamedTuple):
    """A loaded run and the splits it is scored on."""

    run: TrainedRun
    dataset: ParallelDataset  # the split asked for
    valid: ParallelDataset
    data: DataConfig  # where they were read

    @classmethod
    def load(
        cls, run_dir: str | Path, split: str, checkpoint: str, data_dir: str | None, device: str
    ) -> RunSplits:
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
        return cls(run, dataset, valid, data)

    @property
    def device(self) -> torch.device:
        return next(self.run.model.parameters()).device


def evaluate_run(
    run_dir: str | Path,
    *,
    split: str = "test",
    beam_size: int = 1,
    batch_size: int = 256,
    checkpoint: str = "best.pt",
    data_dir: str | None = None,
    device: str = "auto",
    intervention: Intervention | None = None,
    progress: bool = False,
    loaded: RunSplits | None = None,
) -> RunEvaluation:
    """Full metrics of a run's checkpoint on ``split``, with what produced them, and the
    split's sentences the model does not translate exactly; nothing is written
    (:func:`seq2seq.evaluation.summary.record_evaluation` does that). ``intervention``: the
    attention replaced while decoding and scoring (:mod:`.interventions`; a free-running
    one). ``progress`` draws a progress bar on stderr while decoding (when it is a terminal).
    ``loaded``: the run and splits, when the caller has loaded them already."""
    if beam_size < 1 or batch_size < 1:
        raise UserError("--beam-size and --batch-size must be at least 1")
    if intervention is not None and not intervention.free_running:
        raise UserError(
            f"--intervention {intervention.name} exists along the reference only (teacher "
            "forcing), and evaluation decodes freely: use --explain, which scores it"
        )
    run, dataset, valid, data = loaded or RunSplits.load(
        run_dir, split, checkpoint, data_dir, device
    )
    if intervention is not None:
        intervention.check(run.model.spec)
    device_of = next(run.model.parameters()).device
    with intervening(run.model, intervention):
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
        intervention=None if intervention is None else intervention.name,
    )
    return RunEvaluation(evaluation, find_misses(hypotheses, dataset.pairs))


def explain_run(
    loaded: RunSplits,
    *,
    split: str,
    checkpoint: str,
    batch_size: int,
    ig_per_bucket: int = IG_PER_BUCKET,
    ig_steps: int = IG_STEPS,
    progress: Callable[[str], None] = lambda _: None,
) -> Explanation:
    """Attention put to the test on the loaded split (see :mod:`seq2seq.evaluation.explain`)."""
    run = loaded.run
    return explain(
        run.model, loaded.dataset, run.tgt_vocab, checkpoint=checkpoint, step=run.step,
        split=split, batch_size=batch_size, device=loaded.device, ig_per_bucket=ig_per_bucket,
        ig_steps=ig_steps, progress=progress,
    )  # fmt: skip


def format_explanation(explanation: Explanation) -> list[str]:
    """The interventions and the maps of ``--explain``, as text tables."""

    def number(value: float | None, scale: float = 1.0) -> str:
        return "n/a" if value is None else f"{value * scale:.2f}"

    lines = [
        f"  attention put to the test ({explanation.seconds:.0f} s):",
        f"    {'intervention':<14}{'BLEU':>8}{'exact %':>9}{'token acc %':>13}{'loss':>8}",
    ]
    for scores in explanation.interventions:
        lines.append(
            f"    {scores.intervention:<14}{number(scores.bleu):>8}"
            f"{number(scores.exact_match, 100):>9}{number(scores.token_accuracy, 100):>13}"
            f"{scores.loss:>8.3f}"
        )
    if explanation.maps:
        lines.append(f"    {'map':<28}{'AER':>7}  sentences")
    for found in explanation.maps:
        name = found.method if found.layer is None else f"{found.method} (layer {found.layer})"
        note = ""
        if found.steps is not None:
            note = f", {found.steps} steps, |delta| {found.convergence_delta:.2g}"
        heads = ""
        if found.aer_per_head and len(found.aer_per_head) > 1:
            heads = " heads " + " ".join(f"{aer:.3f}" for aer in found.aer_per_head)
        lines.append(f"    {name:<28}{found.aer:>7.3f}  {found.sentences}{note}{heads}")
    return lines


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
