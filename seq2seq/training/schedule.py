"""Learning-rate schedules: the one place that decides when the rate changes.

A :class:`Schedule` is told after every update (:meth:`~Schedule.after_update`) and after
every validation (:meth:`~Schedule.after_validation`) and changes the optimizer's rate when
its rule says so; nothing else looks at ``train.lr_schedule``. Adding a schedule: a subclass
here, its name in :class:`~seq2seq.config.choices.LrSchedule` and its entry in
:data:`SCHEDULES` (checked complete at import).
"""

from __future__ import annotations

import math
from typing import Any

from seq2seq.config.choices import LrSchedule
from seq2seq.config.schema import TrainConfig
from seq2seq.training.adam import Adam


class Schedule:
    """Owns the optimizer's learning rate over a run; its :meth:`state_dict` goes into
    checkpoints. The base changes nothing.

    The schedules compute what ``torch.optim.lr_scheduler``'s ``LambdaLR`` and
    ``ReduceLROnPlateau`` compute and keep their state under the same keys, so a checkpoint
    written with those resumes here (``tests/test_schedule.py`` holds them equal); they are
    not used themselves because they accept ``torch.optim`` optimizers only (see
    :mod:`seq2seq.training.adam`).
    """

    def __init__(self, optimizer: Adam) -> None:
        self.optimizer = optimizer

    @property
    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def _set_lr(self, lr: float) -> None:
        self.optimizer.param_groups[0]["lr"] = lr

    def after_update(self) -> None:
        """Called after every optimizer step."""

    def after_validation(self, valid_loss: float) -> None:
        """Called after every validation with its (finite) loss."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (what :meth:`state_dict` gave)."""


#: The linear warm-up takes at most 1/MAX_WARMUP_SHARE of the planned updates.
MAX_WARMUP_SHARE = 10


class LinearSchedule(Schedule):
    """Rise from 0 over ``warmup`` updates (at most a tenth of the run, so that a short run
    reaches its rate), then fall linearly to 0 at ``total_steps`` (the run's planned last
    update); stepped after every update. The rate after ``n`` updates is the first rate
    (``initial_lr`` of the optimizer's group) times :meth:`factor` of ``n``."""

    def __init__(self, optimizer: Adam, warmup: int, total_steps: int) -> None:
        super().__init__(optimizer)
        self.warmup = min(warmup, total_steps // MAX_WARMUP_SHARE)
        self.total_steps = total_steps
        group = optimizer.param_groups[0]
        self.base_lr: float = group.setdefault("initial_lr", group["lr"])
        self.updates = 0
        self._set_lr(self.base_lr * self.factor(0))

    def factor(self, updates: int) -> float:
        if updates < self.warmup:
            return (updates + 1) / self.warmup
        return max(0.0, (self.total_steps - updates) / max(self.total_steps - self.warmup, 1))

    def after_update(self) -> None:
        self.updates += 1
        self._set_lr(self.base_lr * self.factor(self.updates))

    def state_dict(self) -> dict[str, Any]:
        """``LambdaLR``'s keys for what decides the rate."""
        return {"base_lrs": [self.base_lr], "last_epoch": self.updates, "_last_lr": [self.lr]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.base_lr, self.updates = state["base_lrs"][0], state["last_epoch"]


class PlateauSchedule(Schedule):
    """Multiply the rate by ``factor`` after ``patience`` validations in a row without a
    valid loss better than the best by a relative 1e-4; stepped at every validation."""

    THRESHOLD = 1e-4  # ReduceLROnPlateau's default, relative
    EPS = 1e-8  # a cut smaller than this is not made (as ReduceLROnPlateau)

    def __init__(self, optimizer: Adam, factor: float, patience: int) -> None:
        super().__init__(optimizer)
        self.factor, self.patience = factor, patience
        self.best = math.inf
        self.bad_validations = 0
        self.validations = 0

    def after_validation(self, valid_loss: float) -> None:
        self.validations += 1
        if valid_loss < self.best * (1.0 - self.THRESHOLD):
            self.best, self.bad_validations = valid_loss, 0
        else:
            self.bad_validations += 1
        if self.bad_validations > self.patience:
            lr = self.lr
            if lr - lr * self.factor > self.EPS:
                self._set_lr(lr * self.factor)
            self.bad_validations = 0

    def state_dict(self) -> dict[str, Any]:
        """``ReduceLROnPlateau``'s keys for what decides the next cut."""
        return {
            "best": self.best,
            "num_bad_epochs": self.bad_validations,
            "last_epoch": self.validations,
            "_last_lr": [self.lr],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.bad_validations = state["best"], state["num_bad_epochs"]
        self.validations = state["last_epoch"]


def _linear(optimizer: Adam, train: TrainConfig, total: int) -> Schedule:
    return LinearSchedule(optimizer, train.warmup_steps, total)


def _plateau(optimizer: Adam, train: TrainConfig, total: int) -> Schedule:
    return PlateauSchedule(optimizer, train.lr_factor, train.lr_patience)


#: ``train.lr_schedule`` -> how to build it from the train config and the planned steps.
SCHEDULES = {LrSchedule.linear: _linear, LrSchedule.plateau: _plateau}
assert set(SCHEDULES) == set(LrSchedule), "every LrSchedule needs a builder"


def build_schedule(optimizer: Adam, train: TrainConfig, total_steps: int) -> Schedule:
    """The schedule ``train.lr_schedule`` names, planned over ``total_steps`` updates."""
    return SCHEDULES[train.lr_schedule](optimizer, train, total_steps)
