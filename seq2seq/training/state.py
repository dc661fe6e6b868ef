"""Where training stands: the one record every checkpoint saves and resume restores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seq2seq.evaluation.summary import ValidationRecord
from seq2seq.records import from_plain, to_plain

#: Keys of older checkpoints: the best model's scores (now found from the history alone) and
#: the FLOPs training counted (now the benchmark's job).
_LEGACY_KEYS = ("best_bleu", "best_loss", "train_flops")


@dataclass
class TrainState:
    """Where training stands; saved in every checkpoint. Only :meth:`Trainer.fit` changes it.

    ``best_step`` is the step of the validation whose model is ``best.pt`` (0: none yet) and
    ``bad_evals`` counts the validations since, for ``train.patience``.
    """

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_step: int = 0
    bad_evals: int = 0
    train_seconds: float = 0.0
    # target tokens (<eos> included) of every update so far, over all processes
    train_tokens: int = 0
    history: list[ValidationRecord] = field(default_factory=list)
    # the process count of each part of the run, in order: a resume on another count adds one
    world_sizes: list[int] = field(default_factory=list)

    @property
    def best(self) -> ValidationRecord | None:
        """The validation record of ``best.pt``, or None before the first validation."""
        return next((r for r in self.history if r.step == self.best_step), None)

    @property
    def last_validation(self) -> ValidationRecord | None:
        return self.history[-1] if self.history else None

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, stored: dict[str, Any], key: str = "") -> TrainState:
        """From a checkpoint's ``state`` (older checkpoints' extra keys are dropped);
        :class:`~seq2seq.records.RecordError` names a field that does not fit, prefixed by
        ``key``."""
        return from_plain(cls, {k: v for k, v in stored.items() if k not in _LEGACY_KEYS}, key)
