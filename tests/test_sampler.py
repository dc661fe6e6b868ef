"""Properties of sampled English: no stutter, and time phrases that attach to their own clause.

An outside review found "... the song that Lili loved last week last week" in the corpus:
a relative clause's time phrase followed by the main clause's. These tests read many
sampled sentences the way an English reader would and check each time phrase attaches
to the verb the gold alignment says it belongs to.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seq2seq.data.corpus import Pair
from seq2seq.data.synthetic.grammar import Grammar


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


@pytest.fixture(scope="module")
def long_samples(grammar: Grammar) -> list[Pair]:
    """3000 random pairs of 15..60 tokens: many clauses, relative clauses and time phrases."""
    rng = random.Random(11)
    return [grammar.sample_pair(rng, rng.randint(15, 60)) for _ in range(3000)]


def _sources(pair: Pair) -> list[frozenset[int]]:
    """For each English position, the Chinese positions it is linked to."""
    sources: list[set[int]] = [set() for _ in pair.tgt]
    for i, j in pair.alignment or ():
        sources[j].add(i)
    return [frozenset(s) for s in sources]


def stutters(pair: Pair, categories: Mapping[str, str]) -> list[str]:
    """Adjacent repeats, inside one clause, of an English word sequence that translates the
    same Chinese words ("yesterday yesterday", "saw saw"); "did the cook cook" (noun, then
    verb) is fine."""
    src_words = [tuple(sorted(pair.src[i] for i in s)) for s in _sources(pair)]
    joins = {
        j for j, w in enumerate(src_words) if any(categories.get(x) == "connective" for x in w)
    }
    found = []
    for n in range(1, 5):
        for start in range(len(pair.tgt) - 2 * n + 1):
            first, second = slice(start, start + n), slice(start + n, start + 2 * n)
            if (
                pair.tgt[first] == pair.tgt[second]
                and src_words[first] == src_words[second]
                and all(src_words[first])
                and not joins & set(range(start, start + 2 * n))
            ):
                found.append(" ".join(pair.tgt[start : start + 2 * n]))
    return found


def time_attachments(pair: Pair, grammar: Grammar) -> list[tuple[int, int | None]]:
    """For each Chinese time word: (its clause's predicate, the predicate English attaches it to).

    In Chinese a time word stands before its own clause's predicate (the first verb, or
    adjective not followed by 的, after it). An English reader attaches a time phrase to
    the last predicate before it in the same clause; one that opens the clause belongs to
    the clause as a whole. Clauses are split at connectives.
    """
    de = grammar.lexicon.function_words["modifier"].zh
    category = [grammar.categories.get(word, "") for word in pair.src]
    following = [*pair.src[1:], ""]
    predicate = [
        c == "verb" or (c == "adjective" and after != de)
        for c, after in zip(category, following, strict=True)
    ]
    sources = _sources(pair)
    segment, seg = [], 0
    for src in sources:
        if any(category[i] == "connective" for i in src):
            seg += 1
        segment.append(seg)
    predicate_at = [next((i for i in sorted(src) if predicate[i]), None) for src in sources]
    result = []
    for t in range(len(pair.src)):
        if category[t] != "time":
            continue
        own = next(i for i in range(t + 1, len(pair.src)) if predicate[i])
        first = next(j for j, src in enumerate(sources) if t in src)
        same = [j for j in range(len(pair.tgt)) if segment[j] == segment[first]]
        before = [predicate_at[j] for j in same if j < first and predicate_at[j] is not None]
        read = before[-1] if before else own
        result.append((own, read))
    return result


def test_the_reported_sentence_shape_is_caught(grammar: Grammar) -> None:
    """The checks themselves: the reviewer's example fails both, a clean one passes."""
    bad = Pair(
        ("我", "上周", "唱", "了", "丽丽", "上周", "爱", "的", "歌"),
        ("I", "sang", "the", "song", "that", "Lili", "loved", "last", "week", "last", "week"),
        ((0, 0), (1, 9), (1, 10), (2, 1), (3, 1), (4, 5), (5, 7), (5, 8), (6, 6), (8, 3)),
    )
    assert "last week last week" in stutters(bad, grammar.categories)
    assert any(own != read for own, read in time_attachments(bad, grammar))
    good = grammar.clause("我", "吃", "苹果", tense="past", time="昨天").to_pair()
    assert not stutters(good, grammar.categories)
    assert all(own == read for own, read in time_attachments(good, grammar))


def test_no_adjacent_repeated_phrase(grammar: Grammar, long_samples: list[Pair]) -> None:
    found = [(" ".join(p.tgt), stutters(p, grammar.categories)) for p in long_samples]
    bad = [(text, repeats) for text, repeats in found if repeats]
    assert not bad, bad[:3]


def test_each_time_phrase_attaches_to_its_own_clause(
    grammar: Grammar, long_samples: list[Pair]
) -> None:
    """At most one time phrase per clause, and no time phrase an English reader would hang
    on the wrong verb (a relative clause's instead of the main clause's)."""
    bad = []
    for pair in long_samples:
        attachments = time_attachments(pair, grammar)
        reads = [read for _, read in attachments]
        if any(own != read for own, read in attachments) or len(set(reads)) < len(reads):
            bad.append(" ".join(pair.tgt))
    assert not bad, bad[:3]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(10, 60))
def test_any_sampled_sentence_reads_unambiguously(grammar: Grammar, seed: int, length: int) -> None:
    pair = grammar.sample_pair(random.Random(seed), length)
    assert not stutters(pair, grammar.categories), " ".join(pair.tgt)
    attachments = time_attachments(pair, grammar)
    assert all(own == read for own, read in attachments), " ".join(pair.tgt)


def test_a_main_clause_time_is_not_left_after_a_relative_clause(grammar: Grammar) -> None:
    """我 昨天 读 了 你 买 的 书: "yesterday" belongs to reading, so it opens the clause."""
    book = grammar.relative("书", "你", "买")
    got = grammar.clause("我", "读", book, tense="past", time="昨天").to_pair()
    assert " ".join(got.tgt) == "yesterday I read the book that you bought"
    both = grammar.clause(
        "我", "读", grammar.relative("书", "你", "买", time="昨天"), tense="past", time="昨天"
    ).to_pair()
    assert " ".join(both.tgt) == "yesterday I read the book that you bought yesterday"
