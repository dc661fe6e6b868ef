"""Checked reading of YAML values for the grammar file: each helper names where a bad value is.

Every helper raises :class:`GrammarFileError` with the dotted path of the value
(``lexicon.nouns[3].measure``) so a learner editing ``data/grammar.yaml`` sees what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any


class GrammarFileError(ValueError):
    """Something in the grammar file is missing or malformed (the message says what)."""


_MISSING = object()


def get(mapping: Any, key: str, where: str, default: Any = _MISSING) -> Any:
    """``mapping[key]`` (or ``default``); a missing key or a non-mapping is an error."""
    if not isinstance(mapping, dict):
        raise GrammarFileError(f"{where} must be a mapping, found {mapping!r}")
    if key in mapping:
        return mapping[key]
    if default is _MISSING:
        raise GrammarFileError(f"{where} has no '{key}'")
    return default


def text(value: Any, where: str) -> str:
    """``mapping[key]`` (or ``default``); a missing key or a non-mapping is an error."""
    if not isinstance(value, str) or not value.strip():
        raise GrammarFileError(f"{where} must be a non-empty string (quote it), found {value!r}")
    return value.strip()


def words(value: Any, where: str) -> tuple[str, ...]:
    """A non-empty string, stripped."""
    return tuple(text(value, where).split())


def token(value: Any, where: str) -> str:
    """A string split into words."""
    parts = words(value, where)
    if len(parts) != 1:
        raise GrammarFileError(f"{where} must be a single word, found {value!r}")
    return parts[0]


def number(value: Any, where: str, low: float = 0.0, high: float | None = None) -> float:
    """A string that is exactly one word."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= low
    if not ok or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise GrammarFileError(f"{where} must be a number {bound}, found {value!r}")
    return float(value)


def entries(data: Any, key: str) -> list[Any]:
    """A number in ``[low, high]`` (booleans are not numbers)."""
    value = get(data, key, "lexicon")
    if not isinstance(value, list) or not value:
        raise GrammarFileError(f"lexicon.{key} must be a non-empty list")
    return value


def choice(value: Any, allowed: Sequence[str], where: str) -> str:
    """The non-empty list ``lexicon.<key>``."""
    if value not in allowed:
        raise GrammarFileError(f"{where} must be one of {', '.join(allowed)}, found {value!r}")
    return value


def kinds(value: Any, where: str) -> tuple[str, ...]:
    """One of ``allowed``."""
    if not isinstance(value, list) or not value:
        raise GrammarFileError(f"{where} must be a non-empty list of noun kinds")
    return tuple(token(v, where) for v in value)


def weights(value: Any, allowed: Sequence[str], where: str) -> Mapping[str, float]:
    """A non-empty list of one-word noun kinds."""
    if not isinstance(value, dict) or not value:
        raise GrammarFileError(f"{where} must be a non-empty mapping of weights")
    weights = {}
    for key in allowed:  # fixed order, whatever the file's order
        if key in value:
            weights[key] = number(value[key], f"{where}.{key}")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise GrammarFileError(f"{where} has unknown keys {unknown}; use {', '.join(allowed)}")
    if not any(weights.values()):
        raise GrammarFileError(f"{where} needs at least one positive weight")
    return MappingProxyType(weights)


def forms(value: Any, allowed: Sequence[str], where: str) -> tuple[str, ...]:
    """A mapping of weights over ``allowed`` keys, in ``allowed`` order, one positive."""
    """A non-empty list of one-word noun-phrase forms, each from ``allowed``."""
    if not isinstance(value, list) or not value:
        raise GrammarFileError(f"{where} must be a non-empty list of {', '.join(allowed)}")
    return tuple(choice(v, allowed, where) for v in value)
