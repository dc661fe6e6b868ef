"""The configuration: every group option composes into the typed schema, the schema owns the
defaults, each section names what is wrong when it is built, and a typo fails before
training."""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from seq2seq.choices import AttentionType
from seq2seq.config.schema import Config, to_plain
from seq2seq.data.config import DataConfig
from seq2seq.errors import UserError
from seq2seq.training.stopping import planned_updates
from tests.helpers.config import compose_config, compose_raw
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
def test_every_group_option_composes_into_the_typed_schema(group, option):
    cfg = compose_config(f"{group}={option}", *(["data.dir=x"] if option == "tsv" else []))
    assert isinstance(cfg, Config) and isinstance(cfg.data, DataConfig)
    assert isinstance(cfg.attention.type, AttentionType)
    assert cfg.data.dir and cfg.train.max_epochs >= 0


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ((), "additive"),
        (("attention=dot",), "dot"),
        (("model=transformer",), "transformer"),
        (("model=transformer", "attention.num_heads=2"), "transformer"),
    ],
)
def test_a_run_folder_is_named_after_its_variant(overrides, name):
    """``outputs/<variant>/<time>`` and a sweep's ``<variant>_seed<seed>``: the Transformer's
    runs are the Transformer's (they were filed under its attention, ``multihead``, where a
    sweep over both models would put two jobs in one folder)."""
    hydra = compose_raw(*overrides, "seed=3", with_hydra=True).hydra
    assert hydra.run.dir.split("/")[:2] == ["outputs", name]
    assert hydra.sweep.subdir == f"{name}_seed3"


def test_the_plain_config_holds_names_not_enums():
    """Checkpoints load with weights_only: the stored config is plain data."""
    plain = to_plain(compose_config("attention=dot"))
    assert type(plain["attention"]["type"]) is str and plain["attention"]["type"] == "dot"
    assert type(plain["train"]["lr_schedule"]) is str and type(plain["model"]["tanh"]) is str
    assert plain == to_plain(compose_config("attention=dot"))
    assert set(plain) == {f.name for f in dataclasses.fields(Config)}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.hidden_size=-4", "model.hidden_size must be positive"),
        ("train.batch_size=0", "train.batch_size must be at least 1"),
        ("train.lr=0", "train.lr must be positive"),
        ("attention=multihead attention.num_heads=3", "must divide"),
        ("model.decoder=transformer", r"Invalid value 'transformer', expected one of \[luong, "),
        ("train.lr_schedule=cosine", r"Invalid value 'cosine', expected one of \[linear, plat"),
        ("train.alignment_schedule=linear", r"'linear', expected one of \[triangle, constant\]"),
        ("train.alignment_peak=0.9", r"0 < peak < end <= 1, got alignment_peak=0.9, alig"),
        ("train.alignment_end=1.5", r"0 < peak < end <= 1, got alignment_peak=0.4, alig"),
        ("model.tanh=Tanh", r"Invalid value 'Tanh', expected one of \[auto, tanh, sigmoid\]"),
        ("train.processes=two", r"train.processes='two': use auto or a whole number"),
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
def test_out_of_range_values_are_one_line_errors(override, message):
    with pytest.raises(UserError, match=message):
        compose_config(*override.split())


@pytest.mark.parametrize(
    "overrides",
    [
        ["data.alignment_column=null"],
        ["data.src_column=1", "data.tgt_column=0", "data.alignment_column=null"],
        ["train.stop_at_exact_match=1"],
        ["train.stop_at_exact_match=0"],
        ["device=cuda:3"],  # a name the schema accepts; whether the GPU is there is runtime's
        ["device=mps"],
    ],
)
def test_the_edges_are_accepted(overrides):
    compose_config(*overrides)


def test_as_many_threads_as_cores_is_accepted(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    compose_config("train.num_threads=3")
    with pytest.raises(UserError, match=r"train.num_threads=4 is more than the 3 CPU cores"):
        compose_config("train.num_threads=4")


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
    composed = OmegaConf.to_container(compose_raw(), resolve=True)
    schema = OmegaConf.to_container(OmegaConf.structured(Config), resolve=True)
    composed.pop("hydra", None)
    assert composed == schema


@pytest.mark.parametrize("option", ["none", "additive", "dot"])
def test_single_head_options_set_only_the_type(option):
    text = (REPO / "conf" / "attention" / f"{option}.yaml").read_text(encoding="utf-8")
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert keys == ["type"]


def test_the_synthetic_budget_is_updates_and_real_corpora_train_by_epochs():
    """The default corpus trains for 2,500 updates (2.5 passes over its 64,000 pairs); a real
    corpus keeps its epochs, never cut by the synthetic corpus' update budget."""
    default = compose_config()
    assert (default.train.max_steps, default.data.train_size) == (2500, 64000)
    assert planned_updates(default.train, batches_per_epoch=64000 // 64) == 2500
    for data in (("data=tatoeba",), ("data=tsv", "data.dir=corpus")):
        train = compose_config(*data).train
        assert train.max_steps == 0 and train.max_epochs > 0
        assert planned_updates(train, batches_per_epoch=1000) == train.max_epochs * 1000


def test_tatoeba_with_the_transformer_gets_its_own_preset_not_the_synthetic_one():
    """model=transformer comes after data=tatoeba, so its dropout 0.0 would win; the
    data_model preset (conf/data_model/tatoeba_transformer.yaml) sets the Transformer's own."""
    preset = OmegaConf.load(REPO / "conf" / "data_model" / "tatoeba_transformer.yaml")
    assert preset.model.dropout > 0
    tatoeba = compose_config("data=tatoeba", "model=transformer")
    assert tatoeba.model.kind == "transformer" and tatoeba.model.dropout == preset.model.dropout
    corpus = compose_config("data=tatoeba").train  # the corpus's schedule, rate and beam ...
    assert tatoeba.train == dataclasses.replace(corpus, adam_beta2=preset.train.adam_beta2)
    assert preset.train.adam_beta2 == 0.98 != corpus.adam_beta2  # ... with its own beta2
    assert compose_config("model=transformer").model.dropout == 0.0  # synthetic: unchanged
    gru_preset = OmegaConf.load(REPO / "conf" / "data" / "tatoeba.yaml").model.dropout
    assert compose_config("data=tatoeba").model.dropout == gru_preset  # the GRU keeps its own
    chosen = compose_config("data=tatoeba", "model=transformer", "model.dropout=0.3")
    assert chosen.model.dropout == 0.3  # the command line still wins
    # the comparison's Tatoeba budget still composes with the transformer row (its 10 epochs)
    row = compose_config("+experiment=compare_tatoeba", "+variant=transformer")
    assert row.model.kind == "transformer" and row.train.max_epochs == 10


def test_the_tatoeba_comparison_keeps_its_budget_model_when_the_single_preset_grows():
    """+experiment=compare_tatoeba states its own smaller GRU (docs/tatoeba.md's budget table),
    so widening data=tatoeba's single model does not move the comparison's rows."""
    single = compose_config("data=tatoeba").model
    budget = compose_config("+experiment=compare_tatoeba", "+variant=additive").model
    assert (budget.embed_size, budget.hidden_size, budget.dropout) == (128, 128, 0.2)
    assert (single.embed_size, single.hidden_size) == (256, 256)  # the larger single model
    assert compose_config().model.embed_size == 64  # the synthetic default: unchanged


def test_the_transformer_on_the_synthetic_corpus_gets_its_tuned_optimizer_alone():
    """conf/data_model/synthetic_transformer.yaml: Adam's rate and beta2 for the Transformer on
    the synthetic corpus; the GRU and Tatoeba's Transformer keep theirs."""
    preset = OmegaConf.load(REPO / "conf" / "data_model" / "synthetic_transformer.yaml")
    transformer = compose_config("model=transformer").train
    assert transformer.adam_beta2 == preset.train.adam_beta2 != compose_config().train.adam_beta2
    assert transformer.lr == preset.train.lr != compose_config().train.lr
    assert transformer.label_smoothing == compose_config().train.label_smoothing > 0  # everyone's
    # guided, the Transformer keeps a constant weight; the GRU the schema's triangle
    assert transformer.alignment_schedule == preset.train.alignment_schedule == "constant"
    assert compose_config().train.alignment_schedule == "triangle"
    assert compose_config().train == compose_config("attention=multihead").train  # schema's
    assert compose_config().train.adam_beta2 == 0.99  # the GRU's (docs/performance.md)
    assert compose_config("data=tatoeba").train.adam_beta2 == 0.999  # Tatoeba's GRU preset's
    tatoeba = compose_config("data=tatoeba", "model=transformer").train
    assert tatoeba.lr == compose_config("data=tatoeba").train.lr  # the corpus's own rate
    row = compose_config("+experiment=compare", "+variant=transformer").train
    assert row == transformer  # the comparison's Transformer row is the tuned one
    chosen = compose_config("model=transformer", "train.adam_beta2=0.95").train
    assert chosen.adam_beta2 == 0.95  # the command line still wins


def test_dot_attention_on_the_synthetic_corpus_gets_its_tuned_rate_alone():
    """conf/data_attention/synthetic_dot.yaml: Adam's rate for dot attention on the synthetic
    corpus, the same for `attention=dot` and the comparison's dot row; nothing else moves, the
    other attentions and Tatoeba keep theirs, and the command line still wins."""
    preset = OmegaConf.load(REPO / "conf" / "data_attention" / "synthetic_dot.yaml")
    default, dot = compose_config().train, compose_config("attention=dot").train
    assert dot.lr == preset.train.lr != default.lr
    assert dot == dataclasses.replace(default, lr=preset.train.lr)
    assert compose_config("+experiment=compare", "+variant=dot").train == dot
    for other in ("none", "additive", "multihead"):
        assert compose_config(f"attention={other}").train == default
    tatoeba = compose_config("data=tatoeba").train
    assert compose_config("data=tatoeba", "attention=dot").train == tatoeba
    assert compose_config("attention=dot", "train.lr=1e-3").train.lr == 1e-3
