"""The two forms of tanh the additive energies may use: equal to torch.tanh to rounding, the
choice remembered per machine and kept per run (through resume), and fixed by SEQ2SEQ_TANH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from seq2seq.model import tanh
from seq2seq.model.checkpoint import load_checkpoint
from seq2seq.training.checkpointing import LAST
from seq2seq.training.trainer import Trainer
from tests.helpers.config import compose_config
from tests.helpers.runs import TINY_OVERRIDES


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test measures into a cache of its own, not the machine's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


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


def test_the_measurement_is_remembered_for_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later process (here: a cleared choice) reads the form instead of timing again, so
    a busy machine cannot flip it between two runs of one seed."""
    monkeypatch.delenv(tanh.ENV, raising=False)
    monkeypatch.setattr(tanh, "_chosen", {})
    measured = []
    monkeypatch.setattr(tanh, "_measure", lambda: measured.append(1) or "sigmoid")
    cpu = torch.device("cpu")
    assert tanh.chosen_form(cpu) == "sigmoid" and measured == [1]
    assert json.loads(tanh.cache_file().read_text()) == {tanh.machine_key(): "sigmoid"}
    monkeypatch.setattr(tanh, "_chosen", {})
    monkeypatch.setattr(tanh, "_measure", lambda: measured.append(2) or "tanh")
    assert tanh.chosen_form(cpu) == "sigmoid" and measured == [1]  # remembered, not re-timed


def test_an_unwritable_cache_still_measures(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(tanh.ENV, raising=False)
    monkeypatch.setattr(tanh, "_chosen", {})
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a file, not a folder
    monkeypatch.setattr(tanh, "_measure", lambda: "tanh")
    assert tanh.chosen_form(torch.device("cpu")) == "tanh"


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
