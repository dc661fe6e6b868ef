"""Tests for seq2seq.evaluation.metrics: sacrebleu wrappers, accuracy, buckets, AER, entropy."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import sacrebleu

from seq2seq.evaluation.metrics import (
    BleuResult,
    alignment_error_rate,
    alignment_scores,
    attention_entropy,
    bleu_by_length,
    bucket_indices,
    corpus_bleu,
    corpus_chrf,
    exact_match,
    hard_alignment,
    length_bucket,
    length_bucket_labels,
    text_bleu,
    token_accuracy,
)

HYPS = [
    ["the", "cat", "sat", "on", "the", "mat"],
    ["a", "dog", "barks", "loudly"],
    ["I", "love", "China"],
]
REFS = [
    ["the", "cat", "sat", "on", "a", "mat"],
    ["the", "dog", "barks", "loudly"],
    ["I", "love", "China"],
]


def one_hot_attention(links: dict[int, int], src_len: int, tgt_len: int) -> np.ndarray:
    """``(tgt_len + 1, src_len + 1)`` attention: row j puts its mass on column links[j].

    Target rows without a link attend to the source ``<eos>`` column (= unaligned).
    """
    w = np.zeros((tgt_len + 1, src_len + 1))
    for j in range(tgt_len + 1):
        w[j, links.get(j, src_len)] = 1.0
    return w


# --------------------------------------------------------------------------- BLEU / chrF


def test_bleu_matches_sacrebleu_directly() -> None:
    result = corpus_bleu(HYPS, REFS)
    expected = sacrebleu.corpus_bleu(
        [" ".join(h) for h in HYPS], [[" ".join(r) for r in REFS]], tokenize="none"
    )
    assert isinstance(result, BleuResult)
    assert result.score == pytest.approx(expected.score)
    assert 0.0 < result.score < 100.0
    assert "tok:none" in result.signature
    assert result.n_sentences == 3


def test_bleu_perfect_is_100() -> None:
    assert corpus_bleu(REFS, REFS).score == pytest.approx(100.0)


def test_a_corpus_written_tokenized_is_scored_as_it_is_written_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A user's TSV whose English is tokenized (``I love China .``): the hypotheses take the
    corpus' own form, so both sides are scored as written; sacrebleu's "forgot to
    detokenize" warning would only repeat at every validation."""
    references = [f"sentence {k} ends here ." for k in range(120)]
    hypotheses = [f"sentence {k} ends there ." for k in range(120)]
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        result = text_bleu(hypotheses, references)
    assert not [r for r in caplog.records if "detokenize" in r.getMessage()]
    bleu = sacrebleu.BLEU()  # its defaults: the 13a tokenizer
    assert result.score == pytest.approx(bleu.corpus_score(hypotheses, [references]).score)
    assert result.signature == str(bleu.get_signature())


def test_chrf_matches_sacrebleu_directly() -> None:
    result = corpus_chrf(HYPS, REFS)
    expected = sacrebleu.corpus_chrf([" ".join(h) for h in HYPS], [[" ".join(r) for r in REFS]])
    assert result.score == pytest.approx(expected.score)
    assert result.signature.startswith("nrefs:1")


def test_empty_corpus_scores_zero() -> None:
    bleu = corpus_bleu([], [])
    assert bleu.score == 0.0
    assert bleu.n_sentences == 0
    assert "tok:none" in bleu.signature
    assert corpus_chrf([], []).score == 0.0
    assert exact_match([], []) == 0.0
    assert token_accuracy([], []) == 0.0
    assert bleu_by_length([], [], []) == {}


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError, match="parallel"):
        corpus_bleu(HYPS, REFS[:2])
    with pytest.raises(ValueError, match="source lengths"):
        bleu_by_length(HYPS, REFS, [1, 2])


# --------------------------------------------------------------------------- exact match / acc


def test_exact_match() -> None:
    assert exact_match(HYPS, REFS) == pytest.approx(1 / 3)
    assert exact_match([("a", "b")], [["a", "b"]]) == 1.0  # tuple vs list is fine


def test_token_accuracy_counts_positions() -> None:
    # 5/6 + 3/4 + 3/3 correct positions over 6 + 4 + 3 reference tokens
    assert token_accuracy(HYPS, REFS) == pytest.approx(11 / 13)


def test_token_accuracy_short_and_long_hypotheses_are_penalised() -> None:
    ref = [["a", "b", "c", "d"]]
    assert token_accuracy([["a", "b"]], ref) == pytest.approx(2 / 4)  # stops early
    assert token_accuracy([["a", "b", "c", "d", "x", "y"]], ref) == pytest.approx(4 / 6)
    assert token_accuracy([["x", "a", "b", "c"]], ref) == 0.0  # shifted: position-wise
    assert token_accuracy([[]], [[]]) == 1.0


# --------------------------------------------------------------------------- length buckets


@pytest.mark.parametrize(
    ("n", "label"),
    [
        (0, "1-10"),
        (1, "1-10"),
        (10, "1-10"),
        (11, "11-20"),
        (20, "11-20"),
        (21, "21-30"),
        (30, "21-30"),
        (31, "31-40"),
        (40, "31-40"),
        (41, "41+"),
        (500, "41+"),
    ],
)
def test_length_bucket_labels(n: int, label: str) -> None:
    assert length_bucket(n) == label
    assert length_bucket(n, (10, 20, 30, 40)) == label


def test_length_bucket_custom_edges_and_errors() -> None:
    assert length_bucket_labels() == ["1-10", "11-20", "21-30", "31-40", "41+"]
    assert length_bucket_labels((5,)) == ["1-5", "6+"]
    assert length_bucket(6, (5, 8)) == "6-8"
    with pytest.raises(ValueError):
        length_bucket(-1)
    with pytest.raises(ValueError):
        length_bucket(3, (10, 10))
    with pytest.raises(ValueError):
        length_bucket(3, ())


def test_bleu_by_length_buckets_partition_the_corpus() -> None:
    rng = np.random.default_rng(0)
    lengths = [int(n) for n in rng.integers(1, 60, size=40)]
    lengths[0] = 45  # make sure "41+" is used
    hyps = [["w"] * (n % 7 + 1) for n in lengths]
    refs = [["w"] * (n % 5 + 1) for n in lengths]

    groups = bucket_indices(lengths)
    seen = sorted(k for indices in groups.values() for k in indices)
    assert seen == list(range(len(lengths)))  # each sentence in exactly one bucket
    assert sum(len(indices) for indices in groups.values()) == len(lengths)
    for label, indices in groups.items():
        assert all(length_bucket(lengths[k]) == label for k in indices)

    scores = bleu_by_length(hyps, refs, lengths)
    order = length_bucket_labels()
    assert list(scores) == [label for label in order if label in groups]  # non-empty, in order
    for label, indices in groups.items():
        expected = corpus_bleu([hyps[k] for k in indices], [refs[k] for k in indices]).score
        assert scores[label] == pytest.approx(expected)


def test_bleu_by_length_only_non_empty_buckets() -> None:
    scores = bleu_by_length(HYPS, REFS, [3, 45, 12])
    assert list(scores) == ["1-10", "11-20", "41+"]
    assert scores["1-10"] == pytest.approx(corpus_bleu(HYPS[:1], REFS[:1]).score)
    assert scores["11-20"] == 0.0  # a lone 3-token sentence has no 4-gram: BLEU 0
    assert scores["41+"] == pytest.approx(corpus_bleu(HYPS[1:2], REFS[1:2]).score)


# --------------------------------------------------------------------------- alignments


def test_hard_alignment_ignores_eos_column_and_row() -> None:
    # 3 source words + <eos>, 3 target words + <eos> step
    w = np.array(
        [
            [0.7, 0.1, 0.1, 0.1],  # t0 -> s0
            [0.1, 0.2, 0.1, 0.6],  # t1 -> <eos> column: unaligned
            [0.1, 0.1, 0.5, 0.3],  # t2 -> s2
            [0.9, 0.0, 0.0, 0.1],  # <eos> step: ignored
        ]
    )
    assert hard_alignment(w, src_len=3, tgt_len=3) == {(0, 0), (2, 2)}


def test_hard_alignment_shape_checks() -> None:
    w = np.full((4, 4), 0.25)
    with pytest.raises(ValueError, match="source columns"):
        hard_alignment(w, src_len=4, tgt_len=3)
    with pytest.raises(ValueError, match="target rows"):
        hard_alignment(w, src_len=3, tgt_len=5)
    with pytest.raises(ValueError, match="shape"):
        hard_alignment(np.zeros((2, 4, 4)), src_len=3, tgt_len=3)
    # a hypothesis cut off before <eos>: T_t == tgt_len is accepted
    assert hard_alignment(np.eye(3, 4), src_len=3, tgt_len=3) == {(0, 0), (1, 1), (2, 2)}


def test_aer_perfect_is_zero() -> None:
    gold = [{(0, 0), (1, 1), (2, 2)}]
    assert alignment_error_rate([{(0, 0), (1, 1), (2, 2)}], gold) == 0.0


def test_aer_shifted_by_one() -> None:
    gold = [[(0, 0), (1, 1), (2, 2)]]
    shifted = [{(1, 0), (2, 1)}]  # target j aligned to source j+1; last word unaligned
    # |A∩S| = 0  ->  AER = 1
    assert alignment_error_rate(shifted, gold) == 1.0
    shifted_keep_first = [{(0, 0), (0, 1), (1, 2)}]  # one of three right
    # 1 - 2*1 / (3 + 3) = 2/3
    assert alignment_error_rate(shifted_keep_first, gold) == pytest.approx(2 / 3)


def test_aer_partial_overlap_and_corpus_level_counts() -> None:
    predicted = [{(0, 0), (1, 1)}, {(0, 0), (1, 2), (3, 3)}]
    gold = [{(0, 0), (1, 1), (2, 2), (3, 3)}, {(0, 0)}]
    # |A∩S| = 2 + 1, |A| = 2 + 3, |S| = 4 + 1  ->  1 - 6/10
    assert alignment_error_rate(predicted, gold) == pytest.approx(0.4)
    # not the mean of sentence AERs (1 - 4/6 and 1 - 2/4)
    assert alignment_error_rate(predicted, gold) != pytest.approx(((1 - 4 / 6) + 0.5) / 2)


def test_aer_empty() -> None:
    assert alignment_error_rate([], []) == 0.0
    assert alignment_error_rate([set()], [()]) == 0.0
    assert alignment_error_rate([set()], [[(0, 0)]]) == 1.0
    with pytest.raises(ValueError):
        alignment_error_rate([set()], [])


def test_aer_with_possible_links_by_hand() -> None:
    """Och & Ney: 1 - (|A∩S| + |A∩P|) / (|A| + |S|), with S ⊂ P.

    "the book": S = {书-book}, P = S + {书-the}. Attention that puts "the" on 书 is not
    charged; one that puts it on 买 is.
    """
    sure = [{(1, 1)}]
    possible = [{(1, 1), (1, 0)}]
    on_noun = [{(1, 0), (1, 1)}]  # |A∩S| = 1, |A∩P| = 2, |A| = 2, |S| = 1
    assert alignment_error_rate(on_noun, sure, possible) == 0.0
    assert alignment_error_rate(on_noun, sure) == pytest.approx(1 - 2 / 3)  # sure only
    elsewhere = [{(0, 0), (1, 1)}]  # |A∩S| = 1, |A∩P| = 1  ->  1 - 2/3
    assert alignment_error_rate(elsewhere, sure, possible) == pytest.approx(1 - 2 / 3)
    # two sentences, counts summed: A∩S = 1 + 0, A∩P = 2 + 1, |A| = 2 + 2, |S| = 1 + 2
    sure2 = [{(1, 1)}, {(0, 0), (1, 1)}]
    possible2 = [{(1, 0)}, {(0, 1)}]  # possible-only links: S is added to P
    predicted = [{(1, 0), (1, 1)}, {(0, 1), (1, 0)}]
    assert alignment_error_rate(predicted, sure2, possible2) == pytest.approx(1 - 4 / 7)
    with pytest.raises(ValueError):
        alignment_error_rate(predicted, sure2, possible2[:1])


def test_alignment_scores_report_possible_and_sure_only() -> None:
    # target "the book" over source "买 书": "the" (row 0) attends to 书 (column 1)
    w = one_hot_attention({0: 1, 1: 1}, src_len=2, tgt_len=2)
    scores = alignment_scores([w], [2], [2], [[(1, 1)]], [[(1, 0), (1, 1)]])
    assert scores["aer"] == 0.0
    assert scores["aer_sure_only"] == pytest.approx(1 - 2 / 3)
    assert alignment_scores([w], [2], [2], [[(1, 1)]])["aer"] == scores["aer_sure_only"]


def test_alignment_scores_report_a_head_chosen_elsewhere() -> None:
    """A head picked on validation is reported on test even if another head is better there."""
    good = one_hot_attention({0: 0, 1: 1}, src_len=2, tgt_len=2)
    bad = one_hot_attention({0: 1, 1: 0}, src_len=2, tgt_len=2)
    weights = np.stack([good, bad])
    gold = [[(0, 0), (1, 1)]]
    assert alignment_scores([weights], [2], [2], gold)["best_head"] == 0
    chosen = alignment_scores([weights], [2], [2], gold, head=1)
    assert chosen["best_head"] == 1 and chosen["aer_best_head"] == 1.0
    with pytest.raises(ValueError, match="head 2"):
        alignment_scores([weights], [2], [2], gold, head=2)


def test_attention_entropy() -> None:
    one_hot = np.eye(3, 4)
    uniform = np.full((2, 4), 0.25)
    assert attention_entropy([one_hot]) == 0.0
    assert attention_entropy([uniform]) == pytest.approx(math.log(4))
    # rows pooled across sentences: (3 * 0 + 2 * log 4) / 5
    assert attention_entropy([one_hot, uniform]) == pytest.approx(2 * math.log(4) / 5)
    assert attention_entropy(uniform) == pytest.approx(math.log(4))  # a single array
    assert attention_entropy([]) == 0.0


def test_alignment_scores_best_head_beats_average() -> None:
    src_len, tgt_len = 3, 3
    gold = [[(0, 0), (1, 1), (2, 2)]]
    good = one_hot_attention({0: 0, 1: 1, 2: 2}, src_len, tgt_len)
    # head 2 is confidently wrong (reversed), so averaging hurts the diagonal
    bad = one_hot_attention({0: 2, 1: 1, 2: 0}, src_len, tgt_len) * 0.9 + 0.1 / 4
    good_soft = good * 0.6 + 0.4 / 4
    weights = np.stack([good_soft, bad])  # (heads, T_t, T_s)

    scores = alignment_scores([weights], [src_len], [tgt_len], gold)
    assert scores["aer_per_head"] == pytest.approx([0.0, 2 / 3])
    assert scores["aer_best_head"] == 0.0
    assert scores["aer"] == pytest.approx(2 / 3)  # average follows the confident head
    assert scores["aer_best_head"] <= scores["aer"]
    assert scores["entropy"] == pytest.approx(attention_entropy([weights.mean(axis=0)]))


def test_alignment_scores_single_head() -> None:
    w = one_hot_attention({0: 1, 1: 0}, src_len=2, tgt_len=2)
    gold = [[(1, 0), (1, 1)]]
    for weights in (w[None], w):  # (1, T_t, T_s) and plain (T_t, T_s)
        scores = alignment_scores([weights], [2], [2], gold)
        assert scores["aer"] == scores["aer_best_head"] == pytest.approx(0.5)
        assert scores["aer_per_head"] == [scores["aer"]]
        assert scores["entropy"] == 0.0


def test_alignment_scores_empty_and_errors() -> None:
    assert alignment_scores([], [], [], []) == {
        "aer": 0.0,
        "aer_sure_only": 0.0,
        "aer_best_head": 0.0,
        "best_head": 0,
        "aer_per_head": [],
        "entropy": 0.0,
    }
    w = np.full((2, 3, 3), 1 / 3)
    with pytest.raises(ValueError, match="parallel"):
        alignment_scores([w], [2, 2], [2], [[]])
    with pytest.raises(ValueError, match="heads"):
        alignment_scores([w, w[:1]], [2, 2], [2, 2], [[], []])
