"""scripts/train.py end to end: the run folder, TensorBoard, checkpoints, resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers.runs import SHARED_RUN_OVERRIDES, TINY_OVERRIDES, run_script


def scalar_tags(run_dir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(run_dir / "tb"), size_guidance={"images": 0, "scalars": 0})
    accumulator.Reload()
    return accumulator


def test_tiny_run_writes_the_whole_run_folder(tiny_run):
    run_dir = tiny_run("additive")
    for name in (
        ".hydra/config.yaml",
        "train.log",
        "metrics.json",
        "checkpoints/last.pt",
        "checkpoints/best.pt",
    ):
        assert (run_dir / name).is_file(), name
    events = scalar_tags(run_dir)
    tags = events.Tags()
    for tag in ("loss/train", "loss/valid", "valid/bleu", "valid/exact_match", "lr", "grad_norm"):
        assert tag in tags["scalars"], tag
    assert len(events.Scalars("loss/train")) == 24  # one point per step
    assert [e.step for e in events.Scalars("valid/bleu")] == [12, 24]
    assert any(tag.startswith("attention/") for tag in tags["images"])
    assert "samples/text_summary" in tags["tensors"]
    assert [p.name for p in (run_dir / "tb").iterdir() if p.is_dir()] == []  # no stray sub-runs
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["attention"] == "additive" and metrics["steps"] == 24
    for key in ("bleu", "chrf", "exact_match", "token_accuracy", "aer", "bleu_by_length"):
        assert key in metrics["test"], key


def test_run_without_attention_has_no_heatmaps(tiny_run):
    events = scalar_tags(tiny_run("none"))
    assert not [t for t in events.Tags()["images"] if t.startswith("attention/")]
    assert "valid/bleu" in events.Tags()["scalars"]


def test_checkpoint_is_plain_data_loadable_with_weights_only(tiny_run):
    payload = torch.load(tiny_run("additive") / "checkpoints/last.pt", weights_only=True)
    assert payload["state"]["step"] == 24
    assert payload["vocab"]["src"]["tokens"][:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert payload["config"]["attention"]["type"] == "additive"
    assert {"model", "optimizer", "scheduler", "rng", "model_spec"} <= set(payload)


def test_resume_starts_at_the_saved_step_and_continues(tiny_run, toy_corpus, tmp_path):
    source = tiny_run("dot")
    run_dir = tmp_path / "resumed"
    run_dir.mkdir()
    (run_dir / "checkpoints").mkdir()
    for name in ("last.pt", "best.pt"):  # a copy of the run folder's checkpoints
        (run_dir / "checkpoints" / name).write_bytes((source / "checkpoints" / name).read_bytes())
    overrides = [o for o in SHARED_RUN_OVERRIDES if not o.startswith("train.max_steps")]
    result = run_script(
        "train.py", *overrides, "train.max_steps=36", f"data.dir={toy_corpus}", "attention=dot",
        "resume=true", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "resumed from" in (run_dir / "train.log").read_text(encoding="utf-8")
    steps = [e.step for e in scalar_tags(run_dir).Scalars("loss/train")]
    assert steps[0] == 25 and steps[-1] == 36
    assert json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))["steps"] == 36


def test_training_into_an_existing_run_folder_is_refused(tiny_run, toy_corpus, tmp_path):
    run_dir = tmp_path / "run"  # a copy: the shared run stays out of reach of a failure here
    shutil.copytree(tiny_run("additive"), run_dir)
    before = (run_dir / "checkpoints/last.pt").read_bytes()
    result = run_script(
        "train.py", *TINY_OVERRIDES, f"data.dir={toy_corpus}", f"hydra.run.dir={run_dir}"
    )
    assert result.returncode == 2
    assert "already holds a training run; pass resume=true" in result.stderr
    assert "Traceback" not in result.stderr
    assert (run_dir / "checkpoints/last.pt").read_bytes() == before


def test_finished_run_resumed_without_best_checkpoint_tests_the_last_one(
    tiny_run, toy_corpus, tmp_path
):
    source = tiny_run("additive")
    run_dir = tmp_path / "copy"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.pt").write_bytes((source / "checkpoints/last.pt").read_bytes())
    result = run_script(
        "train.py", *SHARED_RUN_OVERRIDES, f"data.dir={toy_corpus}", f"hydra.run.dir={run_dir}",
        "resume=true",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "best.pt is missing; testing" in (run_dir / "train.log").read_text(encoding="utf-8")
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["steps"] == 24 and "bleu" in metrics["test"]


def test_resume_refuses_another_lr_schedule(tiny_run, toy_corpus):
    run_dir = tiny_run("additive")
    before = (run_dir / "checkpoints/last.pt").read_bytes()
    result = run_script(
        "train.py", *SHARED_RUN_OVERRIDES, f"data.dir={toy_corpus}", f"hydra.run.dir={run_dir}",
        "resume=true", "train.lr_schedule=plateau",
    )  # fmt: skip
    assert result.returncode == 2
    assert "train.lr_schedule is 'linear' in the checkpoint, 'plateau' now" in result.stderr
    assert (run_dir / "checkpoints/last.pt").read_bytes() == before
