"""The grammar: Chinese→English sentence pairs with gold word alignments, right by construction.

``data/grammar.yaml`` (read and checked by :mod:`~.grammar_file`) holds the words, word order
and sampling weights, and documents the alignment conventions at its top. Two ways in: the
builders of :mod:`~.builders` make one known sentence (``grammar.clause("我", "爱", "中国")``),
and :meth:`Grammar.sample_pair` draws a random one through :mod:`~.sampler`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from seq2seq.data.corpus import Pair
from seq2seq.data.synthetic import grammar_file
from seq2seq.data.synthetic.builders import Builders
from seq2seq.data.synthetic.sampler import Sampler
from seq2seq.errors import UserError


class Grammar(Builders):
    """The rules of ``grammar.yaml``: the builders of known sentences, and a sampler.

    ``categories`` maps every Chinese word to its category (``pronoun``, ``noun``, ``verb``,
    ``measure_word``, a function-word role such as ``perfective`` ...). ``content_src`` are
    the content words (always aligned); ``unaligned_src`` / ``unaligned_tgt`` the words that
    are never aligned.
    """

    def __init__(self, file: grammar_file.GrammarFile) -> None:
        self.categories: Mapping[str, str] = MappingProxyType(grammar_file.check(file))
        super().__init__(file)
        content = {grammar_file.category(name) for name in grammar_file.Lexicon.model_fields}
        markers = dict(file.function_words).values()
        never = {w.zh for w in markers if isinstance(w, grammar_file.Marker) and not w.aligned}
        self.content_src = frozenset(zh for zh, c in self.categories.items() if c in content)
        measures = {zh for zh, c in self.categories.items() if c == "measure_word"}
        self.unaligned_src = frozenset(measures | never)
        self._sampler = Sampler(self)

    @classmethod
    def load(cls, path: str | Path = grammar_file.DEFAULT_GRAMMAR) -> Grammar:
        """Read a grammar file; a missing or invalid file raises :class:`UserError`."""
        path = Path(path)
        try:
            return cls(grammar_file.read_grammar_file(path))
        except grammar_file.GrammarFileError as err:
            raise UserError(f"grammar file {path}: {err}") from None

    def sample_pair(self, rng: random.Random, low: int, high: int | None = None) -> Pair:
        """A random sentence pair whose source has ``low`` tokens, or ``low`` to ``high``.

        Long sentences join clauses with connectives; some end in a yes/no question.
        Raises ``ValueError`` for a length the grammar cannot reach (below 3 tokens).
        """
        return self._sampler.sentence(rng, low, low if high is None else high).to_pair()
