"""The two forms of tanh the additive energies may use: equal to torch.tanh to rounding, the
choice kept per process and per run (through resume), and fixed by SEQ2SEQ_TANH."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from seq2seq.model import tanh
from seq2seq.model.checkpoint import load_checkpoint
from seq2seq.training.checkpointing import LAST
from seq2seq.training.trainer import Trainer
from tests.helpers.config import compose_config
from tests.helpers.runs import TINY_OVERRIDES


@pytest.mark.parametrize("form", tanh.FORMS)
def test_each_form_is_tanh_to_float32_rounding(form: str) -> None:
    x = torch.linspace(-12, 12, 4001)
    torch.testing.assert_close(tanh._KERNELS[form](x.clone()), torch.tanh(x), atol=1e-6, rtol=0)


def test_the_choice_is_measured_once_and_can_be_fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tanh, "_chosen", {})
    measured = []
    monkeypatch.setattr(tanh, "_measure", lambda: measured.append(1) or "sigmoid")
    cpu = torch.device("cpu")
    assert tanh.chosen_form(cpu) == "sigmoid" == tanh.chosen_form(cpu) and measured == [1]
    monkeypatch.setattr(tanh, "_chosen", {})
    monkeypatch.setenv(tanh.ENV, "tanh")
    assert tanh.chosen_form(cpu) == "tanh" and measured == [1]
    x = torch.randn(5)
    torch.testing.assert_close(tanh.tanh_(x.clone()), torch.tanh(x))


def test_the_measurement_names_a_form() -> None:
    assert tanh._measure() in tanh.FORMS


def test_a_run_keeps_its_form_through_checkpoint_and_resume(
    tmp_path: Path, toy_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forms round differently, so a resumed run must not measure again (on a loaded
    machine the measurement may pick the other one) but continue with the recorded form."""
    monkeypatch.delenv(tanh.ENV, raising=False)
    monkeypatch.setattr(tanh, "_chosen", {})
    monkeypatch.setattr(tanh, "_measure", lambda: "sigmoid")
    cfg = compose_config(*TINY_OVERRIDES, f"data.dir={toy_corpus}", "attention=additive")
    first = Trainer(cfg, tmp_path)
    assert first.numerics == {"tanh": "sigmoid"}
    first._save(LAST, first._rng_record())
    assert load_checkpoint(tmp_path / "checkpoints" / LAST).numerics == {"tanh": "sigmoid"}

    monkeypatch.setattr(tanh, "_chosen", {})
    monkeypatch.setattr(tanh, "_measure", lambda: "tanh")  # this process would measure tanh
    cfg.resume = True
    resumed = Trainer(cfg, tmp_path)
    assert resumed.numerics == {"tanh": "sigmoid"}
    assert tanh.chosen_form(torch.device("cpu")) == "sigmoid"
