"""The configuration: every group option composes, the schema owns the defaults, validation
names what is wrong, and a typo fails before training."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from seq2seq.config.schema import Config, validate
from seq2seq.errors import UserError
from tests.helpers.config import compose_config
from tests.helpers.runs import REPO, run_script

CONF = str(REPO / "conf")
GROUP_OPTIONS = {
    "attention": ["none", "additive", "dot", "multihead"],
    "data": ["synthetic", "tatoeba", "tsv"],
    "model": ["default"],
    "train": ["default"],
}


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
        ("data.src_column=-1", r"data.src_column must not be negative, got -1"),
        ("data.tgt_column=-2", r"data.tgt_column must not be negative, got -2"),
        ("data.alignment_column=-1", r"data.alignment_column must not be negative \(null = "),
        ("data.tgt_column=0", r"data.src_column and data.tgt_column are both column 0; "),
        ("data.alignment_column=1", r"data.tgt_column and data.alignment_column are both "),
        ("train.stop_at_exact_match=5", r"train.stop_at_exact_match must be in \[0, 1\] or null"),
        ("train.stop_at_exact_match=-0.5", r"train.stop_at_exact_match must be in \[0, 1\]"),
        ("train.num_threads=1000", r"train.num_threads=1000 is more than the \d+ CPU cores? "),
        ("device=tpu", r"device=tpu is unknown; use auto, cpu, cuda, cuda:N or mps"),
        ("device=gpu", r"device=gpu is unknown; use auto, cpu, cuda, cuda:N or mps"),
    ],
)
def test_validate_rejects_out_of_range_values(override, message):
    cfg = compose_config(*override.split())
    with pytest.raises(UserError, match=message):
        validate(cfg)


@pytest.mark.parametrize(
    "overrides",
    [
        ["data.alignment_column=null"],
        ["data.src_column=1", "data.tgt_column=0", "data.alignment_column=null"],
        ["train.stop_at_exact_match=1"],
        ["train.stop_at_exact_match=0"],
        ["device=cuda:3"],  # a name validate accepts; whether the GPU is there is runtime's
        ["device=mps"],
    ],
)
def test_validate_accepts_the_edges(overrides):
    validate(compose_config(*overrides))


def test_as_many_threads_as_cores_is_accepted(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    validate(compose_config("train.num_threads=3"))
    with pytest.raises(UserError, match=r"train.num_threads=4 is more than the 3 CPU cores"):
        validate(compose_config("train.num_threads=4"))


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


def test_the_default_config_is_the_schema():
    """conf/ sets nothing that the schema's defaults do not already say (one owner)."""
    composed = OmegaConf.to_container(compose_config(), resolve=True)
    schema = OmegaConf.to_container(OmegaConf.structured(Config), resolve=True)
    composed.pop("hydra", None)
    assert composed == schema


@pytest.mark.parametrize("option", ["none", "additive", "dot"])
def test_single_head_options_set_only_the_type(option):
    text = (REPO / "conf" / "attention" / f"{option}.yaml").read_text(encoding="utf-8")
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert keys == ["type"]
