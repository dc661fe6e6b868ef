"""The trainer's Adam against ``torch.optim.Adam``: the same weights and moments bit for bit
over many updates (a parameter without a gradient left alone), the same state_dict, each
one's checkpoint resumed by the other; and a training process that never imports
``torch._dynamo`` (what this Adam is for)."""

from __future__ import annotations

import copy
import subprocess
import sys

import torch
from torch import nn

from seq2seq.training.adam import Adam
from tests.helpers.runs import REPO, script_env


def twin_models(seed: int = 0) -> tuple[nn.Module, nn.Module]:
    """Two equal small models with a layer that only some updates reach (``rare``)."""
    torch.manual_seed(seed)
    first = nn.ModuleDict({"a": nn.Linear(5, 7), "b": nn.GRUCell(7, 3), "rare": nn.Linear(3, 2)})
    return first, copy.deepcopy(first)


def loss_of(model: nn.Module, x: torch.Tensor, use_rare: bool) -> torch.Tensor:
    h = model["b"](torch.tanh(model["a"](x)))
    return (model["rare"](h).pow(2).sum() if use_rare else h.sum()) + h.pow(2).mean()


def train(model: nn.Module, optimizer, steps: range, lr_of=None) -> None:
    """``steps`` updates on seeded random batches (the rare layer every third one); a
    schedule-like ``lr_of(step)`` changes the rate between updates."""
    for step in steps:
        generator = torch.Generator().manual_seed(step)
        x = torch.randn(4, 5, generator=generator) * (1 + step % 5)
        optimizer.zero_grad()
        loss_of(model, x, use_rare=step % 3 == 0).backward()
        optimizer.step()
        if lr_of is not None:
            optimizer.param_groups[0]["lr"] = lr_of(step)


def assert_bitwise_equal(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key


def test_updates_equal_torch_adam_bit_for_bit():
    mine, reference = twin_models()
    ours = Adam(mine.parameters(), lr=3e-3, betas=(0.9, 0.98))
    theirs = torch.optim.Adam(reference.parameters(), lr=3e-3, betas=(0.9, 0.98))
    decay = lambda step: 3e-3 * (1 - step / 60)  # noqa: E731
    train(mine, ours, range(50), decay)
    train(reference, theirs, range(50), decay)
    assert_bitwise_equal(mine.state_dict(), reference.state_dict())
    assert ours.state_dict()["param_groups"] == theirs.state_dict()["param_groups"]
    our_state, their_state = ours.state_dict()["state"], theirs.state_dict()["state"]
    assert our_state.keys() == their_state.keys()
    for index in our_state:
        assert_bitwise_equal(our_state[index], their_state[index])
    assert our_state[0]["step"].dtype == torch.float32 and our_state[0]["step"].item() == 50


def test_a_parameter_without_a_gradient_is_not_touched_and_has_no_state():
    model, _ = twin_models()
    optimizer = Adam(model.parameters(), lr=1e-2)
    rare = model["rare"].weight.detach().clone()
    optimizer.zero_grad()
    loss_of(model, torch.randn(4, 5), use_rare=False).backward()
    optimizer.step()
    assert torch.equal(model["rare"].weight, rare)
    assert model["rare"].weight not in optimizer.state
    assert all(p.grad is not None for p in model["a"].parameters())
    optimizer.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_each_resumes_the_others_checkpoint_exactly():
    """Ten updates, a state_dict taken (as a checkpoint does) and loaded into a fresh optimizer
    of the other kind on a copy of the weights, ten more updates: as if never interrupted."""
    for first_kind, second_kind in ((Adam, torch.optim.Adam), (torch.optim.Adam, Adam)):
        straight, interrupted = twin_models(seed=1)
        once = first_kind(straight.parameters(), lr=1e-2)
        train(straight, once, range(20))
        first = first_kind(interrupted.parameters(), lr=1e-2)
        train(interrupted, first, range(10))
        saved = first.state_dict()
        second = second_kind(interrupted.parameters(), lr=5.0)  # the saved rate wins
        second.load_state_dict(saved)
        assert second.param_groups[0]["lr"] == 1e-2
        train(interrupted, second, range(10, 20))
        assert_bitwise_equal(interrupted.state_dict(), straight.state_dict())


def test_loaded_moments_are_copies_on_the_parameters_dtype():
    model, _ = twin_models()
    optimizer = Adam(model.parameters(), lr=1e-2)
    train(model, optimizer, range(3))
    saved = optimizer.state_dict()
    saved["state"][0]["exp_avg"] = saved["state"][0]["exp_avg"].double()
    fresh = Adam(model.parameters(), lr=1e-2)
    fresh.load_state_dict(saved)
    loaded = fresh.state[model["a"].weight]
    assert loaded["exp_avg"].dtype == torch.float32
    loaded["exp_avg_sq"].zero_()
    assert optimizer.state[model["a"].weight]["exp_avg_sq"].abs().sum() > 0


def test_a_training_process_does_not_import_torch_dynamo():
    """The model built, its parameters counted on the meta device, one update with the
    schedule: ``torch._dynamo`` (about 2 s of start-up) stays unimported."""
    program = """
import dataclasses
import sys
import torch
from seq2seq.config.schema import ModelConfig
from seq2seq.model.memory import count_parameters
from seq2seq.training.adam import Adam
from seq2seq.training.build import build_model
from seq2seq.training.schedule import LinearSchedule
from tests.helpers.models import tiny_spec
for spec in (tiny_spec("additive"), dataclasses.replace(tiny_spec("dot"), kind="transformer")):
    network = build_model(spec, ModelConfig(), torch.device("cpu"))
    assert count_parameters(spec) == sum(p.numel() for p in network.parameters())
    optimizer = Adam(network.parameters(), lr=1e-3)
    schedule = LinearSchedule(optimizer, warmup=2, total_steps=10)
    sum(p.sum() for p in network.parameters()).backward()
    torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
    optimizer.step()
    schedule.after_update()
print("torch._dynamo" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=script_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
