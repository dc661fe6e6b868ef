"""Why training ends: the one place that decides it.

:class:`StopRules` is asked after every update (:meth:`~StopRules.after_update`) and after
every validation (:meth:`~StopRules.after_validation`); each returns the reason to stop, or
None. Adding a stop reason: a check in one of the two methods (and its option in the schema).
"""

from __future__ import annotations

from collections.abc import Callable

from seq2seq.config.schema import TrainConfig
from seq2seq.training.distributed import ProcessGroup
from seq2seq.training.state import TrainState

StopCondition = Callable[[TrainState], bool]
"""An extra reason for :meth:`Trainer.fit` to end, asked before and after every update."""


class StopRules:
    """The configured limits (``train.max_steps``, ``max_epochs``, ``patience``,
    ``stop_at_exact_match``) and an optional extra :data:`StopCondition`."""

    def __init__(self, train: TrainConfig, should_stop: StopCondition | None = None) -> None:
        self.max_steps = train.max_steps
        self.max_epochs = train.max_epochs
        self.patience = train.patience
        self.target = train.stop_at_exact_match
        self.should_stop = should_stop

    def limit_reached(self, state: TrainState) -> str | None:
        """The step or epoch limit, if reached."""
        if self.max_steps > 0 and state.step >= self.max_steps:
            return f"train.max_steps={self.max_steps} reached"
        if self.max_epochs > 0 and state.epoch >= self.max_epochs:
            return f"train.max_epochs={self.max_epochs} reached"
        return None

    def after_update(self, state: TrainState, group: ProcessGroup) -> str | None:
        """After an update (and before the first): the limits, or the extra stop condition
        holding on any process (asked only when there is one: no collective otherwise)."""
        reached = self.limit_reached(state)
        if reached is not None:
            return reached
        if self.should_stop is not None and group.any(self.should_stop(state)):
            return "the stop condition holds"
        return None

    def after_validation(self, state: TrainState) -> str | None:
        """After a validation: the exact-match target, or patience run out."""
        last = state.last_validation
        if last is not None and self.target is not None and last.valid_exact_match >= self.target:
            return f"valid exact match {last.valid_exact_match:.3f} >= train.stop_at_exact_match"
        if self.patience > 0 and state.bad_evals >= self.patience:
            return f"{state.bad_evals} validations without a better model (train.patience)"
        return None


def planned_updates(train: TrainConfig, batches_per_epoch: int) -> int:
    """Updates a run is planned for (what the schedule spans): ``train.max_steps``, else
    ``train.max_epochs`` epochs of ``batches_per_epoch``, the fewer where both are set."""
    epochs = train.max_epochs * batches_per_epoch if train.max_epochs > 0 else 0
    return min(s for s in (train.max_steps, epochs) if s > 0)
