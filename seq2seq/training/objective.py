"""What one update minimises: the loss terms, each a sum over this process' pairs divided by
a normaliser of the whole (global) batch.

* ``loss/train``: the translation cross-entropy (with ``train.label_smoothing``) per target
  token of the global batch;
* ``loss/alignment`` (guided alignment, :mod:`seq2seq.training.guidance`): the KL divergence
  to the gold rows per unit of guided row weight, times the guide's weight of the update in the
  objective (``train.alignment_weight`` moved by ``train.alignment_schedule``).

Normalising by the *global* counts, computed from the global batch's pairs without any
communication, is what makes data parallelism exact: each of ``world_size`` processes minimises
``world_size × sum / normaliser`` of its share, the gradients are averaged over the processes,
and the average is the one-process gradient of the global batch. Adding a loss term: its sum
and normaliser here, in :meth:`Objective.terms` and :meth:`Objective.normalizers`.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from seq2seq.data.batching import Batch, ParallelDataset
from seq2seq.evaluation.scoring import sequence_loss
from seq2seq.training.guidance import AlignmentGuide, alignment_divergence, guided_weight

TRANSLATION, ALIGNMENT = "loss/train", "loss/alignment"


class Objective:
    """The loss terms of an update, by their TensorBoard tag, with their weights."""

    def __init__(self, label_smoothing: float, guide: AlignmentGuide) -> None:
        self.label_smoothing = label_smoothing
        self.guide = guide

    @property
    def needs_weights(self) -> bool:
        """Whether the terms read the attention weights (and ``batch.gold``)."""
        return self.guide.active

    def weights(self, step: int) -> dict[str, float]:
        """Each term's weight in the objective of the update after ``step`` updates."""
        guided = {ALIGNMENT: self.guide.weight_at(step)} if self.guide.active else {}
        return {TRANSLATION: 1.0, **guided}

    def normalizers(self, dataset: ParallelDataset, indices: Sequence[int]) -> dict[str, float]:
        """What each term is divided by: counts over the global batch ``indices``."""
        tokens = float(sum(len(dataset.tgt_ids[i]) for i in indices))
        if not self.guide.active:
            return {TRANSLATION: tokens}
        pairs = [dataset.pairs[i] for i in indices]
        return {TRANSLATION: tokens, ALIGNMENT: guided_weight(pairs, self.guide.possible_weight)}

    def terms(self, logits: Tensor, weights: Tensor | None, batch: Batch) -> dict[str, Tensor]:
        """Each term's sum over ``batch``: logits (B, T_t, V), weights (B, heads, T_t, T_s)."""
        sums = {TRANSLATION: sequence_loss(logits, batch.tgt_out, "sum", self.label_smoothing)}
        if self.guide.active:
            if weights is None or batch.gold is None:
                raise ValueError("guided alignment needs the attention weights and batch.gold")
            sums[ALIGNMENT] = alignment_divergence(weights, batch.gold)
        return sums
