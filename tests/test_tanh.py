"""The two forms of tanh the additive energies may use (``model.tanh``): equal to torch.tanh
to rounding, ``auto`` resolved at the start of a run without touching the run's random
streams or the home folder, the resolved form recorded in the checkpoint and kept by resume."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from seq2seq.choices import TanhForm
from seq2seq.errors import UserError
from seq2seq.model.checkpoint import Checkpoint, load_checkpoint
from seq2seq.model.fused import tanh
from seq2seq.model.fused.scorers import ADDITIVE_SCORERS
from seq2seq.training.checkpointing import LAST
from seq2seq.training.trainer import Trainer
from tests.helpers.config import compose_config
from tests.helpers.runs import TINY_OVERRIDES


@pytest.mark.parametrize("form", list(tanh.KERNELS))
def test_each_form_is_tanh_to_float32_rounding(form: str) -> None:
    x = torch.linspace(-12, 12, 4001)
    torch.testing.assert_close(tanh.KERNELS[form](x.clone()), torch.tanh(x), atol=1e-6, rtol=0)
    assert ADDITIVE_SCORERS[form].tanh is tanh.KERNELS[form]


def test_a_named_form_is_taken_as_it_is_and_auto_measures_on_the_cpu_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measured: list[int] = []
    monkeypatch.setattr(tanh, "measure", lambda: measured.append(1) or (TanhForm.sigmoid, {}))
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert tanh.resolve("tanh", cpu) == "tanh" and tanh.resolve("sigmoid", cuda) == "sigmoid"
    assert measured == []
    assert tanh.resolve("auto", cuda) == "tanh" and measured == []
    assert tanh.resolve("auto", cpu) == "sigmoid" and measured == [1]


def test_the_measurement_names_a_form_and_leaves_the_run_s_random_streams_alone() -> None:
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    form, seconds = tanh.measure()
    assert form in ("tanh", "sigmoid") and set(seconds) == {"tanh", "sigmoid"}
    torch.testing.assert_close(torch.rand(3), expected, rtol=0, atol=0)


def test_a_run_keeps_its_form_through_checkpoint_and_resume(
    tmp_path: Path, toy_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forms round differently, so a resumed run must not measure again (on a loaded
    machine the measurement may pick the other one) but continue with the recorded form; and
    nothing is remembered outside the run (no file under the home folder)."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setattr(tanh, "measure", lambda: (TanhForm.sigmoid, {}))
    overrides = (*TINY_OVERRIDES, f"data.dir={toy_corpus}", "attention=additive")
    run = tmp_path / "run"
    first = Trainer(compose_config(*overrides, "model.tanh=auto"), run)
    assert first.spec.tanh == "sigmoid" and first.model.decoder.fused.tanh == "sigmoid"
    first._save(first._rng_record(), LAST)
    assert load_checkpoint(run / "checkpoints" / LAST).model_spec["tanh"] == "sigmoid"

    monkeypatch.setattr(tanh, "measure", lambda: (TanhForm.tanh, {}))  # would pick tanh now
    resumed = Trainer(compose_config(*overrides, "model.tanh=auto", "resume=true"), run)
    assert resumed.spec.tanh == "sigmoid" and resumed.model.decoder.fused.tanh == "sigmoid"
    assert not home.exists()

    with pytest.raises(UserError, match=r"cannot resume: model.tanh is 'auto' in the checkpoint"):
        Trainer(compose_config(*overrides, "model.tanh=tanh", "resume=true"), run)


def test_checkpoints_before_model_tanh_keep_the_form_they_recorded(
    tmp_path: Path, toy_corpus: Path
) -> None:
    trainer = Trainer(compose_config(*TINY_OVERRIDES, f"data.dir={toy_corpus}"), tmp_path)
    stored = asdict(replace(trainer.spec))
    del stored["tanh"]
    old = Checkpoint(
        model={}, optimizer={}, scheduler={}, rng={}, state={}, model_spec=stored, vocab={},
        config={}, max_src_len=1, numerics={"tanh": "sigmoid"},
    )  # fmt: skip
    assert old.spec.tanh == "sigmoid"
    assert replace(old, numerics={}).spec.tanh == "tanh"
