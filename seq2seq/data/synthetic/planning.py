"""Length planning for the sampler: how to fill a clause's slots to an exact length.

A :class:`ClausePlan` is a clause kind with its slots (subject, predicate, object, ...);
each :class:`Slot` groups its weighted options by Chinese length. :func:`fit_lengths`
lists every combination of slot lengths that adds up to a target, so a sampled clause has
exactly the requested length while following the slots' own weights. The weighted draws
(:func:`draw`, :func:`pick`, :func:`weighted`) are shared with the grammar's sampler.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Option:
    """One choice for a slot of a clause: a label, its Chinese length and its weight."""

    label: Any
    length: int
    weight: float


@dataclass(frozen=True)
class Slot:
    """A named part of a clause and its options, grouped by Chinese length."""

    name: str
    lengths: tuple[int, ...]
    length_weights: tuple[float, ...]
    labels: tuple[tuple[Any, ...], ...]  # per length
    label_cumulative: tuple[tuple[float, ...], ...]  # per length: running sums of weights

    @classmethod
    def of(cls, name: str, options: Iterable[Option]) -> Slot:
        """The slot offering ``options``; options of weight 0 are dropped."""
        by_length: dict[int, list[Option]] = {}
        for option in options:
            if option.weight > 0:
                by_length.setdefault(option.length, []).append(option)
        lengths = tuple(sorted(by_length))
        groups = [by_length[n] for n in lengths]
        return cls(
            name,
            lengths,
            tuple(sum(o.weight for o in group) for group in groups),
            tuple(tuple(o.label for o in group) for group in groups),
            tuple(running_sums(o.weight for o in group) for group in groups),
        )

    def sums(self, rest: int) -> int:
        """Bitmask of totals reachable by this slot plus a total in ``rest``."""
        mask = 0
        for length in self.lengths:
            mask |= rest << length
        return mask

    def label(self, rng: random.Random, length: int) -> Any:
        """A label of the given length, by weight."""
        k = self.lengths.index(length)
        labels = self.labels[k]
        if len(labels) == 1:
            return labels[0]
        return labels[draw(rng, self.label_cumulative[k])]


@dataclass(frozen=True)
class ClausePlan:
    """A clause kind with its head word fixed, and the slots to fill."""

    kind: str
    head: str
    slots: tuple[Slot, ...]
    subject_kinds: tuple[str, ...]
    reachable: int  # bit n set <=> the slots can add up to n Chinese tokens
    index: int  # position among the grammar's plans (a cache key)


@dataclass(frozen=True)
class Fits:
    """Every way a plan's slot lengths add up to one target, with running-sum weights."""

    combos: tuple[tuple[int, ...], ...]
    cumulative: tuple[float, ...]


def running_sums(weights: Iterable[float]) -> tuple[float, ...]:
    """Cumulative weights, the form :func:`draw` takes."""
    total = 0.0
    sums = []
    for weight in weights:
        total += weight
        sums.append(total)
    return tuple(sums)


def draw(rng: random.Random, cumulative: Sequence[float]) -> int:
    """Index ``i`` with probability proportional to ``cumulative[i] - cumulative[i - 1]``."""
    return min(bisect_right(cumulative, rng.random() * cumulative[-1]), len(cumulative) - 1)


def weighted(rng: random.Random, items: Sequence[T], weights: Sequence[float]) -> T:
    """An item with probability proportional to its weight."""
    return items[draw(rng, running_sums(weights))]


def pick(rng: random.Random, items: Sequence[T]) -> T:
    """An item chosen uniformly."""
    if not items:
        raise ValueError("nothing to choose from")
    return items[int(rng.random() * len(items))]  # as uniform as randrange, and faster


def fit_lengths(slots: Sequence[Slot], target: int) -> Fits:
    """All slot-length combinations that add up to ``target``, weighted by the product of
    their length weights (so a draw is exact and follows the slots' own weights)."""
    suffix = [1] * (len(slots) + 1)
    for k in range(len(slots) - 1, -1, -1):
        suffix[k] = slots[k].sums(suffix[k + 1])
    combos: list[tuple[int, ...]] = []
    weights: list[float] = []

    def walk(k: int, need: int, lengths: tuple[int, ...], weight: float) -> None:
        if k == len(slots):
            combos.append(lengths)
            weights.append(weight)
            return
        slot = slots[k]
        for length, w in zip(slot.lengths, slot.length_weights, strict=True):
            if length <= need and suffix[k + 1] >> (need - length) & 1:
                walk(k + 1, need - length, (*lengths, length), weight * w)

    if suffix[0] >> target & 1:
        walk(0, target, (), 1.0)
    if not combos:
        raise ValueError(f"these slots cannot make {target} tokens")
    return Fits(tuple(combos), running_sums(weights))
