"""The grammar: builds Chinese→English sentence pairs with gold word alignments.

Pairs are assembled from :class:`~seq2seq.data.synthetic.phrase.Phrase` pieces, so every
alignment is right by construction. The lexicon, function words, connectives, word order
and sampling weights live in ``data/grammar.yaml`` (read by
:mod:`~seq2seq.data.synthetic.lexicon`, checked by :mod:`~seq2seq.data.synthetic.checks`),
which documents the alignment conventions at its top. :class:`Grammar` is the one entry
point; the work is done by :mod:`~seq2seq.data.synthetic.words` (words as phrases),
:mod:`~seq2seq.data.synthetic.nounphrases` and :mod:`~seq2seq.data.synthetic.clauses`
(builders, with the English inflection rules), :mod:`~seq2seq.data.synthetic.plans` and
:mod:`~seq2seq.data.synthetic.sampler` (random sentences of a given length).

Two ways in:

* builders such as :meth:`Grammar.clause` make one known sentence
  (``grammar.clause("我", "爱", "中国").to_pair()``);
* :meth:`Grammar.sample_pair` draws a random sentence of a requested source length.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from seq2seq.data.corpus import Pair
from seq2seq.data.synthetic.checks import (
    CONTENT_CATEGORIES,
    categorise,
    check_references,
    check_translations,
)
from seq2seq.data.synthetic.clauses import Clauses
from seq2seq.data.synthetic.entries import Lexicon
from seq2seq.data.synthetic.lexicon import DEFAULT_GRAMMAR, GrammarFileError, load_lexicon
from seq2seq.data.synthetic.nounphrases import NounPhrases
from seq2seq.data.synthetic.phrase import NounPhrase, Phrase
from seq2seq.data.synthetic.plans import Plans
from seq2seq.data.synthetic.sampler import Sampler
from seq2seq.data.synthetic.words import Words
from seq2seq.errors import UserError


class Grammar:
    """The lexicon and rules of ``grammar.yaml``: builders for known sentences and a sampler.

    ``categories`` maps every Chinese word to its category (``pronoun``, ``noun``, ``verb``,
    ``measure_word``, a function-word role such as ``perfective`` ...). ``content_src`` are
    the content words (always aligned); ``unaligned_src`` / ``unaligned_tgt`` the words
    that are never aligned.
    """

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        words = Words(lexicon)
        self.categories: Mapping[str, str] = MappingProxyType(categorise(lexicon))
        self.unaligned_tgt: frozenset[str] = words.unaligned_tgt
        self.unaligned_src: frozenset[str] = frozenset(
            zh for zh, cat in self.categories.items() if cat == "measure_word"
        ) | frozenset(fw.zh for fw in lexicon.function_words.values() if not fw.aligned)
        self.content_src: frozenset[str] = frozenset(
            zh for zh, cat in self.categories.items() if cat in CONTENT_CATEGORIES
        )
        check_references(lexicon)
        check_translations(lexicon, self.unaligned_tgt)
        self._nps = NounPhrases(words)
        self._clauses = Clauses(words, self._nps)
        self._sampler = Sampler(self._clauses, Plans(lexicon))
        self.min_clause_len = self._sampler.min_clause_len

    @classmethod
    def load(cls, path: str | Path = DEFAULT_GRAMMAR) -> Grammar:
        """Read a grammar file; a missing or invalid file raises :class:`UserError`."""
        path = Path(path)
        try:
            return cls(load_lexicon(path))
        except GrammarFileError as err:
            raise UserError(f"grammar file {path}: {err}") from None

    # ----------------------------------------------------------------- noun phrases

    def noun(self, zh: str) -> NounPhrase:
        """A pronoun, name, place or bare noun (书: subject ``the book``, object ``books``)."""
        return self._nps.noun(zh)

    def modified(self, zh: str, adjective: str) -> NounPhrase:
        """新 的 书: subject ``the new book``, object ``new books``."""
        return self._nps.modified(zh, adjective)

    def counted(self, zh: str, number: str, adjective: str | None = None) -> NounPhrase:
        """三 本 [新 的] 书 -> three [new] books (measure word and 的 unaligned)."""
        return self._nps.counted(zh, number, adjective)

    def this(self, zh: str, adjective: str | None = None) -> NounPhrase:
        """这 本 [新 的] 书 -> this [new] book."""
        return self._nps.this(zh, adjective)

    def possessive(self, owner: str, zh: str) -> NounPhrase:
        """我 的 书 -> my book (的 unaligned)."""
        return self._nps.possessive(owner, zh)

    def relative(
        self, zh: str, subject: NounPhrase | str, verb: str, time: str | None = None
    ) -> NounPhrase:
        """我 [昨天] 买 的 书 -> the book that I bought [yesterday] (past tense)."""
        return self._nps.relative(zh, subject, verb, time)

    def subject_relative(self, zh: str, verb: str, obj: NounPhrase | str) -> NounPhrase:
        """喜欢 猫 的 学生 -> the student who likes cats."""
        return self._nps.subject_relative(zh, verb, obj)

    # ----------------------------------------------------------------- clauses

    def clause(
        self,
        subject: NounPhrase | str,
        verb: str,
        obj: NounPhrase | str | None = None,
        *,
        tense: str = "present",
        negated: bool = False,
        time: str | None = None,
        place: str | None = None,
        companion: NounPhrase | str | None = None,
        question: bool = False,
    ) -> Phrase:
        """A verb clause; ``obj=None`` uses the intransitive verb.

        ``grammar.clause("我", "吃", "苹果", tense="past", time="昨天", place="北京")``
        -> 我 昨天 在 北京 吃 了 苹果 / I ate apples in Beijing yesterday.
        """
        return self._clauses.clause(
            subject,
            verb,
            obj,
            tense=tense,
            negated=negated,
            time=time,
            place=place,
            companion=companion,
            question=question,
        )

    def adjective_clause(
        self,
        subject: NounPhrase | str,
        adjective: str,
        *,
        tense: str = "present",
        negated: bool = False,
        time: str | None = None,
        place: str | None = None,
        question: bool = False,
    ) -> Phrase:
        """他 很 高兴 -> he is very happy (the copula is unaligned; 很-very).

        Past needs a past time word, which is the only past marker in the Chinese.
        """
        return self._clauses.adjective_clause(
            subject,
            adjective,
            tense=tense,
            negated=negated,
            time=time,
            place=place,
            question=question,
        )

    def copula_clause(
        self,
        subject: NounPhrase | str,
        noun: str,
        *,
        adjective: str | None = None,
        negated: bool = False,
        question: bool = False,
    ) -> Phrase:
        """他 是 [聪明 的] 老师 -> he is a [clever] teacher (是-is; a unaligned)."""
        return self._clauses.copula_clause(
            subject, noun, adjective=adjective, negated=negated, question=question
        )

    def connective(self, zh: str) -> Phrase:
        """A connective by its Chinese text, e.g. ``"， 然后"`` -> ``, and then``."""
        return self._clauses.connective(zh)

    # ----------------------------------------------------------------- sampling

    def sample_pair(self, rng: random.Random, src_len: int) -> Pair:
        """A random sentence pair whose source has ``src_len`` tokens (a few fewer at worst).

        Long sentences join clauses with connectives; some end in a yes/no question.
        """
        return self.sample_sentence(rng, src_len).to_pair()

    def sample_sentence(self, rng: random.Random, src_len: int) -> Phrase:
        """Like :meth:`sample_pair`, as a :class:`Phrase`."""
        return self._sampler.sentence(rng, src_len)
