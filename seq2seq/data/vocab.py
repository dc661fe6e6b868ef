"""Token <-> id mapping built from the training split, stored as plain JSON-able data."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from seq2seq.data.subwords import Subwords

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)


class Vocab:
    """A fixed token list; ids 0..3 are ``<pad> <unk> <bos> <eos>`` (padding shares no id).

    Unknown tokens map to ``<unk>``, and so do the special tokens' spellings when they occur in
    text (``<eos>`` typed by a user): only the model's own bookkeeping emits their ids, so a
    typed ``<eos>`` cannot end a source early. ``to_dict``/``from_dict`` give plain data so a
    vocabulary travels inside a ``weights_only`` checkpoint.

    A subword vocabulary (English with ``data.tgt_subwords``) also holds the
    :class:`~seq2seq.data.subwords.Subwords` model whose pieces its tokens are, so whoever
    loads it segments and joins text exactly as training did.
    """

    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(self, tokens: Sequence[str], subwords: Subwords | None = None) -> None:
        self.subwords = subwords
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        if len(set(tokens)) != len(tokens):
            raise ValueError("a vocabulary must not list a token twice")
        self.itos: list[str] = list(tokens)
        self.stoi: dict[str, int] = {tok: i for i, tok in enumerate(self.itos)}
        self._word_ids = {tok: i for tok, i in self.stoi.items() if tok not in SPECIALS}

    @classmethod
    def build(
        cls,
        sentences: Iterable[Sequence[str]],
        min_freq: int = 1,
        subwords: Subwords | None = None,
    ) -> Vocab:
        """Most frequent first (ties alphabetical, so the order is deterministic)."""
        counts = Counter(tok for sentence in sentences for tok in sentence)
        kept = sorted(
            (t for t, c in counts.items() if c >= min_freq and t not in SPECIALS),
            key=lambda t: (-counts[t], t),
        )
        return cls([*SPECIALS, *kept], subwords)

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Vocab) and self.itos == other.itos and self.subwords == other.subwords
        )

    def __repr__(self) -> str:
        kind = ", subwords" if self.subwords is not None else ""
        return f"Vocab(size={len(self)}{kind})"

    def encode(self, tokens: Sequence[str], eos: bool = True) -> list[int]:
        """Tokens -> ids, unknown words and literal specials -> ``<unk>``; appends ``<eos>``
        by default."""
        ids = [self._word_ids.get(tok, self.unk_id) for tok in tokens]
        return [*ids, self.eos_id] if eos else ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Ids -> tokens, stopping at the first ``<eos>`` and dropping ``<pad>``/``<bos>``."""
        tokens = []
        for i in ids:
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                tokens.append(self.itos[i])
        return tokens

    def knows(self, token: str) -> bool:
        """Whether ``token`` is a word of this vocabulary (a special's spelling is not)."""
        return token in self._word_ids

    def unknown(self, tokens: Iterable[str]) -> list[str]:
        """The tokens of ``tokens`` that :meth:`encode` maps to ``<unk>``, in order."""
        return [tok for tok in tokens if not self.knows(tok)]

    def to_dict(self) -> dict[str, Any]:
        """``{"tokens": [...]}``, plus ``"sentencepiece"`` (the model, base64) for subwords."""
        data: dict[str, Any] = {"tokens": list(self.itos)}
        if self.subwords is not None:
            data["sentencepiece"] = base64.b64encode(self.subwords.model).decode("ascii")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Vocab:
        """The inverse of :meth:`to_dict`; ``ValueError`` for tokens that are not a list of
        strings starting with the specials (sentencepiece's ``RuntimeError`` for a damaged
        model)."""
        tokens = data["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError("its tokens should be a list of strings")
        model = data.get("sentencepiece")
        subwords = Subwords(base64.b64decode(model)) if model is not None else None
        return cls(tokens, subwords)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
