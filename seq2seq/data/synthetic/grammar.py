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
from seq2seq.data.synthetic.phrase import Phrase
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
        # The builders, exposed as they are (their docstrings give an example each):
        # noun phrases (seq2seq.data.synthetic.nounphrases) ...
        nps = self._nps
        self.noun, self.modified, self.counted = nps.noun, nps.modified, nps.counted
        self.this, self.possessive = nps.this, nps.possessive
        self.relative, self.subject_relative = nps.relative, nps.subject_relative
        # ... and clauses (seq2seq.data.synthetic.clauses), e.g.
        # grammar.clause("我", "吃", "苹果", tense="past", time="昨天", place="北京")
        # -> 我 昨天 在 北京 吃 了 苹果 / I ate apples in Beijing yesterday.
        clauses = self._clauses
        self.clause, self.adjective_clause = clauses.clause, clauses.adjective_clause
        self.copula_clause, self.connective = clauses.copula_clause, clauses.connective

    @classmethod
    def load(cls, path: str | Path = DEFAULT_GRAMMAR) -> Grammar:
        """Read a grammar file; a missing or invalid file raises :class:`UserError`."""
        path = Path(path)
        try:
            return cls(load_lexicon(path))
        except GrammarFileError as err:
            raise UserError(f"grammar file {path}: {err}") from None

    # ----------------------------------------------------------------- sampling

    def sample_pair(self, rng: random.Random, src_len: int) -> Pair:
        """A random sentence pair whose source has ``src_len`` tokens (a few fewer at worst).

        Long sentences join clauses with connectives; some end in a yes/no question.
        """
        return self.sample_sentence(rng, src_len).to_pair()

    def sample_sentence(self, rng: random.Random, src_len: int) -> Phrase:
        """Like :meth:`sample_pair`, as a :class:`Phrase`."""
        return self._sampler.sentence(rng, src_len)
