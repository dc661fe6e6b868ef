"""The training app end to end: configs, run folder, TensorBoard, checkpoints, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.config.schema import register_configs, validate
from seq2seq.errors import UserError
from seq2seq.training.schedule import build_scheduler
from tests.conftest import REPO, TINY_OVERRIDES, run_script

CONF = str(REPO / "conf")
GROUP_OPTIONS = {
    "attention": ["none", "additive", "dot", "multihead"],
    "data": ["synthetic", "tatoeba", "tsv"],
    "model": ["default"],
    "train": ["default"],
}


def compose_config(*overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.mark.parametrize(
    ("group", "option"), [(g, o) for g, options in GROUP_OPTIONS.items() for o in options]
)
def test_every_group_option_composes_and_validates(group, option):
    cfg = compose_config(f"{group}={option}", *(["data.dir=x"] if option == "tsv" else []))
    validate(cfg)
    assert {"seed", "device", "resume", "data", "model", "attention", "train"} <= set(cfg)
    assert cfg.data.dir and cfg.train.max_epochs >= 0


def test_required_names_exist():
    cfg = compose_config()
    for name in (
        "seed", "device", "data.dir", "train.batch_size", "train.lr", "train.max_steps",
        "train.max_epochs", "train.eval_every", "train.patience", "train.clip_grad_norm",
        "train.teacher_forcing", "model.embed_size", "model.hidden_size",
        "attention.num_heads", "resume",
    ):  # fmt: skip
        node = cfg
        for part in name.split("."):
            node = node[part]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.hidden_size=-4", "model.hidden_size must be positive"),
        ("train.batch_size=0", "train.batch_size must be at least 1"),
        ("train.lr=0", "train.lr must be positive"),
        ("attention=multihead attention.num_heads=3", "must divide"),
        ("model.decoder=transformer", "model.decoder='transformer' is unknown"),
        ("train.lr_schedule=cosine", "train.lr_schedule='cosine' is unknown"),
        ("train.warmup_steps=-1", "train.warmup_steps must not be negative"),
    ],
)
def test_validate_rejects_out_of_range_values(override, message):
    cfg = compose_config(*override.split())
    with pytest.raises(UserError, match=message):
        validate(cfg)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("attention=addtive", "Could not find 'attention/addtive'"),
        ("train.bach_size=8", "bach_size"),
        ("train.lr=fast", "train.lr"),
    ],
)
def test_bad_overrides_fail_before_training_with_hydra_message(override, expected, tmp_path):
    result = run_script("train.py", override, f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "checkpoints").exists()


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
    overrides = [o for o in TINY_OVERRIDES if not o.startswith("train.max_steps")]
    result = run_script(
        "train.py", *overrides, "train.max_steps=36", f"data.dir={toy_corpus}", "attention=dot",
        "resume=true", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "resumed from" in (run_dir / "train.log").read_text(encoding="utf-8")
    steps = [e.step for e in scalar_tags(run_dir).Scalars("loss/train")]
    assert steps[0] == 25 and steps[-1] == 36
    assert json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))["steps"] == 36


def test_training_into_an_existing_run_folder_is_refused(tiny_run, toy_corpus):
    run_dir = tiny_run("additive")
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
        "train.py", *TINY_OVERRIDES, f"data.dir={toy_corpus}", f"hydra.run.dir={run_dir}",
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
        "train.py", *TINY_OVERRIDES, f"data.dir={toy_corpus}", f"hydra.run.dir={run_dir}",
        "resume=true", "train.lr_schedule=linear",
    )  # fmt: skip
    assert result.returncode == 2
    assert "train.lr_schedule is 'plateau' in the checkpoint, 'linear' now" in result.stderr
    assert (run_dir / "checkpoints/last.pt").read_bytes() == before
