"""Guided alignment (supervised attention): pull the attention towards the gold links.

Chen et al. (2016, "Guided alignment training for topic-aware NMT") and Mi et al. (2016)
add to the translation loss a term that compares each teacher-forced attention row with the
gold alignment of its target word; OpenNMT's ``guided_alignment`` is the same idea. Here:

* the gold row of target word ``j`` is uniform over the source words of its *sure* links
  (:func:`seq2seq.data.batching.gold_distribution`); a word whose links are all *possible*
  (an article, a copula) is guided toward those with ``train.alignment_possible_weight``
  (default 0: ignored); words without links, the ``<eos>`` step and padding are not guided
  (their gold rows are zero);
* the term is the KL divergence ``KL(gold_j || α_j) = Σ_i g_ij (log g_ij - log α_ij)``
  (``g_j`` the gold row normalised to sum 1), i.e. the cross-entropy minus the gold row's
  entropy, so it is exactly 0 when the attention equals the gold distribution and positive
  otherwise; averaged over the guided words of the batch, each word weighted by its row's
  weight (1 for a sure word; each counts once, whatever its sentence's length);
* multi-head attention is guided through the average over heads (the heads stay free to
  split the work, as long as together they point at the gold words);
* the objective is ``translation loss + w_t × term``, where ``w_t`` is
  ``train.alignment_weight`` moved by ``train.alignment_schedule``
  (:meth:`AlignmentGuide.weight_at`): ``triangle`` (the default) rises from 0 to it at
  ``train.alignment_peak`` of the planned updates (0.4) and falls back to 0 at
  ``train.alignment_end`` (0.8), so that the translation is learnt first and has the last
  updates to itself (a constant weight slows the early learning and costs the GRU exact match
  at the end; docs/alignment.md); ``constant`` keeps it;
  ``loss/train`` keeps logging the translation loss alone, so curves stay comparable with
  unguided runs, the term is logged as ``loss/alignment`` and its weight as
  ``alignment_weight``.

Without attention weights (``attention=none``) or without sure links in the training data
there is nothing to guide: :class:`AlignmentGuide` says so once in the log and stays off.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch
from torch import Tensor

from seq2seq.choices import AlignmentSchedule
from seq2seq.data.corpus import Pair

log = logging.getLogger("seq2seq")

#: Floor of the attention weights inside the log: a gold position the softmax underflowed
#: to 0 gives a large finite loss (and a zero gradient there) instead of inf.
_TINY = 1e-12


def alignment_divergence(weights: Tensor, gold: Tensor) -> Tensor:
    """The weighted sum of KL divergences from the gold rows to the attention rows.

    weights (B, heads, T_t, T_s) or (B, T_t, T_s): attention (rows sum to 1 over real
    positions); gold (B, T_t, T_s): gold rows, each summing to its weight (1 for a sure
    word), or all-zero rows to skip. -> a scalar tensor ``Σ_j w_j KL(g_j/w_j || α_j)``
    (0 when no row is guided, still part of the graph).
    """
    if weights.dim() == 4:
        weights = weights.mean(1)  # (B, T_t, T_s): the heads together
    gold = gold.to(weights.dtype)
    row_weight = gold.sum(-1, keepdim=True)  # (B, T_t, 1)
    target = gold / row_weight.clamp_min(_TINY)  # rows summing to 1 (or all zero)
    log_ratio = torch.log(target.clamp_min(_TINY)) - torch.log(weights.clamp_min(_TINY))
    divergence = torch.where(gold > 0, target * log_ratio, torch.zeros_like(gold)).sum(-1)
    return (divergence * row_weight.squeeze(-1)).sum()


def alignment_loss(weights: Tensor, gold: Tensor) -> Tensor:
    """The alignment term of one batch: :func:`alignment_divergence` per unit of guided row
    weight, ``Σ_j w_j KL_j / Σ_j w_j``; 0 when no row is guided."""
    return alignment_divergence(weights, gold) / gold.sum().clamp_min(1e-6)


def guided_weight(pairs: Sequence[Pair], possible_weight: float) -> float:
    """The total row weight that :func:`~seq2seq.data.batching.gold_distribution` gives
    ``pairs``: 1 per target word with a sure link, ``possible_weight`` per word with possible
    links only. The normaliser of the alignment term, computed from the pairs alone."""
    total = 0.0
    for pair in pairs:
        if pair.alignment is None:
            continue
        sure = {j for _, j in pair.alignment}
        total += len(sure)
        if possible_weight > 0:
            total += possible_weight * len({j for _, j in pair.possible} - sure)
    return total


def _has_sure_links(pairs: Sequence[Pair]) -> bool:
    return any(pair.alignment for pair in pairs)


class AlignmentGuide:
    """Whether and how a trainer guides its attention.

    ``active`` is False (and the trainer runs exactly as without guidance) when the weight
    is 0, when the attention has no weights, or when no training pair has a sure link; in
    the last two cases it logs once why. ``schedule``, ``total_steps`` (the planned
    updates) and, for the triangle, ``peak`` and ``end`` (fractions of them) move the weight
    over the run (:meth:`weight_at`).
    """

    def __init__(
        self,
        weight: float,
        attention_has_weights: bool,
        pairs: Sequence[Pair],
        possible_weight: float = 0.0,
        *,
        schedule: AlignmentSchedule,
        total_steps: int,
        peak: float,
        end: float,
    ):
        self.weight = weight
        self.possible_weight = possible_weight
        self.schedule, self.total_steps = AlignmentSchedule(schedule), max(total_steps, 1)
        self.peak, self.end = peak, end
        self.active = False
        if weight <= 0:
            return
        if not attention_has_weights:
            log.info("train.alignment_weight=%g: attention=none has no weights to guide", weight)
        elif not _has_sure_links(pairs):
            log.info(
                "train.alignment_weight=%g: the training corpus has no gold alignments, "
                "nothing to guide; training without the alignment loss",
                weight,
            )
        else:
            self.active = True

    def weight_at(self, step: int) -> float:
        """The term's weight in the update after ``step`` updates (0 for the first):
        ``weight`` for ``constant``; for ``triangle`` ``weight × step / top`` up to ``top =
        peak × total_steps``, then ``weight × (last - step) / (last - top)`` down to ``last =
        end × total_steps``, 0 from there on."""
        if self.schedule is AlignmentSchedule.constant:
            return self.weight
        top, last = self.total_steps * self.peak, self.total_steps * self.end
        if step < top:
            return self.weight * (step / top)
        return self.weight * max(0.0, (last - step) / (last - top))
