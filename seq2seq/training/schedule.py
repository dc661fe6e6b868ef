"""Learning-rate schedules: the one place that decides when the rate changes.

A :class:`Schedule` is told after every update (:meth:`~Schedule.after_update`) and after
every validation (:meth:`~Schedule.after_validation`) and changes the optimizer's rate when
its rule says so; nothing else looks at ``train.lr_schedule``. Adding a schedule: a subclass
here, its name in :class:`~seq2seq.config.choices.LrSchedule` and its entry in
:data:`SCHEDULES` (checked complete at import).
"""

from __future__ import annotations

from typing import Any

import torch

from seq2seq.config.choices import LrSchedule
from seq2seq.config.schema import TrainConfig


class Schedule:
    """Owns the optimizer's learning rate over a run through a torch scheduler
    (:attr:`scheduler`), whose state goes into checkpoints. The base changes nothing."""

    scheduler: torch.optim.lr_scheduler.LRScheduler | torch.optim.lr_scheduler.ReduceLROnPlateau

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.optimizer = optimizer

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
        self.scheduler.load_state_dict(state)


#: The linear warm-up takes at most 1/MAX_WARMUP_SHARE of the planned updates.
MAX_WARMUP_SHARE = 10


class LinearSchedule(Schedule):
    """Rise from 0 over ``warmup`` updates (at most a tenth of the run, so that a short run
    reaches its rate), then fall linearly to 0 at ``total_steps`` (the run's planned last
    update); stepped after every update."""

    def __init__(self, optimizer: torch.optim.Optimizer, warmup: int, total_steps: int) -> None:
        super().__init__(optimizer)
        warmup = min(warmup, total_steps // MAX_WARMUP_SHARE)

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            return max(0.0, (total_steps - step) / max(total_steps - warmup, 1))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    def after_update(self) -> None:
        self.scheduler.step()


class PlateauSchedule(Schedule):
    """Multiply the rate by ``factor`` after ``patience`` validations without a better valid
    loss; stepped at every validation."""

    def __init__(self, optimizer: torch.optim.Optimizer, factor: float, patience: int) -> None:
        super().__init__(optimizer)
        self.scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=factor, patience=patience
        )

    def after_validation(self, valid_loss: float) -> None:
        self.scheduler.step(valid_loss)


def _linear(optimizer: torch.optim.Optimizer, train: TrainConfig, total: int) -> Schedule:
    return LinearSchedule(optimizer, train.warmup_steps, total)


def _plateau(optimizer: torch.optim.Optimizer, train: TrainConfig, total: int) -> Schedule:
    return PlateauSchedule(optimizer, train.lr_factor, train.lr_patience)


#: ``train.lr_schedule`` -> how to build it from the train config and the planned steps.
SCHEDULES = {LrSchedule.linear: _linear, LrSchedule.plateau: _plateau}
assert set(SCHEDULES) == set(LrSchedule), "every LrSchedule needs a builder"


def build_schedule(
    optimizer: torch.optim.Optimizer, train: TrainConfig, total_steps: int
) -> Schedule:
    """The schedule ``train.lr_schedule`` names, planned over ``total_steps`` updates."""
    return SCHEDULES[train.lr_schedule](optimizer, train, total_steps)
