"""A configuration option and the checks of its value, shared by every section of the config.

Each section is a dataclass owned by the room it configures (the corpus's by
:mod:`seq2seq.data.config`, the rest by :mod:`seq2seq.config.schema`); an option is a field
whose metadata carries its help text (``python scripts/train.py --help`` prints it), and a bad
value is one :class:`~seq2seq.errors.UserError` line saying what fits.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from seq2seq.errors import UserError


def option(default: Any, help: str) -> Any:
    """A dataclass field with ``default`` (a list is copied for each instance) and its help."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


def check(ok: bool, message: str) -> None:
    """Refuse with ``message`` (one line: what is wrong and what fits) unless ``ok``."""
    if not ok:
        raise UserError(message)


def at_least(name: str, value: float, bound: float, says: str = "") -> None:
    """Refuse option ``name`` unless ``value >= bound`` (``says`` replaces the usual wording)."""
    check(value >= bound, f"{name} {says or f'must be at least {bound}'}, got {value}")
