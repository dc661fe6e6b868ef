"""Learning-rate schedules: linear warm-up and decay to the planned last step; plateau cuts."""

from __future__ import annotations

import pytest
import torch

from seq2seq.training.schedule import build_scheduler
from tests.test_config import compose_config


def test_linear_schedule_warms_up_then_falls_to_zero_at_the_last_step():
    cfg = compose_config("train.lr_schedule=linear", "train.lr=1.0", "train.warmup_steps=2")
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = build_scheduler(optimizer, cfg.train, total_steps=6)
    lrs = []
    for _ in range(6):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs == pytest.approx([0.5, 1.0, 1.0, 0.75, 0.5, 0.25])
    assert optimizer.param_groups[0]["lr"] == 0.0


def test_plateau_schedule_cuts_the_rate_after_stalled_validations():
    cfg = compose_config("train.lr_schedule=plateau", "train.lr_factor=0.5", "train.lr_patience=1")
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = build_scheduler(optimizer, cfg.train, total_steps=6)
    for loss in (1.0, 0.9, 0.95, 0.95):
        scheduler.step(loss)
    assert optimizer.param_groups[0]["lr"] == 0.5
