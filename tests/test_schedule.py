"""Learning-rate schedules (PyTorch's ``LambdaLR`` and ``ReduceLROnPlateau``): linear warm-up
and decay to the planned last step; plateau cuts; each schedule reacts only to its own event;
a schedule resumes where it stopped, from its own state or the earlier home-made schedules'
(the keys they kept); the registry and the schema agree."""

from __future__ import annotations

import pytest
import torch

from seq2seq.choices import LrSchedule
from seq2seq.training.schedule import SCHEDULES, LinearSchedule, PlateauSchedule, build_schedule
from seq2seq.training.stopping import planned_updates
from tests.helpers.config import compose_config


def optimizer(lr: float = 1.0) -> torch.optim.Optimizer:
    return torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def test_linear_schedule_warms_up_then_falls_to_zero_at_the_last_step():
    cfg = compose_config("train.lr_schedule=linear", "train.lr=1.0", "train.warmup_steps=2")
    adam = optimizer()
    schedule = build_schedule(adam, cfg.train, total_steps=20)
    lrs = []
    for _ in range(20):
        lrs.append(schedule.lr)
        adam.step()
        schedule.after_update()
        schedule.after_validation(1.0)  # no effect on a linear schedule
    assert lrs[:4] == pytest.approx([0.5, 1.0, 1.0, 17 / 18])
    assert lrs[-2:] == pytest.approx([2 / 18, 1 / 18])
    assert schedule.lr == 0.0


@pytest.mark.parametrize(("total", "warmup_lrs"), [(40, [0.25, 0.5, 0.75, 1.0]), (20, [0.5, 1.0])])
def test_the_warm_up_takes_at_most_a_tenth_of_a_short_run(total, warmup_lrs):
    cfg = compose_config("train.lr_schedule=linear", "train.lr=1.0", "train.warmup_steps=200")
    adam = optimizer()
    schedule = build_schedule(adam, cfg.train, total_steps=total)
    lrs = []
    for _ in warmup_lrs:
        lrs.append(schedule.lr)
        adam.step()
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


#: What the earlier, home-made schedules kept in checkpoints: LambdaLR's and
#: ReduceLROnPlateau's keys for what decides the rate (nothing else).
HOME_MADE_KEYS = {
    LrSchedule.linear: ("base_lrs", "last_epoch", "_last_lr"),
    LrSchedule.plateau: ("best", "num_bad_epochs", "last_epoch", "_last_lr"),
}


@pytest.mark.parametrize("name", list(LrSchedule))
def test_a_checkpoint_of_the_home_made_schedules_resumes(name: str) -> None:
    cfg = compose_config(f"train.lr_schedule={name}", "train.warmup_steps=2", "train.lr_factor=0.5")
    straight = build_schedule(optimizer(cfg.train.lr), cfg.train, total_steps=20)
    losses = [1.0, 0.9, 0.95, 0.97, 0.96, 0.99, 0.8, 0.85]
    for loss in losses[:4]:
        straight.optimizer.step()
        straight.after_update()
        straight.after_validation(loss)
    saved = {key: straight.state_dict()[key] for key in HOME_MADE_KEYS[name]}
    resumed = build_schedule(optimizer(cfg.train.lr), cfg.train, total_steps=20)
    resumed.optimizer.load_state_dict(straight.optimizer.state_dict())
    resumed.load_state_dict(saved)
    for loss in losses[4:]:
        for schedule in (straight, resumed):
            schedule.optimizer.step()
            schedule.after_update()
            schedule.after_validation(loss)
        assert resumed.lr == straight.lr
    bookkeeping = "_step_count"  # LRScheduler's count of its own steps, for a warning only
    assert {k: v for k, v in resumed.state_dict().items() if k != bookkeeping} == {
        k: v for k, v in straight.state_dict().items() if k != bookkeeping
    }


def test_the_linear_factor_is_the_rate_after_each_update():
    schedule = LinearSchedule(optimizer(3e-3), warmup=4, total_steps=50)
    rates = []
    for _ in range(52):
        rates.append(schedule.lr)
        schedule.optimizer.step()
        schedule.after_update()
    assert rates == [3e-3 * schedule.factor(n) for n in range(52)]
    assert schedule.optimizer.param_groups[0]["initial_lr"] == 3e-3


def test_the_plateau_schedule_cuts_only_after_its_patience():
    schedule = PlateauSchedule(optimizer(1.0), factor=0.3, patience=1)
    near = [1.0, 0.99995, 0.99991]  # within the relative 1e-4 of the best: not better
    rates = []
    for loss in near:
        schedule.after_validation(loss)
        rates.append(schedule.lr)
    assert rates == pytest.approx([1.0, 1.0, 0.3])


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
