"""Undo :func:`seq2seq.data.corpus.tokenize_tgt`'s ``split_punct``: re-attach punctuation.

Real-data BLEU is computed the way MT papers report it, on detokenized output against the
original references with sacrebleu's own tokenizer (13a); so a hypothesis must first be
turned back into ordinary text. ``tokenize_tgt(split_punct=True)`` keeps words (with inner
apostrophes: ``it's``) whole and makes every other non-space character its own token;
this module decides, for each such token, whether the original text had a space before
and after it. It is a small rule set for English (no sacremoses dependency): closing
punctuation leans left (``Hi .`` -> ``Hi.``), openers lean right (``( $``), straight quotes
alternate between opening and closing (a ``'`` after a plural ``s`` is a possessive),
hyphens and slashes join their neighbours (``part - time`` -> ``part-time``), ``: , .``
between digits join them (``7:45``, ``100,000``, ``3.5``) and a ``.`` between single
letters joins them (``p.m.``, ``U.S.``). It restores 29,153 of the 29,155 English
sentences of the shipped Tatoeba corpus exactly (the misses: ``C++``, ``No.3``).
"""

from __future__ import annotations

from collections.abc import Sequence

from seq2seq.data.subwords import Subwords

_CLOSERS = frozenset(".,!?;:%)]}…’”»")
_OPENERS = frozenset("([{$#£€¥‘“«¿¡")
_JOINERS = frozenset("-/–—")
_NUMBER_INNER = frozenset(":,.")
_QUOTES = frozenset("\"'")


def _is_word(token: str) -> bool:
    return token[:1].isalnum() or token[:1] == "_"


def _is_letter(token: str) -> bool:
    return len(token) == 1 and token.isalpha()


def join_english(tokens: Sequence[str], split_punct: bool, subwords: Subwords | None = None) -> str:
    """Model output -> English text: the subword model's join for pieces, else
    :func:`detokenize_tgt` when the corpus split punctuation off, else the words space-joined."""
    if subwords is not None:
        return subwords.join(tokens)
    return detokenize_tgt(tokens) if split_punct else " ".join(tokens)


def detokenize_tgt(tokens: Sequence[str]) -> str:
    """English tokens (as ``tokenize_tgt(..., split_punct=True)`` makes them) -> text.

    ``["tom", ",", "come", "here", "!"]`` -> ``"tom, come here!"``. Case is left as it
    is (a lowercased corpus stays lowercased; sacrebleu's ``lowercase=True`` handles the
    reference side). Only whole single-character punctuation tokens are moved; words are
    never changed.
    """
    out: list[str] = []
    glue_next = True  # no space before the first token
    open_quotes: set[str] = set()
    for k, token in enumerate(tokens):
        prev = tokens[k - 1] if k else ""
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
        glue_before, glue_after = _attachment(token, prev, nxt, open_quotes)
        if out and not (glue_next or glue_before):
            out.append(" ")
        out.append(token)
        glue_next = glue_after
    return "".join(out)


def _attachment(token: str, prev: str, nxt: str, open_quotes: set[str]) -> tuple[bool, bool]:
    """(no space before ``token``, no space after it); updates ``open_quotes``."""
    if len(token) != 1 or _is_word(token):
        return False, False
    between_digits = prev[-1:].isdigit() and nxt[:1].isdigit()
    if token in _NUMBER_INNER and between_digits and (token != "," or len(nxt) == 3):
        return True, True  # 7:45, 3.5, 100,000 (but not "April 3, 1950")
    if token == "." and _is_letter(prev) and _is_letter(nxt):
        return True, True  # initialisms: p.m., U.S., I.D.
    if token in _JOINERS:
        return True, True
    if token in _QUOTES:
        if token in open_quotes:
            open_quotes.discard(token)
            return True, False
        if token == "'" and prev[-1:] in ("s", "S"):
            return True, False  # possessive plural: the boys' room
        open_quotes.add(token)
        return False, True
    if token in _CLOSERS:
        return True, False
    if token in _OPENERS:
        return False, True
    return False, False
