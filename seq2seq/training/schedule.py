"""Learning-rate schedules: warm-up and linear decay planned for the run, or plateau cuts."""

from __future__ import annotations

import torch
from omegaconf import DictConfig


def build_scheduler(
    optimizer: torch.optim.Optimizer, train: DictConfig, total_steps: int
) -> torch.optim.lr_scheduler.LRScheduler | torch.optim.lr_scheduler.ReduceLROnPlateau:
    """The learning-rate schedule ``train.lr_schedule`` names.

    linear:  rise from 0 over ``warmup_steps`` updates, then fall linearly to 0 at
             ``total_steps``; stepped after every update.
    plateau: multiply by ``lr_factor`` after ``lr_patience`` validations without a better
             valid loss; stepped at every validation.
    """
    if train.lr_schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min", factor=train.lr_factor, patience=train.lr_patience
        )
    warmup = train.warmup_steps

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(total_steps - warmup, 1))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
