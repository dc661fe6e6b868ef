"""Learning-rate schedules: linear warm-up and decay to the planned last step; plateau cuts;
each schedule reacts only to its own event; the rates and the state of PyTorch's ``LambdaLR``
and ``ReduceLROnPlateau`` (a checkpoint of either resumes here); the registry and the schema
agree."""

from __future__ import annotations

import random

import pytest
import torch

from seq2seq.config.choices import LrSchedule
from seq2seq.training.adam import Adam
from seq2seq.training.schedule import SCHEDULES, LinearSchedule, PlateauSchedule, build_schedule
from seq2seq.training.stopping import planned_updates
from tests.helpers.config import compose_config


def optimizer(lr: float = 1.0) -> Adam:
    return Adam([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def torch_optimizer(lr: float) -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def test_linear_schedule_warms_up_then_falls_to_zero_at_the_last_step():
    cfg = compose_config("train.lr_schedule=linear", "train.lr=1.0", "train.warmup_steps=2")
    sgd = optimizer()
    schedule = build_schedule(sgd, cfg.train, total_steps=20)
    lrs = []
    for _ in range(20):
        lrs.append(schedule.lr)
        sgd.step()
        schedule.after_update()
        schedule.after_validation(1.0)  # no effect on a linear schedule
    assert lrs[:4] == pytest.approx([0.5, 1.0, 1.0, 17 / 18])
    assert lrs[-2:] == pytest.approx([2 / 18, 1 / 18])
    assert schedule.lr == 0.0


@pytest.mark.parametrize(("total", "warmup_lrs"), [(40, [0.25, 0.5, 0.75, 1.0]), (20, [0.5, 1.0])])
def test_the_warm_up_takes_at_most_a_tenth_of_a_short_run(total, warmup_lrs):
    cfg = compose_config("train.lr_schedule=linear", "train.lr=1.0", "train.warmup_steps=200")
    sgd = optimizer()
    schedule = build_schedule(sgd, cfg.train, total_steps=total)
    lrs = []
    for _ in warmup_lrs:
        lrs.append(schedule.lr)
        sgd.step()
        schedule.after_update()
    assert lrs == pytest.approx(warmup_lrs)  # 200 asked, a tenth of the run taken


def test_plateau_schedule_cuts_the_rate_after_stalled_validations():
    cfg = compose_config("train.lr_schedule=plateau", "train.lr_factor=0.5", "train.lr_patience=1")
    schedule = build_schedule(optimizer(), cfg.train, total_steps=6)
    for loss in (1.0, 0.9, 0.95, 0.95):
        schedule.after_update()  # no effect on a plateau schedule
        schedule.after_validation(loss)
    assert schedule.lr == 0.5


@pytest.mark.parametrize("name", list(LrSchedule))
def test_a_schedule_resumes_where_it_stopped(name: str) -> None:
    cfg = compose_config(f"train.lr_schedule={name}", "train.warmup_steps=2", "train.lr_factor=0.5")
    first = build_schedule(optimizer(), cfg.train, total_steps=20)
    for loss in (1.0, 1.0, 1.0):
        first.optimizer.step()
        first.after_update()
        first.after_validation(loss)
    second = build_schedule(optimizer(), cfg.train, total_steps=20)
    second.optimizer.load_state_dict(first.optimizer.state_dict())  # as a checkpoint does
    second.load_state_dict(first.state_dict())
    for schedule in (first, second):
        schedule.optimizer.step()
        schedule.after_update()
        schedule.after_validation(1.0)
    assert second.state_dict() == first.state_dict()


@pytest.mark.parametrize(("warmup", "total"), [(4, 50), (100, 50), (0, 7), (3, 3)])
def test_the_linear_schedule_is_lambda_lr_rate_for_rate_and_in_its_checkpoint(warmup, total):
    ours = LinearSchedule(optimizer(3e-3), warmup, total)
    theirs_optimizer = torch_optimizer(3e-3)
    factor = ours.factor
    theirs = torch.optim.lr_scheduler.LambdaLR(theirs_optimizer, lambda step: factor(step))
    for _ in range(total + 2):
        assert ours.lr == theirs_optimizer.param_groups[0]["lr"]  # exactly: the same floats
        state = theirs.state_dict()
        assert ours.state_dict() == {key: state[key] for key in ours.state_dict()}
        theirs_optimizer.step()
        theirs.step()
        ours.after_update()
    assert ours.optimizer.param_groups[0]["initial_lr"] == 3e-3


def test_the_plateau_schedule_is_reduce_lr_on_plateau_cut_for_cut_and_in_its_checkpoint():
    near = [1.0, 0.99995, 0.99991, 0.9999]  # within the relative 1e-4: not better
    losses = near + random.Random(0).choices([1.0, 0.99995, 0.9, 0.8, 0.7, 0.8, 0.5], k=60)
    for patience in (0, 1, 3):
        ours = PlateauSchedule(optimizer(3e-3), factor=0.3, patience=patience)
        theirs_optimizer = torch_optimizer(3e-3)
        theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(
            theirs_optimizer, mode="min", factor=0.3, patience=patience
        )
        for loss in losses:
            ours.after_validation(loss)
            theirs.step(loss)
            assert ours.lr == theirs_optimizer.param_groups[0]["lr"]
            state = theirs.state_dict()
            assert ours.state_dict() == {key: state[key] for key in ours.state_dict()}
        assert ours.lr < 3e-3 * 0.3**2  # it did cut, more than once


@pytest.mark.parametrize("name", list(LrSchedule))
def test_a_checkpoint_of_pytorchs_scheduler_resumes_here(name: str) -> None:
    """What this project's checkpoints held before its own schedules: PyTorch's state."""
    cfg = compose_config(f"train.lr_schedule={name}", "train.warmup_steps=2", "train.lr_factor=0.5")
    theirs_optimizer = torch_optimizer(cfg.train.lr)
    straight = build_schedule(optimizer(cfg.train.lr), cfg.train, total_steps=20)
    if name == "linear":
        theirs = torch.optim.lr_scheduler.LambdaLR(theirs_optimizer, straight.factor)
    else:
        theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(
            theirs_optimizer, mode="min", factor=0.5, patience=cfg.train.lr_patience
        )
    losses = [1.0, 0.9, 0.95, 0.97, 0.96, 0.99, 0.8, 0.85]
    for loss in losses[:4]:
        theirs_optimizer.step()
        theirs.step() if name == "linear" else theirs.step(loss)
        straight.after_update()
        straight.after_validation(loss)
    resumed = build_schedule(optimizer(cfg.train.lr), cfg.train, total_steps=20)
    resumed.optimizer.param_groups[0].update(
        {k: v for k, v in theirs_optimizer.param_groups[0].items() if k != "params"}
    )
    resumed.load_state_dict(theirs.state_dict())
    for loss in losses[4:]:
        for schedule in (straight, resumed):
            schedule.after_update()
            schedule.after_validation(loss)
        assert resumed.lr == straight.lr
    assert resumed.state_dict() == straight.state_dict()


def test_every_schedule_the_schema_accepts_exists_and_no_other():
    assert set(SCHEDULES) == set(LrSchedule)


@pytest.mark.parametrize(
    ("limits", "planned"),
    [
        (("train.max_steps=0", "train.max_epochs=3"), 30),  # epochs alone: 3 × 10 batches
        (("train.max_steps=25", "train.max_epochs=0"), 25),  # steps alone
        (("train.max_steps=25", "train.max_epochs=3"), 25),  # both: the fewer
        (("train.max_steps=40", "train.max_epochs=3"), 30),
    ],
)
def test_the_schedule_is_planned_over_the_fewer_of_max_steps_and_max_epochs(limits, planned):
    assert planned_updates(compose_config(*limits).train, batches_per_epoch=10) == planned
