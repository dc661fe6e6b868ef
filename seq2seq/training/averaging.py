"""An exponential moving average of the weights (Polyak averaging), ``train.ema_decay``.

After every update the average moves towards the weights the optimizer left:
``average ← d · average + (1 − d) · weights`` with ``d = min(ema_decay, (1 + n) / (10 + n))``
after ``n`` updates — TensorFlow's ``ExponentialMovingAverage`` with ``num_updates``, so the
first averages forget the random initialisation within a few updates instead of a few
thousand. Training never sees the average; validation, the sample heatmaps, ``best.pt`` and
``last.pt``'s weights (what ``evaluate``, ``translate`` and the test use) are the average, and
a checkpoint keeps the optimizer's own weights beside them so that a resumed run continues
exactly (:func:`seq2seq.training.checkpointing.make_checkpoint`). With ``ema_decay = 0`` this
is a no-op and nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn


class WeightAverage:
    """The moving average of ``model``'s parameters at ``decay`` (0 = off)."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"the average's decay must be in [0, 1), got {decay}")
        self.decay = decay
        self.model = model
        named = list(model.named_parameters())  # a tied weight once, as the optimizer sees it
        self.names = [name for name, _ in named]
        self.params = [p for _, p in named]
        self.averages = [p.detach().clone() for p in self.params] if decay > 0 else []

    @property
    def active(self) -> bool:
        return self.decay > 0

    def decay_after(self, updates: int) -> float:
        """The decay of the move after ``updates`` updates (the warm-up cap included)."""
        return min(self.decay, (1 + updates) / (10 + updates))

    @torch.no_grad()
    def after_update(self, updates: int) -> None:
        """Move the average towards the weights the ``updates``-th update left."""
        if not self.active:
            return
        weight = 1.0 - self.decay_after(updates)
        for average, param in zip(self.averages, self.params, strict=True):
            average.lerp_(param, weight)

    @contextmanager
    def applied(self) -> Iterator[None]:
        """While inside, the model's parameters hold the average (to validate, draw or save
        it); on leaving, the optimizer's own weights again, bit for bit."""
        if not self.active:
            yield
            return
        own = [p.detach().clone() for p in self.params]
        with torch.no_grad():
            for param, average in zip(self.params, self.averages, strict=True):
                param.copy_(average)
        try:
            yield
        finally:
            with torch.no_grad():
                for param, weights in zip(self.params, own, strict=True):
                    param.copy_(weights)

    def averaged_state(self) -> dict[str, Tensor]:
        """The model's ``state_dict`` with the averaged parameters (copies)."""
        with self.applied():
            return {key: value.clone() for key, value in self.model.state_dict().items()}

    def load(self, averaged: dict[str, Any]) -> None:
        """Continue from a checkpoint's averaged ``state_dict`` (:meth:`averaged_state`)."""
        if self.active:
            self.averages = [
                averaged[name].to(device=p.device, dtype=p.dtype, copy=True)
                for name, p in zip(self.names, self.params, strict=True)
            ]
