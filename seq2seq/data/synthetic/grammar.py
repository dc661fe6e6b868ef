"""The grammar: builds Chinese→English sentence pairs with gold word alignments.

Pairs are assembled from :class:`~seq2seq.data.synthetic.phrase.Phrase` pieces, so every
alignment is right by construction. ``data/grammar.yaml`` (read and checked by
:mod:`~.grammar_file`) holds the words, word order and sampling weights, and documents the
alignment conventions at its top. The work is done by :mod:`~.words` (words as phrases),
:mod:`~.nounphrases` and :mod:`~.clauses` (builders, with the English inflection rules) and
:mod:`~.sampler` (random sentences of a requested length). Two ways in: builders such as
:meth:`Grammar.clause` make one known sentence (``grammar.clause("我", "爱", "中国")``), and
:meth:`Grammar.sample_pair` draws a random one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from seq2seq.data.corpus import Pair
from seq2seq.data.synthetic.clauses import Clauses
from seq2seq.data.synthetic.grammar_file import (
    CONTENT_CATEGORIES,
    DEFAULT_GRAMMAR,
    GrammarFile,
    GrammarFileError,
    check,
    read_grammar_file,
)
from seq2seq.data.synthetic.nounphrases import NounPhrases
from seq2seq.data.synthetic.phrase import Phrase
from seq2seq.data.synthetic.sampler import Sampler
from seq2seq.data.synthetic.words import Words
from seq2seq.errors import UserError


class Grammar:
    """The rules of ``grammar.yaml``: builders for known sentences and a sampler.

    ``file`` is the grammar file as typed records; ``categories`` maps every Chinese word to
    its category (``pronoun``, ``noun``, ``verb``, ``measure_word``, a function-word role
    such as ``perfective`` ...). ``content_src`` are the content words (always aligned);
    ``unaligned_src`` / ``unaligned_tgt`` the words that are never aligned.
    """

    def __init__(self, grammar_file: GrammarFile) -> None:
        self.file = grammar_file
        self.lexicon = grammar_file.lexicon
        self.categories: Mapping[str, str] = MappingProxyType(check(grammar_file))
        words = Words(grammar_file)
        self.unaligned_tgt: frozenset[str] = words.unaligned_tgt
        self.unaligned_src: frozenset[str] = frozenset(
            zh for zh, cat in self.categories.items() if cat == "measure_word"
        ) | {fw.zh for fw in grammar_file.function_words.values() if not fw.aligned}
        self.content_src: frozenset[str] = frozenset(
            zh for zh, cat in self.categories.items() if cat in CONTENT_CATEGORIES
        )
        nps = NounPhrases(words)
        clauses = Clauses(words, nps)
        self._sampler = Sampler(clauses)
        # The builders, exposed as they are (their docstrings give an example each):
        # noun phrases (seq2seq.data.synthetic.nounphrases) ...
        self.noun, self.modified, self.counted = nps.noun, nps.modified, nps.counted
        self.this, self.possessive = nps.this, nps.possessive
        self.relative, self.subject_relative = nps.relative, nps.subject_relative
        # ... and clauses (seq2seq.data.synthetic.clauses), e.g.
        # grammar.clause("我", "吃", "苹果", tense="past", time="昨天", place="北京")
        # -> 我 昨天 在 北京 吃 了 苹果 / I ate apples in Beijing yesterday.
        self.clause, self.adjective_clause = clauses.clause, clauses.adjective_clause
        self.copula_clause, self.connective = clauses.copula_clause, clauses.connective

    @classmethod
    def load(cls, path: str | Path = DEFAULT_GRAMMAR) -> Grammar:
        """Read a grammar file; a missing or invalid file raises :class:`UserError`."""
        path = Path(path)
        try:
            return cls(read_grammar_file(path))
        except GrammarFileError as err:
            raise UserError(f"grammar file {path}: {err}") from None

    def sample_pair(self, rng: random.Random, low: int, high: int | None = None) -> Pair:
        """A random sentence pair whose source has ``low`` tokens, or ``low`` to ``high``.

        Long sentences join clauses with connectives; some end in a yes/no question.
        Raises ``ValueError`` for a length the grammar cannot reach (below 3 tokens).
        """
        return self.sample_sentence(rng, low, high).to_pair()

    def sample_sentence(self, rng: random.Random, low: int, high: int | None = None) -> Phrase:
        """Like :meth:`sample_pair`, as a :class:`Phrase`."""
        return self._sampler.sentence(rng, low, low if high is None else high)
