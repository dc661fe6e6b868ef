"""The alignment error report: categories of each English word's link, on hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest

from seq2seq.evaluation.alignment_report import (
    CATEGORIES,
    alignment_report,
    classify,
    format_report,
    sentence_links,
)
from seq2seq.evaluation.report import format_metrics
from seq2seq.evaluation.summary import RunSummary


def peaked(columns: list[int], src_len: int, peak: float = 0.7) -> np.ndarray:
    """(T_t, src_len + 1) rows peaking at ``columns[j]``, the rest spread evenly."""
    t_s = src_len + 1
    rows = np.full((len(columns) + 1, t_s), (1 - peak) / (t_s - 1))
    for j, column in enumerate(columns):
        rows[j, column] = peak
    rows[-1] = 1.0 / t_s  # the <eos> step: never classified
    return rows


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        (2, {2}, "correct"),
        (2, set(), "gold_unaligned"),
        (4, set(), "gold_unaligned"),  # attending to <eos> for an unlinked word
        (4, {1}, "on_eos"),
        (3, {2}, "one_ahead"),
        (1, {2}, "one_behind"),
        (2, {1, 3}, "one_ahead"),  # gold on both sides: ahead of the one before
        (0, {3}, "elsewhere"),
        (3, {0, 2}, "one_ahead"),  # nearest gold position counts
    ],
)
def test_classify(predicted: int, gold: set[int], expected: str) -> None:
    assert classify(predicted, 4, gold) == expected


def test_each_category_on_one_sentence() -> None:
    # 4 source words (+ <eos> at column 4), 6 English words
    src, tgt = list("abcd"), list("uvwxyz")
    possible = [(0, 0), (1, 1), (2, 2), (0, 3), (3, 4)]  # y (j=4) -> d; z (j=5) unlinked
    weights = peaked([0, 2, 1, 4, 1, 3], len(src))
    # u->a correct, v->c one ahead of b, w->b one behind c, x-><eos>, y->b elsewhere, z unlinked
    links = sentence_links(weights, len(src), len(tgt), possible)
    assert [link.category for link in links] == [
        "correct",
        "one_ahead",
        "one_behind",
        "on_eos",
        "elsewhere",
        "gold_unaligned",
    ]
    report = alignment_report([weights], [src], [tgt], [possible])
    assert report["words"] == len(tgt)
    assert sum(report["counts"].values()) == len(tgt)
    assert set(report["counts"]) == set(CATEGORIES)
    assert all(count == 1 for count in report["counts"].values())


def test_counts_and_shares_add_up_to_the_english_words() -> None:
    rng = np.random.default_rng(0)
    weights, sources, targets, links = [], [], [], []
    for _ in range(30):
        src_len, tgt_len = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        heads = rng.random((2, tgt_len + 1, src_len + 1))
        weights.append(heads / heads.sum(-1, keepdims=True))
        sources.append([f"s{i}" for i in range(src_len)])
        targets.append([f"t{j}" for j in range(tgt_len)])
        links.append([(i, j) for i in range(src_len) for j in range(tgt_len) if rng.random() < 0.3])
    report = alignment_report(weights, sources, targets, links)
    assert report["words"] == sum(len(t) for t in targets)
    assert sum(report["counts"].values()) == report["words"]
    assert sum(report["shares"].values()) == pytest.approx(1.0)


def test_heads_are_averaged_before_the_argmax() -> None:
    # head 0 peaks on a, head 1 (more strongly) on b: the average peaks on b
    head0 = np.array([[0.6, 0.3, 0.1], [0.0, 0.0, 1.0]])
    head1 = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    links = sentence_links(np.stack([head0, head1]), 2, 1, [(1, 0)])
    assert links[0].src_index == 1 and links[0].category == "correct"


def test_confusions_and_right_versus_wrong_rows() -> None:
    src, tgt = ["我", "爱", "猫"], ["I", "love", "cats"]
    possible = [(0, 0), (1, 1), (2, 2)]
    sharp_right = peaked([0], 3, peak=0.97)[0]
    vague_wrong = peaked([2], 3, peak=0.4)[0]  # love <- 猫
    also_wrong = peaked([3], 3, peak=0.4)[0]  # cats <- <eos>
    weights = np.stack([sharp_right, vague_wrong, also_wrong, np.full(4, 0.25)])
    report = alignment_report([weights, weights], [src, src], [tgt, tgt], [possible] * 2)
    assert report["top_confusions"] == [
        {"tgt": "cats", "src": "<eos>", "count": 2},
        {"tgt": "love", "src": "猫", "count": 2},
    ]
    assert report["peak_weight"]["right"] == pytest.approx(0.97)
    assert report["peak_weight"]["wrong"] == pytest.approx(0.4)
    assert report["entropy"]["right"] < report["entropy"]["wrong"]


def test_an_empty_corpus_and_no_wrong_links() -> None:
    empty = alignment_report([], [], [], [])
    assert empty["words"] == 0 and empty["entropy"] == {"right": None, "wrong": None}
    weights = peaked([0], 1)
    report = alignment_report([weights], [["a"]], [["x"]], [[(0, 0)]])
    assert report["peak_weight"]["wrong"] is None and report["top_confusions"] == []
    assert any("n/a" in line for line in format_report(report))


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        sentence_links(np.zeros((3, 3)), src_len=3, tgt_len=2, possible=[])


def test_the_report_is_printed_and_kept_by_the_metrics_contract(tmp_path) -> None:
    src, tgt = list("abcd"), list("uvwxyz")
    possible = [(0, 0), (1, 1), (2, 2), (0, 3), (3, 4)]
    report = alignment_report([peaked([0, 2, 1, 4, 1, 3], 4)], [src], [tgt], [possible])
    scores = {"bleu": 10.0, "chrf": 20.0, "exact_match": 0.5, "loss": 1.0}
    text = format_metrics({**scores, "alignment_report": report})
    assert "Alignment of 6 English words" in text and "1 ahead 16.7%" in text
    summary = {
        "attention": "additive",
        "seed": 0,
        "data": "toy",
        "parameters": 1,
        "best_step": 1,
        "train_seconds": 1.0,
        "test": {**scores, "bleu_by_length": {}, "alignment_report": report},
        "history": [],
    }
    loaded = RunSummary.from_dict(summary)
    assert loaded.test["alignment_report"]["counts"] == report["counts"]
    assert RunSummary.from_dict({**summary, "test": {**summary["test"], "alignment_report": None}})
    del summary["test"]["alignment_report"]
    assert RunSummary.from_dict(summary).test.get("alignment_report") is None
    with pytest.raises(Exception, match="alignment_report"):
        RunSummary.from_dict({**summary, "test": {**summary["test"], "alignment_report": 3}})
