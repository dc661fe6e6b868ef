"""Tests for seq2seq.analysis.compare.aggregate: variants and their statistics over seeds."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from seq2seq.analysis.compare import (
    Stat,
    build_comparison,
    load_runs,
    mean_sd,
    render_csv,
    render_markdown,
    to_json,
)
from seq2seq.errors import UserError
from tests.helpers.metrics import explained, fake_metrics, fake_sweep, write_run


def test_mean_sd_uses_sample_sd() -> None:
    stat = mean_sd([10.0, 20.0, 30.0])
    assert stat.mean == pytest.approx(20.0)
    assert stat.sd == pytest.approx(10.0)  # sqrt(((-10)² + 0 + 10²) / (3 - 1))
    assert stat.n == 3


def test_mean_sd_single_none_and_empty() -> None:
    assert mean_sd([7.5]) == Stat(7.5, None, 1)
    assert mean_sd([None, 4.0, None, 6.0]) == Stat(5.0, pytest.approx(math.sqrt(2)), 2)
    assert mean_sd([None, None]) == Stat(None, None, 0)
    assert mean_sd([]) == Stat(None, None, 0)


def test_aggregation_per_variant(tmp_path: Path) -> None:
    comparison = build_comparison(load_runs([fake_sweep(tmp_path)]))
    names = [v.name for v in comparison.variants]
    assert names == ["none", "additive", "multihead"]
    none, additive, multihead = comparison.variants

    assert additive.seeds == [0, 1, 2]
    assert additive.stats["bleu"].mean == pytest.approx(23.0)
    assert additive.stats["bleu"].sd == pytest.approx(math.sqrt((9 + 1 + 16) / 2))
    assert additive.stats["chrf"].mean == pytest.approx(46.0)
    assert additive.stats["exact_match"].mean == pytest.approx(0.23)
    assert additive.stats["train_seconds"].mean == pytest.approx(6.0)
    assert additive.stats["train_seconds"].sd == pytest.approx(1.0)
    assert additive.stats["aer"] == Stat(0.5, 0.0, 3)
    assert additive.stats["aer_best_head"].n == 0  # only reported for multi-head variants
    assert additive.bleu_by_length["1-10"].mean == pytest.approx(28.0)
    assert additive.bleu_by_length["11-20"].mean == pytest.approx(18.0)

    assert none.stats["bleu"] == Stat(pytest.approx(12.0), pytest.approx(2.0), 3)
    assert none.stats["aer"] == Stat(None, None, 0)
    assert none.stats["attention_entropy"].mean is None

    assert multihead.stats["bleu"] == Stat(25.0, None, 1)
    assert multihead.stats["aer_best_head"].mean == pytest.approx(0.3)
    assert comparison.buckets == ["1-10", "11-20"]
    assert comparison.bucket_sizes == {"1-10": 8, "11-20": 2}
    assert comparison.datasets == ["synthetic"]


def test_variant_order_and_head_counts(tmp_path: Path) -> None:
    specs = [("zeta", 1), ("multihead", 4), ("dot", 1), ("multihead", 8), ("none", 0)]
    for k, (attention, heads) in enumerate(specs):
        write_run(tmp_path / f"r{k}", fake_metrics(attention, num_heads=heads))
    comparison = build_comparison(load_runs([tmp_path]))
    names = [v.name for v in comparison.variants]
    assert names == ["none", "dot", "multihead-4h", "multihead-8h", "zeta"]


def test_decoder_arrangements_of_one_attention_become_separate_variants(tmp_path: Path) -> None:
    runs = [("additive", "luong", 90.0), ("additive", None, 80.0), ("dot", "luong", 95.0)]
    for k, (attention, decoder, bleu) in enumerate(runs):
        write_run(tmp_path / f"r{k}", fake_metrics(attention, decoder=decoder, bleu=bleu))
    comparison = build_comparison(load_runs([tmp_path]))
    assert [(v.name, v.decoder) for v in comparison.variants] == [
        ("additive-bahdanau", "bahdanau"),  # no decoder key: a run made before the option
        ("additive-luong", "luong"),
        ("dot", "luong"),
    ]
    assert comparison.variants[1].stats["bleu"].mean == 90.0
    assert "decoder" in render_csv(comparison).splitlines()[0].split(",")


def test_buckets_sorted_by_length(tmp_path: Path) -> None:
    write_run(tmp_path / "a", fake_metrics(by_length={"41+": 1.0, "1-10": 3.0}))
    write_run(tmp_path / "b", fake_metrics(seed=1, by_length={"11-20": 2.0, "1-10": 5.0}))
    comparison = build_comparison(load_runs([tmp_path]))
    assert comparison.buckets == ["1-10", "11-20", "41+"]
    (variant,) = comparison.variants
    assert variant.bleu_by_length["1-10"] == Stat(4.0, pytest.approx(math.sqrt(2)), 2)
    assert variant.bleu_by_length["41+"] == Stat(1.0, None, 1)


def test_mixed_datasets_refused_unless_allowed(tmp_path: Path) -> None:
    write_run(tmp_path / "a", fake_metrics(data="synthetic"))
    write_run(tmp_path / "b", fake_metrics(seed=1, data="tatoeba"))
    runs = load_runs([tmp_path])
    with pytest.raises(UserError, match=r"different datasets.*--allow-mixed-data"):
        build_comparison(runs)
    comparison = build_comparison(runs, allow_mixed_data=True)
    assert comparison.datasets == ["synthetic", "tatoeba"]
    assert any("different datasets" in w for w in comparison.warnings)


def settings(hidden_size: int, seed: int, **train: object) -> dict[str, object]:
    """A run's config as metrics.json records it (only the parts these tests vary)."""
    return {"seed": seed, "device": "cpu", "model": {"hidden_size": hidden_size, "dropout": 0.1},
            "train": {"num_threads": 1, **train}}  # fmt: skip


def test_runs_that_differ_in_a_setting_are_compared_apart(tmp_path: Path) -> None:
    """A sweep over model.hidden_size and seed: one row per hidden size, over both seeds."""
    for hidden in (32, 48):
        for seed in (0, 1):
            config = settings(hidden, seed, num_threads=seed + 1)  # threads: not a setting
            bleu = hidden + seed
            metrics = fake_metrics("additive", seed, bleu=bleu, config=config)
            write_run(tmp_path / f"additive_seed{seed}" / f"model.hidden_size={hidden}", metrics)
    comparison = build_comparison(load_runs([tmp_path]))
    names = [v.name for v in comparison.variants]
    assert names == ["additive model.hidden_size=32", "additive model.hidden_size=48"]
    small, large = comparison.variants
    assert small.settings == {"model.hidden_size": 32} and small.seeds == [0, 1]
    assert small.stats["bleu"].mean == pytest.approx(32.5)
    assert large.stats["bleu"].mean == pytest.approx(48.5)
    assert "| additive model.hidden_size=48 | 2 |" in render_markdown(comparison)
    header, first = render_csv(comparison).splitlines()[:2]
    row = dict(zip(header.split(","), first.split(","), strict=True))
    assert row["variant"] == "additive model.hidden_size=32"
    assert row["settings"] == "model.hidden_size=32"
    assert to_json(comparison)["variants"][1]["settings"] == {"model.hidden_size": 48}


def test_runs_that_differ_only_in_seed_and_machine_are_one_variant(tmp_path: Path) -> None:
    """The canonical sweep (variant × seed): one row per variant, named as before; the seed,
    the device and the threads are not what a row compares."""
    for seed in (0, 1, 2):
        config = settings(32, seed, num_threads=seed) | {"device": ["cpu", "cuda", "auto"][seed]}
        write_run(tmp_path / f"dot_seed{seed}", fake_metrics("dot", seed, config=config))
    write_run(tmp_path / "old_dot_seed3", fake_metrics("dot", 3))  # no config recorded
    (variant,) = build_comparison(load_runs([tmp_path])).variants
    assert (variant.name, variant.settings, variant.seeds) == ("dot", {}, [0, 1, 2, 3])


def test_two_corpora_of_one_name_are_refused_naming_them_and_their_runs(tmp_path: Path) -> None:
    """Runs copied without .hydra/ from two synthetic corpora: metrics.json's corpus
    fingerprint tells them apart."""
    first, second = "1" * 64, "2" * 64
    write_run(tmp_path / "a", fake_metrics("additive", 0, corpus_sha256=first))
    write_run(tmp_path / "b", fake_metrics("additive", 1, corpus_sha256=second))
    runs = load_runs([tmp_path])
    with pytest.raises(UserError) as caught:
        build_comparison(runs)
    message = str(caught.value)
    assert "the runs use different datasets" in message and "--allow-mixed-data" in message
    assert f"synthetic (corpus {first[:12]}): 1 run ({tmp_path / 'a'})" in message
    assert f"synthetic (corpus {second[:12]}): 1 run ({tmp_path / 'b'})" in message
    assert len(build_comparison(runs, allow_mixed_data=True).datasets) == 2


def test_the_explain_table_compares_what_evaluate_explain_recorded(tmp_path: Path) -> None:
    for seed, (uniform, grad) in enumerate([(10.0, 0.4), (14.0, 0.6)]):
        run = fake_metrics("additive", seed=seed)
        write_run(tmp_path / f"additive_seed{seed}", explained(run, uniform_bleu=uniform,
                                                               grad_aer=grad))  # fmt: skip
    write_run(tmp_path / "dot_seed0", fake_metrics("dot", seed=0))  # never explained
    comparison = build_comparison(load_runs([tmp_path]))
    additive, dot = comparison.variants
    assert additive.stats["bleu_uniform"] == Stat(12.0, pytest.approx(math.sqrt(8)), 2)
    assert additive.stats["aer_grad_x_input"].mean == pytest.approx(0.5)
    assert additive.stats["token_accuracy_gold"].mean == pytest.approx(0.95)
    assert additive.stats["bleu_shuffle"].n == 0  # not recorded
    assert dot.stats["bleu_uniform"] == Stat(None, None, 0)
    text = render_markdown(comparison)
    assert "## Attention put to the test" in text
    assert "| additive | 2 | 0.200 ± 0.000 | 0.500 ± 0.141 | n/a | n/a | 40.00 ± 0.00 | " in text
    assert "bleu_uniform_mean" in render_csv(comparison)
    variant = to_json(comparison)["variants"][0]
    assert variant["metrics"]["bleu_uniform"] == {"mean": 12.0, "sd": math.sqrt(8), "n": 2}


def test_no_explain_table_without_an_explained_run(tmp_path: Path) -> None:
    comparison = build_comparison(load_runs([fake_sweep(tmp_path)]))
    assert "Attention put to the test" not in render_markdown(comparison)
