"""Source-length buckets: the one definition of their edges and labels.

The synthetic generator stratifies its test split by them, and BLEU by length reports
over them, so both must agree: both read :data:`DEFAULT_LENGTH_EDGES` from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

DEFAULT_LENGTH_EDGES: tuple[int, ...] = (10, 20, 30, 40)  # 1-10, 11-20, 21-30, 31-40, 41+


def _check_edges(edges: Sequence[int]) -> None:
    if not edges:
        raise ValueError("length bucket edges must not be empty")
    if any(e < 1 for e in edges) or any(b <= a for a, b in pairwise(edges)):
        raise ValueError(f"length bucket edges must be positive and increasing, got {edges!r}")


def length_bucket(n: int, edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> str:
    """Label of the length bucket holding a sentence of ``n`` tokens.

    With the default edges ``(10, 20, 30, 40)`` the labels are ``"1-10"``, ``"11-20"``,
    ``"21-30"``, ``"31-40"`` and ``"41+"``. Bucket ``k`` holds ``edges[k-1] < n <=
    edges[k]``; a length of 0 falls in the first bucket so that buckets partition every
    non-negative length.
    """
    _check_edges(edges)
    if n < 0:
        raise ValueError(f"a sentence length cannot be negative, got {n}")
    low = 1
    for edge in edges:
        if n <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"{low}+"


def length_bucket_labels(edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> list[str]:
    """All bucket labels for ``edges``, shortest first: ``["1-10", ..., "41+"]``."""
    _check_edges(edges)
    return [length_bucket(e, edges) for e in edges] + [length_bucket(edges[-1] + 1, edges)]
