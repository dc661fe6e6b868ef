"""Consistency checks across a parsed lexicon, and the word tables built from it.

:mod:`~seq2seq.data.synthetic.lexicon` checks each entry on its own; these checks need the
whole lexicon (a Chinese word used in two roles, a verb taking an unknown noun kind, a
translation made only of articles). All raise :class:`GrammarFileError` naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from seq2seq.data.synthetic.entries import Lexicon
from seq2seq.data.synthetic.lexicon import TENSES, GrammarFileError

T = TypeVar("T")

#: Categories whose words are always aligned (the grammar file's first convention).
CONTENT_CATEGORIES = frozenset(
    {"pronoun", "name", "noun", "place", "verb", "adjective", "time", "number"}
)


def categorise(lex: Lexicon) -> dict[str, str]:
    """Every Chinese word's category; a word in two roles is an error."""
    tagged: list[tuple[str, str]] = [
        *((p.zh, "pronoun") for p in lex.pronouns),
        *((n.zh, "name") for n in lex.names),
        *((n.zh, "noun") for n in lex.nouns),
        *((p.zh, "place") for p in lex.places),
        *((v.zh, "verb") for v in (*lex.transitive_verbs, *lex.intransitive_verbs)),
        *((a.zh, "adjective") for a in lex.adjectives),
        *((t.zh, "time") for t in lex.times),
        *((n.zh, "number") for n in lex.numbers),
        *((n.measure, "measure_word") for n in lex.nouns if n.measure is not None),
        *((fw.zh, role) for role, fw in lex.function_words.items()),
        *((zh, "connective") for c in lex.connectives for zh in c.phrase.zh),
    ]
    categories: dict[str, str] = {}
    for zh, category in tagged:
        if categories.setdefault(zh, category) != category:
            raise GrammarFileError(
                f"{zh!r} is used both as {categories[zh]} and as {category}; "
                "a Chinese word may have one role only"
            )
    return categories


def check_references(lex: Lexicon) -> None:
    """Noun kinds used by verbs and adjectives exist; shared verbs agree; every tense has
    a time word."""
    kinds = {n.kind for n in lex.nouns} | {"place"}
    if "person" not in kinds:
        raise GrammarFileError("lexicon.nouns needs at least one noun of kind person")
    for verb in lex.transitive_verbs:
        _check_kinds(verb.objects, kinds, f"objects of {verb.zh}")
    for adjective in lex.adjectives:
        _check_kinds(adjective.describes, kinds, f"adjective {adjective.zh}")
    transitive = {v.zh: v for v in lex.transitive_verbs}
    for verb in lex.intransitive_verbs:
        other = transitive.get(verb.zh)
        if other is not None and other.base + other.third + other.past != (
            verb.base + verb.third + verb.past
        ):
            raise GrammarFileError(f"verb {verb.zh} has different forms in the two verb lists")
    if not {t.tense for t in lex.times} >= set(TENSES):
        raise GrammarFileError("lexicon.times needs a past, a present and a future time word")


def _check_kinds(used: Iterable[str], known: set[str], where: str) -> None:
    unknown = sorted(set(used) - known)
    if unknown:
        raise GrammarFileError(
            f"{where} uses unknown kinds {unknown}; known: {', '.join(sorted(known))}"
        )


def check_translations(lex: Lexicon, unaligned_tgt: frozenset[str]) -> None:
    """Every content word must keep at least one aligned English word."""
    translations = [
        *((n.zh, n.en) for n in lex.names),
        *((n.zh, n.singular) for n in lex.nouns),
        *((n.zh, n.plural) for n in lex.nouns),
        *((p.zh, p.en) for p in lex.places),
        *((a.zh, a.en) for a in lex.adjectives),
        *((t.zh, t.en) for t in lex.times),
        *((n.zh, n.en) for n in lex.numbers),
    ]
    for zh, en in translations:
        if all(word in unaligned_tgt for word in en):
            raise GrammarFileError(f"{zh}'s translation {' '.join(en)!r} has only articles")


def check_mood(tense: str, negated: bool, question: bool) -> None:
    """Reject a tense the grammar does not know, and negated questions."""
    if tense not in TENSES:
        raise ValueError(f"tense must be one of {', '.join(TENSES)}, got {tense!r}")
    if negated and question:
        raise ValueError("negated questions are not part of the grammar")


def group(entries: Iterable[T], keys: Callable[[T], Iterable[str]]) -> dict[str, tuple[T, ...]]:
    """Entries grouped under each of their keys, in file order."""
    groups: dict[str, list[T]] = {}
    for entry in entries:
        for key in keys(entry):
            groups.setdefault(key, []).append(entry)
    return {key: tuple(group) for key, group in groups.items()}


def index(entries: Iterable[T], where: str) -> dict[str, T]:
    """Entries by their Chinese word; a word listed twice is an error."""
    table: dict[str, T] = {}
    for entry in entries:
        zh = entry.zh  # type: ignore[attr-defined]
        if zh in table:
            raise GrammarFileError(f"{where} lists {zh} twice")
        table[zh] = entry
    return table


def lookup(table: Mapping[str, T], zh: str, what: str) -> T:
    """``table[zh]``, or a ``ValueError`` saying ``zh`` is not a ``what``."""
    try:
        return table[zh]
    except KeyError:
        raise ValueError(f"{zh!r} is not a {what} in the grammar") from None
