"""Checkpoints written by the earlier code (home-made Adam and schedules, one bidirectional
``nn.GRU`` in the encoder; tests/fixtures/legacy_runs/README.md) load, resume and evaluate with
today's stock parts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from seq2seq.model.checkpoint import load_checkpoint, model_from_checkpoint
from tests.helpers.runs import REPO, run_script

FIXTURES = REPO / "tests" / "fixtures" / "legacy_runs"
#: What the fixtures were trained with (8 updates each, from the repository root).
LEGACY_OVERRIDES = [
    "data=tsv",
    "data.samples=[]",
    "train.eval_batch_size=64",
    "train.processes=1",
    "device=cpu",
    "model.tanh=tanh",
    "model.embed_size=8",
    "model.hidden_size=8",
    "train.max_steps=8",
    "train.eval_every=8",
    "train.batch_size=16",
    "data.dir=tests/fixtures/legacy_runs/corpus",
]
RUNS = {
    "additive": ["attention=additive", "model.encoder_layers=2"],
    "dot_plateau": ["attention=dot", "train.lr_schedule=plateau"],
}


@pytest.mark.parametrize("name", list(RUNS))
def test_the_weights_and_the_optimizer_state_load_into_todays_parts(name: str) -> None:
    path = FIXTURES / name / "checkpoints" / "last.pt"
    stored = torch.load(path, weights_only=True)["model"]
    assert any(key.startswith("encoder.rnn.") for key in stored)  # one nn.GRU's names
    saved = load_checkpoint(path)
    model, _, _ = model_from_checkpoint(saved)  # loads the weights, strictly
    state = model.state_dict()
    assert len(state) == len(stored)
    for key, value in saved.model.items():
        assert torch.equal(state[key], value), key
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(saved.optimizer)
    assert optimizer.param_groups[0]["betas"] == (0.9, 0.99)
    assert len(optimizer.state) == len(list(model.parameters()))


@pytest.mark.parametrize("name", list(RUNS))
def test_a_checkpoint_of_the_earlier_code_resumes_and_evaluates(tmp_path: Path, name: str) -> None:
    run = tmp_path / name
    shutil.copytree(FIXTURES / name, run)
    resumed = run_script(
        "train.py",
        *LEGACY_OVERRIDES,
        *RUNS[name],
        "train.max_steps=16",
        "resume=true",
        f"hydra.run.dir={run}",
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in (run / "train.log").read_text(encoding="utf-8")
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["steps"] == 16 and [h["step"] for h in metrics["history"]] == [8, 16]
    evaluated = run_script("evaluate.py", str(run))
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
