"""Where a process computes: the device names it accepts (one line for any other), and
whether a model fits the machine's memory, counted without allocating it."""

from __future__ import annotations

import pytest
import torch

from seq2seq.errors import UserError
from seq2seq.model import Seq2Seq
from seq2seq.model.memory import check_fits_in_memory, count_parameters
from seq2seq.runtime import resolve_device
from tests.helpers.models import spec_of, tiny_spec


def visible_gpus(monkeypatch, count: int, mps: bool = False) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)


@pytest.mark.parametrize(
    ("gpus", "name", "expected"),
    [(0, "auto", "cpu"), (0, "cpu", "cpu"), (2, "auto", "cuda"), (2, "cuda", "cuda"),
     (2, "cuda:1", "cuda:1"), (0, "mps", None)],
)  # fmt: skip
def test_accepted_device_names(monkeypatch, gpus, name, expected):
    visible_gpus(monkeypatch, gpus, mps=expected is None)
    assert resolve_device(name) == torch.device(expected or "mps")


@pytest.mark.parametrize(
    ("gpus", "name", "message"),
    [
        (0, "tpu", "device=tpu is unknown; use auto, cpu, cuda, cuda:N or mps"),
        (0, "gpu", "device=gpu is unknown; use auto, cpu, cuda, cuda:N or mps"),
        (2, "cuda:x", "device=cuda:x is unknown; use auto, cpu, cuda, cuda:N or mps"),
        (2, "cuda:-1", "device=cuda:-1 is unknown; use auto, cpu, cuda, cuda:N or mps"),
        (0, "cuda", "device=cuda but no CUDA GPU is visible; use device=cpu or device=auto"),
        (0, "cuda:0", "device=cuda:0 but no CUDA GPU is visible; use device=cpu or device=auto"),
        (2, "cuda:5", "device=cuda:5 but 2 CUDA GPUs are visible (cuda:0 to cuda:1)"),
        (1, "cuda:1", "device=cuda:1 but 1 CUDA GPU is visible (cuda:0)"),
        (0, "mps", "device=mps but Apple's MPS is not available here; use device=cpu"),
    ],
)
def test_other_device_names_are_one_line(monkeypatch, gpus, name, message):
    visible_gpus(monkeypatch, gpus)
    with pytest.raises(UserError) as caught:
        resolve_device(name)
    assert str(caught.value).startswith(message)


def test_a_command_line_option_is_named_as_typed(monkeypatch):
    visible_gpus(monkeypatch, 0)
    with pytest.raises(UserError, match=r"^--device tpu is unknown"):
        resolve_device("tpu", option="--device")


# ------------------------------------------------------------------ does the model fit?
def test_parameters_are_counted_without_allocating_them():
    spec = tiny_spec("multihead")
    assert count_parameters(spec) == sum(p.numel() for p in Seq2Seq(spec).parameters())
    huge = spec_of(30, 30, hidden_size=100_000)  # about 100 GB of float32 weights
    assert count_parameters(huge) > 10**10


def test_a_model_too_large_for_the_memory_is_one_line_saying_how_much_it_needs(monkeypatch):
    gib = 1 << 30
    spec = spec_of(30, 30, hidden_size=20_000)
    needed = 16 * count_parameters(spec)
    monkeypatch.setattr("seq2seq.model.memory.available_memory", lambda: 20 * gib)
    with pytest.raises(UserError) as caught:
        check_fits_in_memory(spec)
    message = str(caught.value)
    assert message.startswith("model.hidden_size=20000 and model.embed_size=64 make ")
    assert f"needs about {needed / gib:.1f} GiB for its weights, gradients and optimizer " in (
        message
    )
    assert "this machine has 20.0 GiB available; lower model.hidden_size or model.embed_size" in (
        message
    )


def test_a_model_that_fits_or_an_unknown_memory_passes(monkeypatch):
    monkeypatch.setattr("seq2seq.model.memory.available_memory", lambda: 1 << 30)
    check_fits_in_memory(tiny_spec())
    monkeypatch.setattr("seq2seq.model.memory.available_memory", lambda: None)
    check_fits_in_memory(spec_of(30, 30, hidden_size=100_000))


def test_available_memory_reads_meminfo():
    from seq2seq.model.memory import available_memory

    memory = available_memory()
    assert memory is None or memory > 0
