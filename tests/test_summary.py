"""Tests for seq2seq.evaluation.summary and .scores: the metrics.json contract (RunSummary,
Scores, Evaluation)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from seq2seq.errors import UserError
from seq2seq.evaluation.scores import Scores
from seq2seq.evaluation.summary import (
    Evaluation,
    RunSummary,
    record_evaluation,
    recorded_evaluations,
)
from seq2seq.files import write_json
from tests.helpers.metrics import TRAINING_KEYS, full_metrics, scores


def test_round_trip_is_key_for_key(tmp_path: Path) -> None:
    data = full_metrics() | {"notes": {"kept": True}}  # a key this version does not know
    summary = RunSummary.from_dict(data)
    assert summary.decoder == "luong" and summary.extra == {"notes": {"kept": True}}
    assert list(summary.to_dict()) == [*TRAINING_KEYS, "notes"]
    assert summary.to_dict() == data

    path = tmp_path / "metrics.json"
    summary.save(path)
    write_json(tmp_path / "expected.json", data)
    assert path.read_text(encoding="utf-8") == (tmp_path / "expected.json").read_text("utf-8")
    assert RunSummary.load(path) == summary


def test_the_fields_are_typed_records() -> None:
    summary = RunSummary.from_dict(full_metrics())
    assert isinstance(summary.test, Scores) and summary.test.aer == 0.4
    assert summary.test.alignment is not None and summary.test.alignment.best_head_split == "valid"
    assert summary.history[1].valid_loss == 1.0 and summary.valid_best == summary.history[1]


def test_scores_without_alignment_write_its_keys_as_null() -> None:
    quick = Scores(loss=1.0, bleu=2.0, exact_match=0.5, bleu_tokenize="none")
    data = quick.to_dict()
    assert data["aer"] is None and data["alignment_report"] is None and data["chrf"] is None
    assert Scores.from_dict(data) == quick and not quick.is_full


def test_older_files_without_newer_fields_load_with_defaults() -> None:
    newer = (
        "num_heads", "decoder", "steps", "seconds_to_best", "bleu_signature", "valid_best",
        "test_checkpoint", "corpus_sha256",
    )  # fmt: skip
    old = {k: v for k, v in full_metrics().items() if k not in newer}
    summary = RunSummary.from_dict(old)
    assert summary.decoder == "bahdanau" and summary.num_heads == 1
    assert summary.steps is None and summary.seconds_to_best is None
    assert summary.bleu_signature is None and summary.valid_best is None
    assert summary.corpus_sha256 is None and summary.config is None
    assert not {"corpus_sha256", "config"} & set(summary.to_dict())  # a rewrite adds neither
    assert summary.test.bleu == 20.0 and summary.evaluations == {}


def test_old_run_without_aer_scores_loads() -> None:
    data = full_metrics()
    for key in ("aer", "aer_sure_only", "aer_best_head", "best_head", "attention_entropy"):
        del data["test"][key]
    assert RunSummary.from_dict(data).test.alignment is None


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
        (broken(("test", "aer"), "high"), ("'test.aer' should be a number, got 'high'",)),
        (broken(("test", "bleu_by_length"), {"1-10": "x"}), ("'test.bleu_by_length'",)),
        (broken(("test", "bleu_tokenize"), "intl"), ("'test.bleu_tokenize' should be",)),
        (broken(("train_seconds",), None), ("'train_seconds' should be a number",)),
        (broken(("history",), [{"step": 1}]), ("missing key 'history.valid_loss'",)),
        (broken(("history",), 3), ("'history' should be a list of objects",)),
        (broken(("valid_best",), 3), ("'valid_best' should be an object",)),
        (broken(("evaluations",), {"x": {"step": 1}}), ("missing key 'evaluations.checkpoint'",)),
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


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[" * 5000 + "]" * 5000, "arrays or objects nested too deeply"),
        ('{"attention": "dot", "step": ' + "1" * 4301 + "}", "a number of more than 4300 digits"),
    ],
    ids=["nested", "long-number"],
)
def test_json_beyond_the_parsers_limits_is_one_line_naming_the_file(
    text: str, reason: str, tmp_path: Path
) -> None:
    """Python's parser stops at a nesting depth (RecursionError) and at 4300 digits
    (ValueError): both are a broken file, said in one line like any other."""
    path = tmp_path / "metrics.json"
    path.write_text(text, encoding="utf-8")
    for read in (RunSummary.load, recorded_evaluations):
        with pytest.raises(UserError) as caught:
            read(path)
        assert str(caught.value) == f"{path} is not valid JSON ({reason}); rerun or remove that run"


def evaluation(checkpoint: str = "last.pt", beam: int = 1, bleu: float = 30.0) -> Evaluation:
    return Evaluation(
        checkpoint=checkpoint,
        step=24,
        split="test",
        beam_size=beam,
        corpus="data/x",
        corpus_sha256="ab" * 32,
        scores=Scores.from_dict(scores(bleu) | {"beam_size": beam}),
    )


def test_an_evaluation_is_kept_beside_trainings_own_test_scores(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_json(path, full_metrics())
    record_evaluation(path, evaluation("last.pt", bleu=30.0))
    record_evaluation(path, evaluation("best.pt", beam=5, bleu=31.0))
    record_evaluation(path, evaluation("last.pt", bleu=32.0))  # the same key: replaced
    after = json.loads(path.read_text(encoding="utf-8"))
    assert list(after) == [*TRAINING_KEYS, "evaluations"]
    assert after["test"] == full_metrics()["test"]  # training's own result, untouched
    assert after["bleu_signature"] == full_metrics()["bleu_signature"]
    kept = after["evaluations"]
    assert sorted(kept) == ["test best.pt beam=5 data/x", "test last.pt beam=1 data/x"]
    last = kept["test last.pt beam=1 data/x"]
    assert last["scores"]["bleu"] == 32.0 and last["step"] == 24
    assert last["corpus_sha256"] == "ab" * 32 and last["checkpoint"] == "last.pt"
    assert RunSummary.load(path).evaluations["test best.pt beam=5 data/x"].beam_size == 5


def test_evaluations_without_a_training_summary(tmp_path: Path) -> None:
    """A run stopped before its test has no summary: evaluations alone fill the file."""
    path = tmp_path / "metrics.json"
    record_evaluation(path, evaluation("last.pt"))
    record_evaluation(path, evaluation("last.pt", beam=5))
    after = json.loads(path.read_text(encoding="utf-8"))
    assert list(after) == ["evaluations"] and len(after["evaluations"]) == 2


def record_many(path: Path, worker: int, count: int) -> None:
    """``count`` evaluations of their own (beam widths ``worker * count + k``) into ``path``."""
    for k in range(count):
        record_evaluation(path, evaluation(beam=worker * count + k + 1))


@pytest.mark.parametrize("summary", [True, False], ids=["summary", "evaluations-only"])
def test_concurrent_evaluations_keep_every_record(tmp_path: Path, summary: bool) -> None:
    """Two evaluate.py processes recording into one run at once lose nothing: each
    read-modify-write of metrics.json holds the run folder's lock."""
    path = tmp_path / "metrics.json"
    if summary:
        write_json(path, full_metrics())
    workers, count = 2, 150
    forked = multiprocessing.get_context("fork")
    processes = [forked.Process(target=record_many, args=(path, w, count)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)  # hang protection only
        assert process.exitcode == 0
    kept = json.loads(path.read_text(encoding="utf-8"))["evaluations"]
    assert len(kept) == workers * count
    assert sorted(e["beam_size"] for e in kept.values()) == list(range(1, workers * count + 1))
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no lock or temporary


def test_training_writes_a_summary_that_round_trips(tiny_run) -> None:
    path = tiny_run("additive") / "metrics.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == [*TRAINING_KEYS, "distributed", "compute", "decoding", "config"]
    assert data["config"]["model"]["hidden_size"] == 16 and data["config"]["seed"] == 0
    assert len(data["corpus_sha256"]) == 64  # the corpus files' fingerprint
    assert data["distributed"] == {"world_size": 1, "backend": None, "world_sizes": [1]}
    compute = data["compute"]
    assert list(compute) == ["train_seconds", "processes", "train_tokens"]
    assert compute["processes"] == 1 and compute["train_tokens"] > 0
    assert data["decoding"]["sentences"] == 60 and data["decoding"]["beam_size"] == 1
    assert data["decoding"]["seconds"] > 0
    assert data["test_checkpoint"] == "best.pt"
    assert list(data["test"]) == list(scores())  # the layout evaluation writes
    assert RunSummary.load(path).to_dict() == data
