"""Tests for seq2seq.analysis.compare.runs and .outputs: finding, loading, where to write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.analysis.compare import find_run_dirs, load_run, load_sweep, resolve_out_dir
from seq2seq.errors import UserError
from tests.helpers.metrics import fake_metrics, fake_sweep, write_run


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
        (json.dumps(fake_metrics() | {"test": {"bleu": 1.0}}), "missing key 'test.loss'"),
        (json.dumps(fake_metrics() | {"best_step": "ten"}), "'best_step' should be an integer"),
        (json.dumps(fake_metrics() | {"history": [{"step": 1}]}), "key 'history.valid_loss'"),
        (json.dumps(fake_metrics() | {"history": 5}), "'history' should be a list"),
    ],
)
def test_broken_metrics_name_the_file(tmp_path: Path, content: str, fragment: str) -> None:
    run = write_run(tmp_path / "broken_run", content)
    with pytest.raises(UserError, match=fragment) as caught:
        load_run(run)
    assert str(run / "metrics.json") in str(caught.value)


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


def test_dataset_names_the_corpus_folder_as_resolved(tmp_path: Path) -> None:
    """Hydra saves the default data.dir with its ${.seed}-style references unresolved."""
    run = write_run(tmp_path / "run", fake_metrics("additive", 0, bleu=20.0))
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text(
        "data:\n  seed: 3\n  train_size: 50\n"
        "  dir: data/synthetic/seed${.seed}-${.train_size}-${oc.env:HOME}\n",
        encoding="utf-8",
    )
    assert load_run(run).dataset == "synthetic (data/synthetic/seed3-50-${oc.env:HOME})"


# ------------------------------------------------------------------ runs that did not finish
EVALUATIONS_ONLY = {"evaluations": {"test best.pt beam=1 data": {"split": "test"}}}


def unfinished(folder: Path, *parts: str) -> Path:
    """A folder that looks like a run (Hydra's record, a log, checkpoints) without results."""
    for part in parts:
        if part == "train.log":
            folder.mkdir(parents=True, exist_ok=True)
            (folder / part).write_text("training...\n", encoding="utf-8")
        else:
            (folder / part).mkdir(parents=True)
    return folder


def test_runs_whose_training_did_not_finish_are_named_in_one_warning(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    crashed = unfinished(sweep / "dot_seed0", ".hydra", "train.log")
    killed = unfinished(sweep / "dot_seed1", "checkpoints")
    evaluated = write_run(sweep / "dot_seed2", EVALUATIONS_ONLY)
    (sweep / "notes").mkdir()  # not a run: no warning
    runs, warnings = load_sweep([sweep])
    assert len(runs) == 7
    (warning,) = warnings
    assert warning.startswith("left out 3 run folders where training did not finish: ")
    assert f"{crashed} (no metrics.json)" in warning and f"{killed} (no metrics.json)" in warning
    assert f"{evaluated} (its metrics.json holds only evaluate.py's evaluations)" in warning
    assert "notes" not in warning


def test_only_unfinished_runs_is_an_error_saying_so(tmp_path: Path) -> None:
    unfinished(tmp_path / "sweep" / "dot_seed0", ".hydra")
    with pytest.raises(UserError, match=r"no finished runs under .*training did not finish in"):
        load_sweep([tmp_path / "sweep"])
    evaluated = write_run(tmp_path / "evaluated", EVALUATIONS_ONLY)
    with pytest.raises(UserError) as caught:
        load_sweep([evaluated])
    assert "training did not finish" in str(caught.value)
    assert "only evaluate.py's evaluations" in str(caught.value)


# ------------------------------------------------------------------ numbers that are not
@pytest.mark.parametrize(
    ("text", "key", "shown"),
    [
        ('"bleu": NaN', "test.bleu", "nan"),
        ('"bleu": Infinity', "test.bleu", "inf"),
        ('"bleu": -1e999', "test.bleu", "-inf"),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_file_and_field(tmp_path, text, key, shown):
    metrics = json.dumps(fake_metrics()).replace('"bleu": 20.0', text, 1)
    run = write_run(tmp_path / "run", metrics)
    with pytest.raises(UserError) as caught:
        load_run(run)
    assert str(caught.value) == (
        f"{run / 'metrics.json'}: '{key}' should be a finite number, got {shown}; "
        "rerun or remove that run"
    )


def test_a_non_finite_number_deep_inside_is_refused(tmp_path: Path) -> None:
    metrics = fake_metrics()
    metrics["history"][1]["valid_loss"] = float("nan")
    run = write_run(tmp_path / "run", json.dumps(metrics))
    with pytest.raises(UserError, match=r"'history.valid_loss' should be a finite number"):
        load_run(run)


def test_the_shipped_corpus_names_one_dataset_however_its_path_was_written(tmp_path) -> None:
    for name, path in (("old", "data/tatoeba/cmn-eng.txt.xz"),
                       ("new", "${seq2seq_repo:data/tatoeba/cmn-eng.txt.xz}")):  # fmt: skip
        run = write_run(tmp_path / name, fake_metrics("additive", 0))
        (run / ".hydra").mkdir()
        (run / ".hydra" / "config.yaml").write_text(
            f"data:\n  dir: data/tatoeba\n  path: {path}\n", encoding="utf-8"
        )
        assert load_run(run).dataset == "synthetic (data/tatoeba/cmn-eng.txt.xz)"
