"""Words of the lexicon as aligned phrases: the smallest pieces the builders combine.

:class:`Words` indexes the grammar file by Chinese word and turns entries into
:class:`~seq2seq.data.synthetic.phrase.Phrase` pieces with their links (a content word
linked to every English word but articles, a function word to its fixed English, 不 to
``do not`` ...). It also owns the English agreement of the copula.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from seq2seq.data.synthetic.grammar_file import GrammarFile
from seq2seq.data.synthetic.phrase import CrossLink, NounPhrase, Phrase, arrange

T = TypeVar("T")


def lookup(table: Mapping[str, T], zh: str, what: str) -> T:
    """``table[zh]``, or a ``ValueError`` saying ``zh`` is not a ``what``."""
    try:
        return table[zh]
    except KeyError:
        raise ValueError(f"{zh!r} is not a {what} in the grammar") from None


class Words:
    """The grammar file's words by Chinese word, and as phrases (cached: the sampler reuses
    them)."""

    def __init__(self, grammar: GrammarFile) -> None:
        self.grammar = grammar
        lex = grammar.lexicon
        self.fw = grammar.function_words
        self.en = grammar.english_function_words
        self._markers = {role: Phrase((fw.zh,)) for role, fw in self.fw.items()}
        self._functions = {
            role: Phrase((fw.zh,), fw.en, tuple((0, j) for j in range(len(fw.en))))
            for role, fw in self.fw.items()
        }
        self.the = Phrase((), (self.en.definite_article,))
        self.pronouns = {p.zh: p for p in lex.pronouns}
        self.names = {n.zh: n for n in lex.names}
        self.nouns = {n.zh: n for n in lex.nouns}
        self.places = {p.zh: p for p in lex.places}
        self.transitive = {v.zh: v for v in lex.transitive_verbs}
        self.intransitive = {v.zh: v for v in lex.intransitive_verbs}
        self.adjectives = {a.zh: a for a in lex.adjectives}
        self.times = {t.zh: t for t in lex.times}
        self.numbers = {n.zh: n for n in lex.numbers}
        self.connectives = {" ".join(c.zh): c.phrase for c in grammar.connectives}
        self.unaligned_tgt: frozenset[str] = self.en.unaligned
        self._cache: dict[tuple[str, tuple[str, ...]], Phrase] = {}

    def word(self, zh: str, en: tuple[str, ...]) -> Phrase:
        """A lexicon word: linked to every English word except articles and relatives,
        which get possible links (公园 -> the park: 公园-park sure, 公园-the possible)."""
        key = (zh, en)
        phrase = self._cache.get(key)
        if phrase is None:
            links = tuple((0, j) for j, word in enumerate(en) if word not in self.unaligned_tgt)
            maybe = tuple((0, j) for j, word in enumerate(en) if word in self.unaligned_tgt)
            phrase = self._cache[key] = Phrase((zh,), en, links, maybe)
        return phrase

    def with_article(self, phrase: Phrase, head: int, article: str | None = None) -> Phrase:
        """``the`` (or ``article``) before ``phrase``, possibly linked to its noun, Chinese
        word ``head`` of the phrase: 书 -> the book (书-book sure, 书-the possible)."""
        en = (article or self.en.definite_article, *phrase.en)
        links = tuple((i, j + 1) for i, j in phrase.links)
        maybe = ((head, 0), *((i, j + 1) for i, j in phrase.possible))
        return Phrase(phrase.zh, en, links, maybe)

    def marker(self, role: str) -> Phrase:
        """A Chinese function word with no English of its own (的, 吗, 了 ...)."""
        return self._markers[role]

    def function(self, role: str) -> Phrase:
        """A Chinese function word with its fixed English (很 -> very, 和 -> with)."""
        return self._functions[role]

    def negated(self, role: str, auxiliary: str, link_auxiliary: bool) -> Phrase:
        """不 / 没 before the verb: ``do not`` (不-do 不-not) or ``is not`` (不-not)."""
        fw = self.fw[role]
        en = (auxiliary, *fw.en)
        first = 0 if link_auxiliary else 1
        return Phrase((fw.zh,), en, tuple((0, j) for j in range(first, len(en))))

    def future(self, negated: bool) -> Phrase:
        """会 -> will, 不 会 -> will not (不-not, 会-will)."""
        will = self.function("future")
        if not negated:
            return will
        neg = self.fw["negation"]
        shift = len(will.en)
        links = tuple((1, j) for _, j in will.links) + tuple(
            (0, shift + j) for j in range(len(neg.en))
        )
        return Phrase((neg.zh, *will.zh), will.en + neg.en, links)

    def copula(self, subject: NounPhrase, tense: str) -> str:
        """am / is / are, or was / were, agreeing with the subject."""
        if tense == "past":
            was, were = self.en.copula_past
            return was if not subject.plural and subject.person != 2 else were
        am, is_, are = self.en.copula_present
        if subject.person == 1 and not subject.plural:
            return am
        return is_ if subject.third_singular else are

    def time(self, zh: str | None, tense: str) -> Phrase:
        """A time word, checked against the clause's tense (or nothing)."""
        if zh is None:
            return Phrase()
        time = lookup(self.times, zh, "time word")
        if time.tense != tense:
            raise ValueError(f"time word {zh} is {time.tense}, but the clause is {tense}")
        return self.word(zh, time.en)

    def place(self, zh: str | None) -> Phrase:
        """在 北京 -> in Beijing (在 linked to the place's preposition)."""
        if zh is None:
            return Phrase()
        place = lookup(self.places, zh, "place")
        at = Phrase((self.fw["locative"].zh,), (place.preposition,), ((0, 0),))
        return at + self.word(zh, place.en)

    def modifier(self, adjective: str | None) -> Phrase:
        """新 的 -> new (的 unaligned), or nothing."""
        if adjective is None:
            return Phrase()
        entry = lookup(self.adjectives, adjective, "adjective")
        return self.word(adjective, entry.en) + self.marker("modifier")

    def arrange(
        self,
        construction: str,
        parts: Mapping[str, Phrase],
        cross: Iterable[CrossLink] = (),
        cross_possible: Iterable[CrossLink] = (),
    ) -> Phrase:
        """Lay out ``parts`` in the file's word order for ``construction``."""
        order = self.grammar.word_order[construction]
        return arrange(parts, order.zh, order.en, cross, cross_possible)
