"""Dataclasses as plain data: written out as JSON objects and read back with every field
checked against its type annotation, so a file format is its dataclass (its keys and their
types are stated once, in the class).

Supported annotations: ``int``, ``float`` (an ``int`` is accepted), ``str``, ``bool``,
``Any``, ``X | None``, ``list[X]``, ``dict[str, X]`` and nested dataclasses. A field with a
default may be absent (files written before it existed); one without is required. Keys the
class does not know are ignored here (a caller that keeps them reads them itself).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

R = TypeVar("R")


class RecordError(ValueError):
    """A plain-data value that does not fit its type; ``key`` is the dotted path to it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key!r} {message}" if key else message)
        self.key = key


def to_plain(value: Any) -> Any:
    """A dataclass (or a list/dict of them) as JSON-ready data, fields in declaration order;
    a nested record with a layout of its own (``to_dict``/``from_dict``) is written by its
    ``to_dict`` (which may itself call ``to_plain`` on its own fields)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _nested(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_nested(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _nested(v) for k, v in value.items()}
    return value


def _nested(value: Any) -> Any:
    if hasattr(value, "to_dict") and not isinstance(value, type | Mapping):
        return value.to_dict()
    return to_plain(value)


def from_plain(cls: type[R], data: object, key: str = "") -> R:
    """Build the dataclass ``cls`` from plain data, checking each field's type.

    Raises :class:`RecordError` naming the dotted key of the first missing or ill-typed
    field (``test.aer``, ``history``); ``key`` prefixes the names (for nested records).
    """
    if not isinstance(data, Mapping):
        raise RecordError(key, f"should be an object, got {_show(data)}")
    values = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = f"{key}.{field.name}" if key else field.name
        if field.name not in data:
            if (
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            ):
                raise RecordError("", f"missing key {name!r}")
            continue
        values[field.name] = _check(_field_types(cls)[field.name], data[field.name], name)
    return cls(**values)


@cache
def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check(annotation: Any, value: object, key: str) -> Any:
    """``value`` converted to ``annotation`` (records built, lists copied) or RecordError."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            try:
                return _check(options[0], value, key)
            except RecordError as err:
                if err.key != key:
                    raise
                message = f"should be {describe(annotation)}, got {_show(value)}"
                raise RecordError(key, message) from None
        for option in options:
            try:
                return _check(option, value, key)
            except RecordError:
                continue
        raise RecordError(key, f"should be {describe(annotation)}, got {_show(value)}")
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, Mapping):
            raise RecordError(key, f"should be {describe(annotation)}, got {_show(value)}")
        reader = getattr(annotation, "from_dict", None)  # a layout of its own
        if reader is not None:
            return reader(value, key)
        return from_plain(annotation, value, key)  # type: ignore[arg-type]
    if origin is list:
        if not isinstance(value, list):
            raise RecordError(key, f"should be {describe(annotation)}, got {_show(value)}")
        try:
            return [_check(args[0], v, key) for v in value]
        except RecordError as err:
            if err.key != key:
                raise
            raise RecordError(key, f"should be {describe(annotation)}") from None
    if origin is dict:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise RecordError(key, f"should be {describe(annotation)}, got {_show(value)}")
        try:
            return {k: _check(args[1], v, key) for k, v in value.items()}
        except RecordError as err:
            if err.key != key:
                raise
            raise RecordError(key, f"should be {describe(annotation)}") from None
    if annotation is float:
        if isinstance(value, float) and not math.isfinite(value):  # JSON readers accept NaN
            raise RecordError(key, f"should be a finite number, got {value}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value  # an int stays an int, so a file round-trips character for character
    elif annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif annotation is bool or annotation is str:
        if isinstance(value, annotation):
            return value
    else:
        raise TypeError(f"records.py cannot check {annotation!r} (at {key})")
    raise RecordError(key, f"should be {describe(annotation)}, got {_show(value)}")


_NOUNS = {
    float: ("a number", "numbers"),
    int: ("an integer", "integers"),
    str: ("a string", "strings"),
    bool: ("true or false", "booleans"),
}


def describe(annotation: Any, plural: bool = False) -> str:
    """``a number``, ``an integer or null``, ``a list of numbers`` for messages."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        text = " or ".join(describe(a, plural) for a in args if a is not type(None))
        return f"{text} or null" if type(None) in args else text
    if dataclasses.is_dataclass(annotation):
        names = ", ".join(f.name for f in dataclasses.fields(annotation)[:2])
        return f"{'objects' if plural else 'an object'} with {names}, ..."
    if origin is list:
        return f"{'lists' if plural else 'a list'} of {describe(args[0], plural=True)}"
    if origin is dict:
        return f"{'objects' if plural else 'an object'} of {describe(args[1], plural=True)}"
    return _NOUNS.get(annotation, ("a value", "values"))[plural]


def _show(value: object) -> str:
    text = repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
