"""Where exact match is lost: the missed sentences, their first wrong word, their lengths."""

from __future__ import annotations

import pytest

from seq2seq.data.corpus import Pair
from seq2seq.evaluation.metrics import exact_match
from seq2seq.evaluation.misses import Miss, find_misses, format_misses


def pair(src: str, tgt: str) -> Pair:
    return Pair(src.split(), tgt.split())


def words(text: str) -> list[str]:
    return text.split()


PAIRS = [
    pair("我 爱 中国", "I love China"),
    pair("他们 会 看 这 部 电影 吗 ？", "will they watch this movie ?"),
    pair(" ".join(["字"] * 12), "a long sentence"),
    pair(" ".join(["字"] * 45), "a very long sentence"),
    pair(" ".join(["字"] * 45), "another very long one"),
]
OUTPUTS = [
    words("I love China"),  # exact
    words("do they watch this movie ?"),  # wrong at the first word
    words("a long"),  # ends early: the reference's word against <eos>
    words("a very long sentence indeed"),  # runs on: <eos> against the output's word
    words("another very long one"),  # exact
]


def test_the_misses_are_the_sentences_exact_match_counts_as_wrong():
    misses = find_misses(OUTPUTS, PAIRS)
    assert [m.index for m in misses.sentences] == [1, 2, 3]
    references = [p.tgt for p in PAIRS]
    assert len(misses.sentences) == round((1 - exact_match(OUTPUTS, references)) * len(PAIRS))
    assert misses.src_lengths == [3, 8, 12, 45, 45]


@pytest.mark.parametrize(
    ("index", "position", "first_wrong"),
    [(1, 0, ("will", "do")), (2, 2, ("sentence", "<eos>")), (3, 4, ("<eos>", "indeed"))],
)
def test_the_first_wrong_word_of_a_substitution_an_early_end_and_a_run_on(
    index, position, first_wrong
):
    miss = Miss(index, tuple(PAIRS[index].src), tuple(PAIRS[index].tgt), tuple(OUTPUTS[index]))
    assert miss.first_difference == position and miss.first_wrong == first_wrong


def test_misses_per_length_bucket_and_the_commonest_first_wrong_words():
    misses = find_misses(OUTPUTS, PAIRS)
    assert misses.by_length() == {"1-10": (1, 2), "11-20": (1, 1), "41+": (1, 2)}
    assert misses.first_wrong() == {
        ("will", "do"): 1, ("sentence", "<eos>"): 1, ("<eos>", "indeed"): 1
    }  # fmt: skip


def test_the_printed_misses_mark_the_first_wrong_word_and_say_how_many_are_left():
    lines = format_misses(find_misses(OUTPUTS, PAIRS), show=2)
    assert lines[0] == "  Missed (output not exactly the reference): 3 of 5"
    assert lines[1] == "    by source length: 1-10 1/2, 11-20 1/1, 41+ 1/2"
    assert "will→do ×1" in lines[2]
    assert "      reference  [will] they watch this movie ?" in lines
    assert "      output     [do] they watch this movie ?" in lines
    assert "      reference  a long [sentence]" in lines  # the output ended there
    assert "      output     a long [<eos>]" in lines
    assert lines[-1] == "    ... 1 more (--misses N shows N)"
    assert format_misses(find_misses(OUTPUTS[:1], PAIRS[:1]), show=5) == []  # all exact


def test_hypotheses_and_pairs_must_line_up():
    with pytest.raises(ValueError, match="2 hypotheses for 5 sentence pairs"):
        find_misses(OUTPUTS[:2], PAIRS)
