"""Tests for seq2seq.analysis.compare as a whole: the library entry point, scripts/compare.py
and conf/experiment/compare.yaml; also the fake runs the other test_compare_* files use."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.analysis.compare import compare
from tests.helpers.metrics import fake_metrics, fake_sweep, write_run
from tests.helpers.runs import REPO, run_script

OUTPUT_FILES = (
    "comparison.md",
    "comparison.csv",
    "comparison.json",
    "bleu_by_length.png",
    "aer.png",
    "valid_loss.png",
    "explain_aer.png",
    "interventions.png",
)


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# --------------------------------------------------------------------------- the library


def test_library_writes_into_the_sweep_and_rewrites_cleanly(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    before = {p: p.read_bytes() for p in sweep.rglob("*") if p.is_file()}
    compare([sweep])
    compare([sweep])  # a second comparison replaces the first, TensorBoard file included
    for name in OUTPUT_FILES:
        assert (sweep / name).stat().st_size > 0, name
    assert len(list((sweep / "tb").glob("events.out.tfevents.*"))) == 1
    assert all(path.read_bytes() == data for path, data in before.items())  # runs untouched


def test_unknown_attention_type_is_compared_and_drawn(tmp_path: Path) -> None:
    """Runs of a type this version does not know (made by another version) still compare."""
    write_run(tmp_path / "sweep" / "old", fake_metrics("zeta"))
    write_run(tmp_path / "sweep" / "new", fake_metrics("dot"))
    comparison, out = compare([tmp_path / "sweep"])
    assert [v.name for v in comparison.variants] == ["dot", "zeta"]
    assert (out / "aer.png").stat().st_size > 0


# --------------------------------------------------------------------------- the CLI


def test_cli_compares_two_real_runs(tiny_run, tmp_path: Path) -> None:
    runs = [tiny_run("none"), tiny_run("additive")]
    out = tmp_path / "comparison"
    # --out between the runs, as argparse allows elsewhere (it was refused as unrecognized)
    result = run_script("compare.py", str(runs[0]), "--out", str(out), str(runs[1]))
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
        "comparison/explain_aer",
        "comparison/interventions",
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
    """``+experiment=compare`` composes and expands to the 5 × 3 runs, all valid configs: the
    four attentions of the GRU and the Transformer."""
    from hydra import compose, initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from seq2seq.config.schema import register_configs, to_config

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", ["+experiment=compare"], return_hydra_config=True)
        params = dict(cfg.hydra.sweeper.params)
        assert params == {"+variant": "transformer,dot,additive,multihead,none", "seed": "0,1,2"}
        overrides = OverridesParser.create().parse_overrides(
            [f"{k}={v}" for k, v in params.items()]
        )
        (jobs,) = BasicSweeper.split_arguments(overrides, None)
        assert len(jobs) == 15
        seen = set()
        for job in jobs:
            job_cfg = to_config(compose("config", ["+experiment=compare", *job]))
            seen.add((job_cfg.model.kind, job_cfg.attention.type, job_cfg.seed))
    rows = [("rnn", a) for a in ("none", "additive", "dot", "multihead")]
    rows.append(("transformer", "multihead"))
    assert seen == {(*row, s) for row in rows for s in (0, 1, 2)}
