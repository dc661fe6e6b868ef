"""Where training stands: the one record every checkpoint saves and resume restores."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class TrainState:
    """Where training stands; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_bleu: float = -1.0
    best_loss: float = math.inf
    best_step: int = 0
    bad_evals: int = 0
    train_seconds: float = 0.0
    history: list[dict[str, float]] = field(default_factory=list)
