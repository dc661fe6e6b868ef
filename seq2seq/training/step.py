"""One update, for one process and for data parallelism alike: forward, the loss terms,
the finiteness check, backward, clipping, the optimizer step.

Under data parallelism each process runs :meth:`Updater.update` on the same global batch: it
takes its share of the pairs (:func:`~seq2seq.training.distributed.shard`) and divides each
loss sum by the global normaliser over ``world_size`` (:mod:`seq2seq.training.objective`);
that and DDP's gradient average are all distribution changes. On one process the share is the
whole batch and ``world_size`` is 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from seq2seq.data.batching import ParallelDataset
from seq2seq.training.distributed import ProcessGroup, data_parallel, shard
from seq2seq.training.objective import TRANSLATION, Objective


@dataclass(frozen=True)
class StepResult:
    """What one update did: each loss term over the global batch (per its normaliser), the
    gradient norm before clipping (NaN when the update was skipped) and the global target
    tokens."""

    losses: dict[str, float]
    grad_norm: float
    tokens: int

    @property
    def loss(self) -> float:
        """The translation loss per target token (``loss/train``)."""
        return self.losses[TRANSLATION]

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in self.losses.values())

    @property
    def first_non_finite(self) -> float:
        """The first loss term that is NaN or infinite (only for a result that is not
        :attr:`finite`)."""
        return next(v for v in self.losses.values() if not math.isfinite(v))


class Updater:
    """Updates ``model`` with ``optimizer`` on global batches; one per trainer.

    ``model``'s parameters are clipped and stepped; on several processes the forward pass runs
    through ``DistributedDataParallel`` (:func:`~seq2seq.training.distributed.data_parallel`),
    whose backward averages the gradients over the processes before the clipping.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        objective: Objective,
        group: ProcessGroup,
        *,
        clip_grad_norm: float,
        teacher_forcing: float,
    ) -> None:
        self.model = model
        self.forward = data_parallel(model, group)
        self.optimizer = optimizer
        self.objective = objective
        self.group = group
        self.clip = clip_grad_norm or math.inf
        self.teacher_forcing = teacher_forcing

    def update(self, dataset: ParallelDataset, indices: Sequence[int], step: int) -> StepResult:
        """One update on the global batch ``indices`` of ``dataset``, the run's update after
        ``step`` updates (what the loss terms' weights depend on).

        A non-finite loss on any process skips the update on every process (all see the same
        global values) and returns it with a NaN gradient norm, so the caller can stop with
        the last good checkpoint intact.
        """
        group, objective = self.group, self.objective
        own, share_weight = shard(indices, group.rank, group.world_size)
        normalizers = objective.normalizers(dataset, indices)
        device = next(self.model.parameters()).device
        batch = dataset.collate(
            own, gold=objective.needs_weights, possible_weight=objective.guide.possible_weight
        ).to(device)
        self.model.train()
        logits, weights = self.forward(
            batch.src,
            batch.src_lengths,
            batch.src_mask,
            batch.tgt_in,
            teacher_forcing=self.teacher_forcing,
            keep_weights=objective.needs_weights,
        )
        if weights is not None:  # the heads guided alignment pulls (a Transformer: one)
            weights = weights[:, self.model.guided_heads]
        terms = objective.terms(logits, weights, batch)
        sums = {tag: value * share_weight for tag, value in terms.items()}
        totals = group.sum([value.item() for value in sums.values()])
        losses = {
            tag: total / _nonzero(normalizers[tag]) for tag, total in zip(sums, totals, strict=True)
        }
        tokens = int(normalizers[TRANSLATION])
        result = StepResult(losses, math.nan, tokens)
        if not result.finite:  # every process sees the same values: all skip together
            return result
        self.optimizer.zero_grad()
        self._objective(sums, normalizers, objective.weights(step)).backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip))
        self.optimizer.step()
        return StepResult(losses, grad_norm, tokens)

    def _objective(
        self, sums: dict[str, Tensor], normalizers: dict[str, float], weights: dict[str, float]
    ) -> Tensor:
        """Σ_terms weight × sum / (normaliser / world_size): the gradient average over the
        processes then gives the gradient of the global batch's objective."""
        world = self.group.world_size
        total: Tensor | None = None
        for tag, value in sums.items():
            term = value / (_nonzero(normalizers[tag]) / world)
            if weights[tag] != 1.0:
                term = weights[tag] * term
            total = term if total is None else total + term
        assert total is not None
        return total


def _nonzero(normalizer: float) -> float:
    """A batch without a guided word divides its (zero) alignment sum by a tiny number."""
    return max(normalizer, 1e-6)
