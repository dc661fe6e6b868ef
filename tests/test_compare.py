"""Tests for seq2seq.analysis.compare, scripts/compare.py and conf/experiment/compare.yaml."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.analysis.compare import (
    Stat,
    build_comparison,
    compare,
    find_run_dirs,
    format_stat,
    load_run,
    load_runs,
    mean_sd,
    render_csv,
    render_markdown,
    resolve_out_dir,
    valid_loss_series,
)
from seq2seq.errors import UserError
from tests.conftest import REPO, run_script

OUTPUT_FILES = (
    "comparison.md",
    "comparison.csv",
    "comparison.json",
    "bleu_by_length.png",
    "aer.png",
    "valid_loss.png",
)


# --------------------------------------------------------------------------- helpers


def fake_metrics(
    attention: str = "additive",
    seed: int = 0,
    *,
    bleu: float = 20.0,
    aer: float | None = 0.5,
    num_heads: int = 1,
    data: str = "synthetic",
    steps: tuple[int, ...] = (10, 20),
    losses: tuple[float, ...] = (2.0, 1.0),
    by_length: dict[str, float] | None = None,
    decoder: str | None = None,
) -> dict[str, Any]:
    """A minimal metrics.json like train.py writes (only what the comparison reads);
    ``decoder=None`` leaves the key out, as in runs made before ``model.decoder``."""
    has_attention = attention != "none"
    return {
        **({"decoder": decoder} if decoder else {}),
        "attention": attention,
        "num_heads": num_heads if has_attention else 0,
        "seed": seed,
        "data": data,
        "parameters": 1000,
        "steps": steps[-1],
        "best_step": steps[-1],
        "train_seconds": 5.0 + seed,
        "test": {
            "bleu": bleu,
            "chrf": 2 * bleu,
            "exact_match": bleu / 100,
            "bleu_by_length": by_length or {"1-10": bleu + 5, "11-20": bleu - 5},
            "bucket_sizes": {"1-10": 8, "11-20": 2},
            "aer": aer if has_attention else None,
            "aer_best_head": (aer - 0.1 if aer is not None else None) if has_attention else None,
            "attention_entropy": 1.0 if has_attention else None,
        },
        "history": [
            {"step": s, "valid_loss": loss, "valid_bleu": 0.0}
            for s, loss in zip(steps, losses, strict=True)
        ],
    }


def write_run(folder: Path, metrics: dict[str, Any] | str) -> Path:
    """A run folder holding ``metrics`` (a dict, or raw text for broken files)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = metrics if isinstance(metrics, str) else json.dumps(metrics)
    (folder / "metrics.json").write_text(text, encoding="utf-8")
    return folder


def fake_sweep(root: Path) -> Path:
    """A sweep folder laid out like Hydra's: <attention>_seed<seed>/metrics.json."""
    bleus = {"none": (10.0, 12.0, 14.0), "additive": (20.0, 22.0, 27.0)}
    for attention, values in bleus.items():
        for seed, bleu in enumerate(values):
            write_run(root / f"{attention}_seed{seed}", fake_metrics(attention, seed, bleu=bleu))
    write_run(
        root / "multihead_seed0",
        fake_metrics("multihead", 0, bleu=25.0, aer=0.4, num_heads=4),
    )
    (root / "multirun.yaml").write_text("hydra: {}\n", encoding="utf-8")
    return root


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# --------------------------------------------------------------------------- statistics


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


def test_format_stat() -> None:
    assert format_stat(Stat(12.345, 0.5, 3), ".2f") == "12.35 ± 0.50"
    assert format_stat(Stat(12.345, None, 1), ".2f") == "12.35 ± –"
    assert format_stat(Stat(None, None, 0), ".2f") == "n/a"
    assert format_stat(Stat(9486.0, 0.0, 3), ",.0f", show_sd=False) == "9,486"


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


def test_valid_loss_mean_when_steps_align_else_per_seed(tmp_path: Path) -> None:
    write_run(tmp_path / "s0", fake_metrics(seed=0, losses=(2.0, 1.0)))
    write_run(tmp_path / "s1", fake_metrics(seed=1, losses=(4.0, 3.0)))
    (aligned,) = build_comparison(load_runs([tmp_path])).variants
    series = valid_loss_series(aligned)
    assert list(series) == ["additive"]
    (first, second) = series["additive"]
    assert first[0] == 10 and first[1] == (pytest.approx(3.0), pytest.approx(math.sqrt(2)))
    assert second[0] == 20 and second[1][0] == pytest.approx(2.0)

    write_run(tmp_path / "s2", fake_metrics(seed=2, steps=(15, 30), losses=(5.0, 4.0)))
    (ragged,) = build_comparison(load_runs([tmp_path])).variants
    series = valid_loss_series(ragged)
    assert sorted(series) == ["additive seed 0", "additive seed 1", "additive seed 2"]
    assert series["additive seed 2"] == [(15, 5.0), (30, 4.0)]


def test_markdown_rows_and_warnings(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    extra = write_run(tmp_path / "again", fake_metrics("none", 0, bleu=11.0))
    comparison = build_comparison(load_runs([sweep, extra]))
    markdown = render_markdown(comparison)
    assert "| none | 4 | 11.75 ± 1.71 |" in markdown
    assert "| multihead | 1 | 25.00 ± – |" in markdown
    assert "| variant | 1-10 (8) | 11-20 (2) |" in markdown
    assert any("seed 0" in w for w in comparison.warnings)
    assert "## Warnings" in markdown


# --------------------------------------------------------------------------- finding and loading


def test_find_run_dirs_searches_recursively_and_dedupes(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    nested = write_run(tmp_path / "sweep" / "group" / "dot_seed0", fake_metrics("dot"))
    write_run(nested / "inner", fake_metrics("dot", 9))  # inside a run folder: not a run
    found = find_run_dirs([sweep, sweep / "none_seed0", sweep / "none_seed0" / "metrics.json"])
    assert len(found) == 8
    assert nested.resolve() in found
    assert (nested / "inner").resolve() not in found


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"attention": "dot", "seed": 0}), "missing key 'data'"),
        (json.dumps(fake_metrics() | {"test": {"bleu": 1.0}}), "missing key 'test.chrf'"),
        (json.dumps(fake_metrics() | {"best_step": "ten"}), "'best_step' should be a number"),
        (json.dumps(fake_metrics() | {"history": [{"step": 1}]}), "'history' should be"),
    ],
)
def test_broken_metrics_name_the_file(tmp_path: Path, content: str, fragment: str) -> None:
    run = write_run(tmp_path / "broken_run", content)
    with pytest.raises(UserError, match=fragment) as caught:
        load_run(run)
    assert str(run / "metrics.json") in str(caught.value)


def test_mixed_datasets_refused_unless_allowed(tmp_path: Path) -> None:
    write_run(tmp_path / "a", fake_metrics(data="synthetic"))
    write_run(tmp_path / "b", fake_metrics(seed=1, data="tatoeba"))
    runs = load_runs([tmp_path])
    with pytest.raises(UserError, match=r"different datasets.*--allow-mixed-data"):
        build_comparison(runs)
    comparison = build_comparison(runs, allow_mixed_data=True)
    assert comparison.datasets == ["synthetic", "tatoeba"]
    assert any("different datasets" in w for w in comparison.warnings)


def test_out_dir_rules(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    run = sweep / "none_seed0"
    assert resolve_out_dir([sweep], None) == sweep
    assert resolve_out_dir([run], tmp_path / "out") == tmp_path / "out"
    with pytest.raises(UserError, match="--out DIR is required"):
        resolve_out_dir([run], None)
    with pytest.raises(UserError, match="--out DIR is required"):
        resolve_out_dir([sweep, sweep], None)
    with pytest.raises(UserError, match="inside the run folder"):
        resolve_out_dir([sweep], run)
    with pytest.raises(UserError, match="inside the run folder"):
        resolve_out_dir([sweep], run / "tb" / "comparison")


def test_library_writes_into_the_sweep_and_rewrites_cleanly(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    before = {p: p.read_bytes() for p in sweep.rglob("*") if p.is_file()}
    compare([sweep])
    compare([sweep])  # a second comparison replaces the first, TensorBoard file included
    for name in OUTPUT_FILES:
        assert (sweep / name).stat().st_size > 0, name
    assert len(list((sweep / "tb").glob("events.out.tfevents.*"))) == 1
    assert all(path.read_bytes() == data for path, data in before.items())  # runs untouched


# --------------------------------------------------------------------------- the CLI


def test_cli_compares_two_real_runs(tiny_run, tmp_path: Path) -> None:
    runs = [tiny_run("none"), tiny_run("additive")]
    out = tmp_path / "comparison"
    result = run_script("compare.py", *map(str, runs), "--out", str(out))
    assert result.returncode == 0, result.stderr
    for name in OUTPUT_FILES:
        assert (out / name).stat().st_size > 0, name

    markdown = (out / "comparison.md").read_text(encoding="utf-8")
    assert markdown in result.stdout
    table_rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    for variant in ("none", "additive"):
        assert sum(row.startswith(f"| {variant} |") for row in table_rows) == 2  # both tables

    with (out / "comparison.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["variant"] for row in rows] == ["none", "additive"]
    assert float(rows[1]["bleu_mean"]) >= 0.0 and rows[1]["bleu_sd"] == ""
    assert rows[0]["aer_mean"] == "" and rows[1]["aer_mean"] != ""

    report = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    by_name = {v["variant"]: v for v in report["variants"]}
    assert set(by_name) == {"none", "additive"}
    for variant in by_name.values():
        assert variant["n_seeds"] == 1
        for stat in variant["metrics"].values():
            assert set(stat) == {"mean", "sd", "n"}
    assert by_name["additive"]["metrics"]["aer"]["mean"] is not None

    events = list((out / "tb").glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0
    accumulator = EventAccumulator(str(out / "tb"))
    accumulator.Reload()
    tags = accumulator.Tags()
    assert set(tags["images"]) == {
        "comparison/bleu_by_length",
        "comparison/aer",
        "comparison/valid_loss",
    }
    assert "comparison/table/text_summary" in tags["tensors"]


def test_cli_nonexistent_path(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_sweep"
    assert_one_line_error(run_script("compare.py", str(missing)), str(missing), "does not exist")


def test_cli_folder_without_runs(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    assert_one_line_error(run_script("compare.py", str(tmp_path / "empty")), "no run folders")


def test_cli_broken_metrics_names_the_file(tmp_path: Path) -> None:
    fake_sweep(tmp_path)
    broken = write_run(tmp_path / "dot_seed0", '{"attention": "dot", ')
    result = run_script("compare.py", str(tmp_path))
    assert_one_line_error(result, str(broken / "metrics.json"), "not valid JSON")
    assert not (tmp_path / "comparison.md").exists()


# --------------------------------------------------------------------------- the preset


def test_compare_preset_sweeps_every_variant_and_seed() -> None:
    """``+experiment=compare`` composes and expands to the 4 × 3 runs, all valid configs."""
    from hydra import compose, initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from seq2seq.config.schema import register_configs, validate

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", ["+experiment=compare"], return_hydra_config=True)
        params = dict(cfg.hydra.sweeper.params)
        assert params == {"attention": "none,additive,dot,multihead", "seed": "0,1,2"}
        overrides = OverridesParser.create().parse_overrides(
            [f"{k}={v}" for k, v in params.items()]
        )
        (jobs,) = BasicSweeper.split_arguments(overrides, None)
        assert len(jobs) == 12
        seen = set()
        for job in jobs:
            job_cfg = compose("config", ["+experiment=compare", *job])
            validate(job_cfg)
            seen.add((job_cfg.attention.type, job_cfg.seed))
    assert seen == {(a, s) for a in ("none", "additive", "dot", "multihead") for s in (0, 1, 2)}
