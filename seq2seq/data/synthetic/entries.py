"""The entries of a grammar file: typed records for each lexicon list and section.

:mod:`seq2seq.data.synthetic.lexicon` parses ``data/grammar.yaml`` into these; the
builders and the sampler only ever see these typed, checked values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seq2seq.data.synthetic.phrase import Phrase


@dataclass(frozen=True)
class Pronoun:
    """我 -> I / me / my; ``person`` 1-3 and ``plural`` drive agreement."""

    zh: str
    subject: str
    object: str
    possessive: str
    person: int
    plural: bool


@dataclass(frozen=True)
class Name:
    """A person's name (玛丽 -> Mary): third person singular."""

    zh: str
    en: tuple[str, ...]


@dataclass(frozen=True)
class Noun:
    """A common noun; ``kind`` (person, food, ...) is what verbs and adjectives select."""

    zh: str
    singular: tuple[str, ...]
    plural: tuple[str, ...]
    measure: str | None
    kind: str

    @property
    def mass(self) -> bool:
        """Mass nouns (茶 tea) have no measure word, no plural and no article when bare."""
        return self.measure is None


@dataclass(frozen=True)
class Place:
    """A place (北京 -> Beijing, 公园 -> the park); 在 translates to ``preposition``."""

    zh: str
    en: tuple[str, ...]
    preposition: str


@dataclass(frozen=True)
class Verb:
    """Base, third-person-singular and past forms; ``objects`` lists the noun kinds taken
    (empty for intransitive verbs)."""

    zh: str
    base: tuple[str, ...]
    third: tuple[str, ...]
    past: tuple[str, ...]
    objects: tuple[str, ...] = ()


@dataclass(frozen=True)
class Adjective:
    """An adjective and the noun kinds it ``describes``."""

    zh: str
    en: tuple[str, ...]
    describes: tuple[str, ...]


@dataclass(frozen=True)
class TimeWord:
    """A time phrase (昨天 -> yesterday) and the tense it calls for."""

    zh: str
    en: tuple[str, ...]
    tense: str


@dataclass(frozen=True)
class Number:
    """A numeral (三 -> three); ``value`` 1 keeps the noun singular."""

    zh: str
    en: tuple[str, ...]
    value: int


@dataclass(frozen=True)
class FunctionWord:
    """A Chinese grammatical word; ``en`` is its fixed English counterpart, if any."""

    zh: str
    en: tuple[str, ...]
    aligned: bool


@dataclass(frozen=True)
class EnglishWords:
    """English grammatical words; the first five are never aligned."""

    the: str
    a: str
    an: str
    that: str
    who: str
    do: tuple[str, str, str]
    copula_present: tuple[str, str, str]
    copula_past: tuple[str, str]
    be: str

    @property
    def unaligned(self) -> frozenset[str]:
        """Articles and relative pronouns: no Chinese counterpart."""
        return frozenset({self.the, self.a, self.an, self.that, self.who})


@dataclass(frozen=True)
class Connective:
    """Joins two clauses (``， 然后`` -> ``, and then``)."""

    phrase: Phrase
    weight: float
    before_question: bool


@dataclass(frozen=True)
class Sampling:
    """Weights and rates from the ``sampling`` section."""

    question_rate: float
    negation_rate: float
    clause_length: tuple[int, int]
    stop_rate: float
    clause_kinds: Mapping[str, float]
    tenses: Mapping[str, float]
    optional: Mapping[str, float]
    subject_forms: Mapping[str, float]
    object_forms: Mapping[str, float]
    companion_forms: Mapping[str, float]
    complement_forms: Mapping[str, float]
    subject_relative_object_forms: tuple[str, ...]


@dataclass(frozen=True)
class Lexicon:
    """Everything ``grammar.yaml`` says, parsed and type-checked."""

    pronouns: tuple[Pronoun, ...]
    names: tuple[Name, ...]
    nouns: tuple[Noun, ...]
    places: tuple[Place, ...]
    transitive_verbs: tuple[Verb, ...]
    intransitive_verbs: tuple[Verb, ...]
    adjectives: tuple[Adjective, ...]
    times: tuple[TimeWord, ...]
    numbers: tuple[Number, ...]
    function_words: Mapping[str, FunctionWord]
    english: EnglishWords
    connectives: tuple[Connective, ...]
    word_order: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
    sampling: Sampling
