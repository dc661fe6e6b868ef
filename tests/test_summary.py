"""Tests for seq2seq.evaluation.summary: the metrics.json contract (RunSummary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seq2seq.errors import UserError
from seq2seq.evaluation.summary import RunSummary, record_scores
from seq2seq.files import write_json

#: The keys training writes, in the order it writes them.
TRAINING_KEYS = [
    "attention",
    "num_heads",
    "decoder",
    "seed",
    "data",
    "parameters",
    "steps",
    "best_step",
    "train_seconds",
    "seconds_to_best",
    "bleu_signature",
    "test",
    "valid_best",
    "history",
]


def scores(bleu: float = 20.0) -> dict[str, Any]:
    return {
        "bleu": bleu,
        "chrf": 40.0,
        "exact_match": 0.2,
        "aer": 0.4,
        "aer_best_head": None,
        "attention_entropy": 1.5,
        "bleu_by_length": {"1-10": 25.0, "11-20": 15.0},
        "bucket_sizes": {"1-10": 8, "11-20": 2},
        "bleu_signature": "nrefs:1|tok:none",
    }


def full_metrics() -> dict[str, Any]:
    """A metrics.json as training writes it (every key, training's order)."""
    history = [
        {"step": 10, "valid_loss": 2.0, "train_seconds": 1.5},
        {"step": 20, "valid_loss": 1.0, "train_seconds": 3.0},
    ]
    values = [
        "additive", 1, "luong", 3, "synthetic", 1234, 24, 20, 3.25, 3.0, "nrefs:1|tok:none",
        scores(), history[1], history,
    ]  # fmt: skip
    return dict(zip(TRAINING_KEYS, values, strict=True))


def test_round_trip_is_key_for_key(tmp_path: Path) -> None:
    data = full_metrics() | {"valid": scores(10.0)}  # evaluate.py --split valid adds a key
    summary = RunSummary.from_dict(data)
    assert summary.decoder == "luong" and summary.extra == {"valid": scores(10.0)}
    assert list(summary.to_dict()) == [*TRAINING_KEYS, "valid"]
    assert summary.to_dict() == data

    path = tmp_path / "metrics.json"
    summary.save(path)
    write_json(tmp_path / "expected.json", data)
    assert path.read_text(encoding="utf-8") == (tmp_path / "expected.json").read_text("utf-8")
    assert RunSummary.load(path) == summary


def test_older_files_without_newer_fields_load_with_defaults() -> None:
    newer = ("num_heads", "decoder", "steps", "seconds_to_best", "bleu_signature", "valid_best")
    old = {k: v for k, v in full_metrics().items() if k not in newer}
    summary = RunSummary.from_dict(old)
    assert summary.decoder == "bahdanau" and summary.num_heads == 1
    assert summary.steps is None and summary.seconds_to_best is None
    assert summary.bleu_signature is None and summary.valid_best is None
    assert summary.test["bleu"] == 20.0


def test_old_run_without_aer_scores_loads() -> None:
    data = full_metrics()
    for key in ("aer", "aer_best_head", "attention_entropy"):
        del data["test"][key]
    assert "aer" not in RunSummary.from_dict(data).test


def broken(path: tuple[str, ...], value: object = None, *, drop: bool = False) -> dict[str, Any]:
    """``full_metrics()`` with the entry at ``path`` set to ``value`` (or removed)."""
    data = full_metrics()
    node = data
    for key in path[:-1]:
        node = node[key]
    if drop:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("data", "fragments"),
    [
        ([1, 2], ("expected a JSON object, got list",)),
        (broken(("attention",), drop=True), ("missing key 'attention'", "train.py")),
        (broken(("seed",), "0"), ("'seed' should be an integer", "'0'")),
        (broken(("seed",), True), ("'seed' should be an integer",)),
        (broken(("num_heads",), -1), ("'num_heads' should be a whole number",)),
        (broken(("test",), drop=True), ("missing key 'test'",)),
        (broken(("test", "chrf"), drop=True), ("missing key 'test.chrf'",)),
        (broken(("test", "aer"), "high"), ("'test.aer' should be a number or null",)),
        (broken(("test", "bleu_by_length"), {"1-10": "x"}), ("'test.bleu_by_length'",)),
        (broken(("train_seconds",), None), ("'train_seconds' should be a number",)),
        (broken(("history",), [{"step": 1}]), ("'history' should be a list of",)),
        (broken(("valid_best",), 3), ("'valid_best' should be an object",)),
    ],
)
def test_validation_errors_are_one_line_naming_file_and_field(
    data: object, fragments: tuple[str, ...]
) -> None:
    with pytest.raises(UserError) as caught:
        RunSummary.from_dict(data, "runs/a/metrics.json")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("runs/a/metrics.json: ")
    for fragment in fragments:
        assert fragment in message


def test_load_names_the_file_when_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    with pytest.raises(UserError, match="cannot read"):
        RunSummary.load(path)
    path.write_text('{"attention": ', encoding="utf-8")
    with pytest.raises(UserError, match="not valid JSON") as caught:
        RunSummary.load(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_record_scores_rewrites_one_split_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_json(path, full_metrics())
    new = scores(30.0) | {"bleu_signature": "nrefs:1|new"}
    record_scores(path, "test", new)
    after = json.loads(path.read_text(encoding="utf-8"))
    assert list(after) == TRAINING_KEYS
    assert after["test"] == new and after["bleu_signature"] == "nrefs:1|new"
    assert after["history"] == full_metrics()["history"]

    record_scores(path, "valid", scores(5.0))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert list(after) == [*TRAINING_KEYS, "valid"] and after["test"] == new


def test_record_scores_without_a_training_summary(tmp_path: Path) -> None:
    """A run stopped before its test has no summary: evaluations alone fill the file."""
    path = tmp_path / "metrics.json"
    record_scores(path, "valid", scores(5.0))
    record_scores(path, "test", scores(6.0))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after == {
        "valid": scores(5.0),
        "bleu_signature": "nrefs:1|tok:none",
        "test": scores(6.0),
    }


def test_training_writes_a_summary_that_round_trips(tiny_run) -> None:
    path = tiny_run("additive") / "metrics.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == [*TRAINING_KEYS, "distributed"]
    assert data["distributed"] == {"world_size": 1, "backend": None}
    assert RunSummary.load(path).to_dict() == data
