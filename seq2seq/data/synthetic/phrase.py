"""Phrases: Chinese tokens, English tokens and the word alignment between them.

A sentence pair is assembled from :class:`Phrase` pieces; concatenating (``a + b``,
:func:`concat`) or reordering (:func:`arrange`) pieces shifts the links, so every
alignment is right by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from seq2seq.data.corpus import Pair

Link = tuple[int, int]
#: A link across two parts of a construction: (zh part, index, en part, index).
CrossLink = tuple[str, int, str, int]


@dataclass(frozen=True)
class Phrase:
    """Chinese tokens, English tokens and the ``(zh_index, en_index)`` links between them.

    ``links`` are sure links; ``possible`` are possible-only links (an article to its noun,
    do-support to its verb: see the conventions in ``data/grammar.yaml``). Indices are
    local to the phrase; ``a + b`` concatenates both sides and shifts ``b``'s links past ``a``.
    """

    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    possible: tuple[Link, ...] = ()

    def __add__(self, other: Phrase) -> Phrase:
        if not (other.zh or other.en):
            return self
        return other if not (self.zh or self.en) else concat((self, other))

    def to_pair(self) -> Pair:
        """The sentence pair, with sure and possible-only links sorted by (source, target)."""
        sure = set(self.links)
        return Pair(self.zh, self.en, tuple(sorted(sure)), tuple(sorted(set(self.possible) - sure)))


def concat(phrases: Iterable[Phrase]) -> Phrase:
    """Concatenate phrases in order on both sides (like ``sum`` with ``+``, in one pass): what
    :func:`arrange` makes of parts in the same order on both sides, without naming them (the
    generator's most frequent call)."""
    zh: list[str] = []
    en: list[str] = []
    links: list[Link] = []
    possible: list[Link] = []
    for phrase in phrases:
        if phrase.links or phrase.possible:
            dz, de = len(zh), len(en)
            links.extend([(i + dz, j + de) for i, j in phrase.links])
            possible.extend([(i + dz, j + de) for i, j in phrase.possible])
        zh.extend(phrase.zh)
        en.extend(phrase.en)
    return Phrase(tuple(zh), tuple(en), tuple(links), tuple(possible))


def arrange(
    parts: Mapping[str, Phrase],
    zh_order: Sequence[str],
    en_order: Sequence[str],
    cross_links: Iterable[CrossLink] = (),
    cross_possible: Iterable[CrossLink] = (),
) -> Phrase:
    """Lay out named parts in one order in Chinese and another in English.

    Each part keeps its own links; ``cross_links`` join a Chinese word of one part to an
    English word of another (了 in the verb part -> "did" in the auxiliary part), and
    ``cross_possible`` do the same with possible links (的 -> relative "that").
    """
    zh: list[str] = []
    en: list[str] = []
    zh_start: dict[str, int] = {}
    en_start: dict[str, int] = {}
    for name in zh_order:
        zh_start[name] = len(zh)
        zh += parts[name].zh
    for name in en_order:
        en_start[name] = len(en)
        en += parts[name].en
    links: list[Link] = []
    possible: list[Link] = []
    for name in zh_order:
        part = parts[name]
        if part.links:  # a part on one side only has none
            dz, de = zh_start[name], en_start[name]
            links += [(i + dz, j + de) for i, j in part.links]
        if part.possible:
            dz, de = zh_start[name], en_start[name]
            possible += [(i + dz, j + de) for i, j in part.possible]
    links += [(zh_start[a] + i, en_start[b] + j) for a, i, b, j in cross_links]
    possible += [(zh_start[a] + i, en_start[b] + j) for a, i, b, j in cross_possible]
    return Phrase(tuple(zh), tuple(en), tuple(links), tuple(possible))


@dataclass(frozen=True)
class NounPhrase:
    """A noun phrase as subject and as object (they differ for pronouns and bare nouns).

    ``relative``: the English ends in a relative clause, so a time phrase right after it
    would attach to that clause.
    """

    as_subject: Phrase
    as_object: Phrase
    person: int = 3
    plural: bool = False
    head: str = ""
    relative: bool = False

    @property
    def third_singular(self) -> bool:
        """Whether a present-tense verb takes -s after this subject (he/she/it)."""
        return self.person == 3 and not self.plural
