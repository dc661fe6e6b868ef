"""Words of the lexicon as aligned phrases: the smallest pieces the builders combine.

:class:`Words` indexes the lexicon by Chinese word and turns entries into
:class:`~seq2seq.data.synthetic.phrase.Phrase` pieces with their links (a content word
linked to every English word but articles, a function word to its fixed English, 不 to
``do not`` ...). It also owns the English agreement of the copula.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from seq2seq.data.synthetic.checks import index, lookup
from seq2seq.data.synthetic.entries import Lexicon
from seq2seq.data.synthetic.phrase import CrossLink, NounPhrase, Phrase, arrange


class Words:
    """The lexicon's tables and its words as phrases (cached: the sampler reuses them)."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.fw = lexicon.function_words
        self.en = lexicon.english
        self._markers = {role: Phrase((fw.zh,)) for role, fw in self.fw.items()}
        self._functions = {
            role: Phrase((fw.zh,), fw.en, tuple((0, j) for j in range(len(fw.en))))
            for role, fw in self.fw.items()
        }
        self.the = Phrase((), (self.en.the,))
        self.pronouns = index(lexicon.pronouns, "lexicon.pronouns")
        self.names = index(lexicon.names, "lexicon.names")
        self.nouns = index(lexicon.nouns, "lexicon.nouns")
        self.places = index(lexicon.places, "lexicon.places")
        self.transitive = index(lexicon.transitive_verbs, "lexicon.transitive_verbs")
        self.intransitive = index(lexicon.intransitive_verbs, "lexicon.intransitive_verbs")
        self.adjectives = index(lexicon.adjectives, "lexicon.adjectives")
        self.times = index(lexicon.times, "lexicon.times")
        self.numbers = index(lexicon.numbers, "lexicon.numbers")
        self.connectives = {" ".join(c.phrase.zh): c for c in lexicon.connectives}
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
        en = (article or self.en.the, *phrase.en)
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
        zh_order, en_order = self.lexicon.word_order[construction]
        return arrange(parts, zh_order, en_order, cross, cross_possible)
