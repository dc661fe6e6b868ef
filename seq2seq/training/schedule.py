"""Learning-rate schedules: the one place that decides when the rate changes.

Each schedule is one of PyTorch's (:mod:`torch.optim.lr_scheduler`) and the event it steps
on: :class:`LinearSchedule` is a ``LambdaLR`` stepped after every update,
:class:`PlateauSchedule` a ``ReduceLROnPlateau`` stepped after every validation with its loss.
The trainer tells a :class:`Schedule` about both events (:meth:`~Schedule.after_update`,
:meth:`~Schedule.after_validation`); nothing else looks at ``train.lr_schedule``. Adding a
schedule: a subclass here, its name in :class:`~seq2seq.choices.LrSchedule` and its
entry in :data:`SCHEDULES` (checked complete at import).
"""

from __future__ import annotations

from typing import Any

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR, LRScheduler, ReduceLROnPlateau

from seq2seq.choices import LrSchedule
from seq2seq.config.schema import TrainConfig


class Schedule:
    """Owns the optimizer's learning rate over a run through one PyTorch scheduler; its
    :meth:`state_dict` (the scheduler's) goes into checkpoints."""

    def __init__(self, optimizer: Optimizer, scheduler: LRScheduler) -> None:
        self.optimizer = optimizer
        self.scheduler = scheduler

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def after_update(self) -> None:
        """Called after every optimizer step."""

    def after_validation(self, valid_loss: float) -> None:
        """Called after every validation with its (finite) loss."""

    def state_dict(self) -> dict[str, Any]:
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (what :meth:`state_dict` gave)."""
        self.scheduler.load_state_dict(state)


#: The linear warm-up takes at most 1/MAX_WARMUP_SHARE of the planned updates.
MAX_WARMUP_SHARE = 10


def linear_factor(updates: int, warmup: int, total_steps: int) -> float:
    """The share of the first rate after ``updates`` updates: rising over ``warmup`` updates,
    then falling linearly to 0 at ``total_steps``."""
    if updates < warmup:
        return (updates + 1) / warmup
    return max(0.0, (total_steps - updates) / max(total_steps - warmup, 1))


class LinearSchedule(Schedule):
    """Rise from 0 over ``warmup`` updates (at most a tenth of the run, so that a short run
    reaches its rate), then fall linearly to 0 at ``total_steps`` (the run's planned last
    update): ``LambdaLR`` with :func:`linear_factor`, stepped after every update."""

    def __init__(self, optimizer: Optimizer, warmup: int, total_steps: int) -> None:
        self.warmup = min(warmup, total_steps // MAX_WARMUP_SHARE)
        self.total_steps = total_steps
        super().__init__(optimizer, LambdaLR(optimizer, self.factor))

    def factor(self, updates: int) -> float:
        return linear_factor(updates, self.warmup, self.total_steps)

    def after_update(self) -> None:
        self.scheduler.step()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # checkpoints of the earlier, home-made schedule hold LambdaLR's keys but this one
        super().load_state_dict({"lr_lambdas": [None], **state})


class PlateauSchedule(Schedule):
    """Multiply the rate by ``factor`` after ``patience`` validations in a row without a
    valid loss better than the best by a relative 1e-4: ``ReduceLROnPlateau``, stepped at
    every validation."""

    def __init__(self, optimizer: Optimizer, factor: float, patience: int) -> None:
        super().__init__(
            optimizer, ReduceLROnPlateau(optimizer, mode="min", factor=factor, patience=patience)
        )

    def after_validation(self, valid_loss: float) -> None:
        self.scheduler.step(valid_loss)


def _linear(optimizer: Optimizer, train: TrainConfig, total: int) -> Schedule:
    return LinearSchedule(optimizer, train.warmup_steps, total)


def _plateau(optimizer: Optimizer, train: TrainConfig, total: int) -> Schedule:
    return PlateauSchedule(optimizer, train.lr_factor, train.lr_patience)


#: ``train.lr_schedule`` -> how to build it from the train config and the planned steps.
SCHEDULES = {LrSchedule.linear: _linear, LrSchedule.plateau: _plateau}
assert set(SCHEDULES) == set(LrSchedule), "every LrSchedule needs a builder"


def build_schedule(optimizer: Optimizer, train: TrainConfig, total_steps: int) -> Schedule:
    """The schedule ``train.lr_schedule`` names, planned over ``total_steps`` updates."""
    return SCHEDULES[train.lr_schedule](optimizer, train, total_steps)
