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
from seq2seq.evaluation.scores import Scores
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


@pytest.mark.parametrize(
    ("predicted", "gold", "nearby", "expected"),
    [
        (5, {1}, set(), "unlinked_source"),  # 5 has no gold link: a particle
        (2, {0}, set(), "unlinked_source"),  # 2 away, but unlinked comes first
        (5, {4}, set(), "one_ahead"),  # 1 away beats unlinked
        (3, {5}, set(), "two_away"),
        (3, {1}, {3}, "two_away"),  # 2 away beats a nearby word's source
        (0, {6}, {0}, "nearby_word"),
        (0, {6}, set(), "elsewhere"),
        (7, {3}, set(), "on_eos"),
    ],
)
def test_classify_the_split_of_elsewhere(
    predicted: int, gold: set[int], nearby: set[int], expected: str
) -> None:
    linked = {0, 1, 3, 4, 6}  # 2 and 5 have no gold link
    assert classify(predicted, 7, gold, linked, nearby) == expected


# 8 source words a..h (+ <eos> at column 8); b, d and g have no gold link. English word j's
# gold sources and attended column, one English word per category in CATEGORIES order:
ONE_OF_EACH_SRC, ONE_OF_EACH_TGT = list("abcdefgh"), list("pqrstuvwx")
ONE_OF_EACH_LINKS = [(0, 0), (2, 2), (2, 3), (4, 4), (2, 5), (7, 6), (7, 7), (5, 8)]
ONE_OF_EACH_COLUMNS = [
    0,  # p: a, gold a -> correct
    3,  # q: no gold link -> gold_unaligned
    8,  # r: <eos>, gold c -> on_eos
    3,  # s: d, gold c -> one_ahead
    3,  # t: d, gold e -> one_behind
    6,  # u: g (unlinked), gold c -> unlinked_source
    5,  # v: f, gold h -> two_away
    4,  # w: e = the source of t, three English words before, gold h -> nearby_word
    0,  # x: a = the source of p, eight words before, gold f -> elsewhere
]


def test_each_category_on_one_sentence() -> None:
    src, tgt = ONE_OF_EACH_SRC, ONE_OF_EACH_TGT
    weights = peaked(ONE_OF_EACH_COLUMNS, len(src))
    links = sentence_links(weights, len(src), len(tgt), ONE_OF_EACH_LINKS)
    assert [link.category for link in links] == list(CATEGORIES)
    report = alignment_report([weights], [src], [tgt], [ONE_OF_EACH_LINKS])
    assert report["words"] == len(tgt)
    assert sum(report["counts"].values()) == len(tgt)
    assert set(report["counts"]) == set(CATEGORIES)
    assert all(count == 1 for count in report["counts"].values())
    # 7 wrong links (on <eos> .. elsewhere), one of them in the residual elsewhere
    assert report["explained_share"] == pytest.approx(6 / 7)


def test_nearby_word_looks_three_english_words_either_way() -> None:
    # English word j=4 (gold e) attends to a; a is the source of English word 0 or 1
    for source_of, expected in ((1, "nearby_word"), (0, "elsewhere")):
        possible = [(0, source_of), (4, 4)]
        weights = peaked([0, 0, 0, 0, 0], 5)
        assert sentence_links(weights, 5, 5, possible)[4].category == expected


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
    assert empty["explained_share"] is None
    weights = peaked([0], 1)
    report = alignment_report([weights], [["a"]], [["x"]], [[(0, 0)]])
    assert report["peak_weight"]["wrong"] is None and report["top_confusions"] == []
    assert any("n/a" in line for line in format_report(report))


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        sentence_links(np.zeros((3, 3)), src_len=3, tgt_len=2, possible=[])


def test_an_older_report_without_the_new_categories_still_prints() -> None:
    old_shares = dict.fromkeys(("correct", "gold_unaligned", "on_eos"), 0.2)
    old_shares.update(one_ahead=0.1, one_behind=0.1, elsewhere=0.2)
    old = {
        "words": 10,
        "counts": {k: round(10 * v) for k, v in old_shares.items()},
        "shares": old_shares,
        "top_confusions": [],
        "entropy": {"right": 0.1, "wrong": 0.5},
        "peak_weight": {"right": 0.9, "wrong": 0.6},
    }
    text = "\n".join(format_report(old))
    assert "elsewhere 20.0%" in text and "explained" not in text


def test_the_report_is_printed_and_kept_by_the_metrics_contract(tmp_path) -> None:
    src, tgt = ONE_OF_EACH_SRC, ONE_OF_EACH_TGT
    weights = peaked(ONE_OF_EACH_COLUMNS, len(src))
    report = alignment_report([weights], [src], [tgt], [ONE_OF_EACH_LINKS])
    scores = {"bleu": 10.0, "chrf": 20.0, "exact_match": 0.5, "loss": 1.0, "aer": 0.3}
    text = format_metrics(Scores.from_dict({**scores, "alignment_report": report}))
    assert "Alignment of 9 English words" in text and "1 ahead 11.1%" in text
    assert "2 away 11.1%" in text and "explained by a category (not elsewhere): 85.7%" in text
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
    loaded = RunSummary.from_dict(summary).test.alignment
    assert loaded is not None and loaded.alignment_report is not None
    assert loaded.alignment_report["counts"] == report["counts"]
    assert RunSummary.from_dict({**summary, "test": {**summary["test"], "alignment_report": None}})
    del summary["test"]["alignment_report"]
    alignment = RunSummary.from_dict(summary).test.alignment
    assert alignment is not None and alignment.alignment_report is None
    with pytest.raises(Exception, match="alignment_report"):
        RunSummary.from_dict({**summary, "test": {**summary["test"], "alignment_report": 3}})
