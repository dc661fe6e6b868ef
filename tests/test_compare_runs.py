"""Tests for seq2seq.analysis.compare.runs and .outputs: finding, loading, where to write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.analysis.compare import find_run_dirs, load_run, resolve_out_dir
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
