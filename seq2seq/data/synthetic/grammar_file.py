"""``data/grammar.yaml`` as typed records: the schema, its reader, and the checks across it.

The file's sections are the frozen dataclasses below (:class:`GrammarFile` at the top);
:func:`read_grammar_file` reads the YAML and :func:`build` turns each value into the type its
field declares, so a wrong type, a missing or unknown key, or a value outside a ``Literal``
stops with one line naming the value's path (``lexicon.nouns[3].measure``). Each record
checks its own values in ``__post_init__`` (a rate above 1, a connective's alignment);
:func:`check` checks what needs the whole file (a Chinese word in two roles, a verb taking an
unknown noun kind). All raise :class:`GrammarFileError`.

``Word`` is one token, ``Words`` a non-empty string read as a tuple of tokens. (OmegaConf's
structured configs would do the typing too, but report ``zh`` instead of
``lexicon.nouns[3].zh`` for a bad value inside a list, which a learner cannot find.)
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NewType, get_args, get_origin, get_type_hints

import yaml

from seq2seq.data.corpus import parse_alignment
from seq2seq.data.synthetic.phrase import Phrase
from seq2seq.errors import UserError

DEFAULT_GRAMMAR = Path(__file__).resolve().parents[3] / "data" / "grammar.yaml"

Word = NewType("Word", str)
Words = NewType("Words", tuple[str, ...])
Tense = Literal["present", "past", "future"]
TENSES: tuple[Tense, ...] = get_args(Tense)
ClauseKind = Literal["transitive", "intransitive", "adjective", "copula"]
# fmt: off
NounPhraseForm = Literal[
    "pronoun", "name", "place", "bare", "possessive", "counted", "this", "modified",
    "counted_modified", "this_modified", "relative", "relative_time", "subject_relative",
]
Role = Literal[  # of a Chinese function word (the comment in the file says which is which)
    "modifier", "question", "together", "question_mark", "perfective", "negation",
    "past_negation", "future", "degree", "locative", "comitative", "demonstrative", "copula",
]
Construction = Literal[
    "statement", "question", "statement_time_first", "question_time_first", "relative_clause",
    "subject_relative_clause",
]
# fmt: on
ROLES: tuple[Role, ...] = get_args(Role)
TRANSLATED_ROLES = ("question_mark", "negation", "past_negation", "future", "degree", "comitative")
_CLAUSE = "subject time aux companion place verb object"
#: The parts each construction of ``word_order`` lists: (Chinese parts, English parts).
ORDER_PARTS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "statement": (_CLAUSE, _CLAUSE),
        "question": (f"{_CLAUSE} particle", f"{_CLAUSE} particle"),
        "statement_time_first": (_CLAUSE, _CLAUSE),  # the object ends in a relative clause
        "question_time_first": (f"{_CLAUSE} particle", f"{_CLAUSE} particle"),
        "relative_clause": (
            "subject time verb modifier head",
            "article head relative subject verb time",
        ),
        "subject_relative_clause": (
            "verb object modifier head",
            "article head relative verb object",
        ),
    }
)
#: Categories whose words are always aligned (the grammar file's first convention).
CONTENT_CATEGORIES = frozenset(
    {"pronoun", "name", "noun", "place", "verb", "adjective", "time", "number"}
)


class GrammarFileError(ValueError):
    """Something in the grammar file is missing or malformed (the message says what)."""


_hints = functools.cache(get_type_hints)


# --------------------------------------------------------------------------- the schema


@dataclass(frozen=True)
class Pronoun:
    """我 -> I / me / my; ``person`` and ``plural`` drive agreement."""

    zh: Word
    subject: Word
    object: Word
    possessive: Word
    person: Literal[1, 2, 3]
    plural: bool = False


@dataclass(frozen=True)
class Entry:
    """A lexicon word and its English (names; the base of the entries below)."""

    zh: Word
    en: Words


@dataclass(frozen=True)
class Noun(Entry):
    """``kind`` (person, food ...) is what verbs and adjectives select; ``plural`` defaults to
    the singular + "s"; mass nouns (茶 tea) have no ``measure`` word, plural or bare article."""

    kind: Word
    measure: Word | None = None
    plural: Words | None = None

    def __post_init__(self) -> None:
        if self.plural is None:
            object.__setattr__(self, "plural", (*self.en[:-1], self.en[-1] + "s"))

    @property
    def mass(self) -> bool:  # 茶 tea, 水 water
        return self.measure is None


@dataclass(frozen=True)
class Place(Entry):
    """北京 -> Beijing, 公园 -> the park; 在 translates to ``preposition``."""

    preposition: Word


@dataclass(frozen=True)
class Adjective(Entry):
    """An adjective and the noun kinds (and ``place``) it ``describes``."""

    describes: tuple[Word, ...]


@dataclass(frozen=True)
class TimeWord(Entry):
    """昨天 -> yesterday, and the tense it calls for."""

    tense: Tense


@dataclass(frozen=True)
class Number(Entry):
    """三 -> three; ``value`` 1 keeps the noun singular."""

    value: int

    def __post_init__(self) -> None:
        if self.value < 1:
            raise ValueError(f"value must be at least 1, found {self.value}")


@dataclass(frozen=True)
class Verb:
    """``forms``: base, third person singular, past; ``objects``: the noun kinds it takes."""

    zh: Word
    forms: tuple[Words, Words, Words]
    objects: tuple[Word, ...] = ()


@dataclass(frozen=True)
class Lexicon:
    """The word lists of ``lexicon``."""

    pronouns: tuple[Pronoun, ...]
    names: tuple[Entry, ...]
    nouns: tuple[Noun, ...]
    places: tuple[Place, ...]
    transitive_verbs: tuple[Verb, ...]
    intransitive_verbs: tuple[Verb, ...]
    adjectives: tuple[Adjective, ...]
    times: tuple[TimeWord, ...]
    numbers: tuple[Number, ...]


@dataclass(frozen=True)
class FunctionWord:
    """A Chinese grammatical word: ``en`` its fixed English, if any; ``aligned: false`` if
    it is never aligned."""

    zh: Word
    en: Words = ()  # type: ignore[assignment]
    aligned: bool = True


@dataclass(frozen=True)
class EnglishWords:
    """English grammatical words; the first five have no Chinese counterpart."""

    definite_article: Word
    indefinite_article: Word
    indefinite_article_vowel: Word
    relative: Word
    relative_person: Word
    do: tuple[Word, Word, Word]
    copula_present: tuple[Word, Word, Word]
    copula_past: tuple[Word, Word]
    copula_infinitive: Word

    @property
    def unaligned(self) -> frozenset[str]:
        """Articles and relative pronouns: never sure-aligned."""
        return frozenset(
            (self.definite_article, self.indefinite_article, self.indefinite_article_vowel)
        ) | {self.relative, self.relative_person}


@dataclass(frozen=True)
class Connective:
    """Joins two clauses (``， 然后`` -> ``, and then``); ``align`` is Pharaoh inside it."""

    zh: Words
    en: Words
    align: str
    weight: float = 1.0
    before_question: bool = False  # may introduce a final question clause
    phrase: Phrase = field(init=False, repr=False)

    def __post_init__(self) -> None:
        links = parse_alignment(self.align, len(self.zh), len(self.en))
        if {i for i, _ in links.sure} != set(range(len(self.zh))):
            raise ValueError("align must link every Chinese word")
        if self.weight < 0:
            raise ValueError(f"weight must be a number at least 0, found {self.weight}")
        object.__setattr__(self, "phrase", Phrase(self.zh, self.en, links.sure, links.possible))


@dataclass(frozen=True)
class Order:
    """The parts of a construction in Chinese and in English order."""

    zh: tuple[Word, ...]
    en: tuple[Word, ...]


@dataclass(frozen=True)
class OptionalParts:
    """The chance that a clause has each optional part."""

    time: float
    place: float
    companion: float


@dataclass(frozen=True)
class Sampling:
    """How often each construction is drawn (weights need not sum to 1)."""

    question_rate: float
    negation_rate: float
    clause_kinds: Mapping[ClauseKind, float]
    tenses: Mapping[Tense, float]
    optional: OptionalParts
    subject_forms: Mapping[NounPhraseForm, float]
    object_forms: Mapping[NounPhraseForm, float]
    companion_forms: Mapping[Literal["pronoun", "name", "bare", "possessive"], float]
    complement_forms: Mapping[Literal["bare", "modified"], float]
    subject_relative_object_forms: tuple[Literal["pronoun", "name", "place", "bare"], ...]

    def __post_init__(self) -> None:
        rates = {"question_rate": self.question_rate, "negation_rate": self.negation_rate}
        rates.update({f"optional.{k}": v for k, v in dataclasses.asdict(self.optional).items()})
        for name, rate in rates.items():
            if not 0 <= rate <= 1:
                raise ValueError(f"{name} must be a number between 0 and 1, found {rate}")
        for f in fields(self):
            weights, name = getattr(self, f.name), f.name
            if get_origin(_hints(Sampling)[name]) is Mapping:
                for key, weight in weights.items():
                    if weight < 0:
                        raise ValueError(
                            f"{name}.{key} must be a number at least 0, found {weight}"
                        )
                if not any(weights.values()):
                    raise ValueError(f"{name} needs at least one positive weight")


@dataclass(frozen=True)
class GrammarFile:
    """Everything ``grammar.yaml`` says, typed and checked."""

    word_order: Mapping[Construction, Order]
    function_words: Mapping[Role, FunctionWord]
    english_function_words: EnglishWords
    connectives: tuple[Connective, ...]
    sampling: Sampling
    lexicon: Lexicon

    def __post_init__(self) -> None:
        for section, keys in (("word_order", ORDER_PARTS), ("function_words", ROLES)):
            missing = [key for key in keys if key not in getattr(self, section)]
            if missing:
                raise ValueError(f"{section} has no '{missing[0]}'")
        for construction, parts in ORDER_PARTS.items():
            for language, wanted in zip(("zh", "en"), parts, strict=True):
                order = getattr(self.word_order[construction], language)
                if sorted(order) != sorted(wanted.split()):
                    listed = ", ".join(sorted(wanted.split()))
                    raise ValueError(
                        f"word_order.{construction}.{language} must list each of {listed} once"
                    )
        for role in TRANSLATED_ROLES:
            if not self.function_words[role].en:
                raise ValueError(f"function_words.{role} needs an 'en' translation")
        if not any(c.weight for c in self.connectives):
            raise ValueError("connectives need at least one positive weight")


# --------------------------------------------------------------------------- reading


def read_grammar_file(path: Path) -> GrammarFile:
    """Read and check a grammar file; a missing, non-UTF-8 or non-YAML file raises
    :class:`UserError`, content that does not describe a grammar :class:`GrammarFileError`."""
    if not path.is_file():
        raise UserError(f"grammar file {path} does not exist; pass the path of a grammar.yaml")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"grammar file {path} is not UTF-8; re-save it as UTF-8") from None
    except yaml.YAMLError as err:
        reason = " ".join(str(err).split())
        raise UserError(f"grammar file {path} is not valid YAML: {reason}") from None
    return build(GrammarFile, data, "")


def build(kind: Any, value: Any, where: str) -> Any:
    """``value`` (as ``yaml.safe_load`` gives it) as an instance of the type ``kind``, found at
    the dotted path ``where``: dataclasses from mappings, tuples from non-empty lists,
    ``Mapping[K, V]`` from non-empty mappings, ``Literal`` choices, ``X | None``, scalars."""
    origin, args = get_origin(kind), get_args(kind)
    place = where or "the file"
    if dataclasses.is_dataclass(kind):
        return _record(kind, value, where)
    if kind is Word or kind is Words:
        words = tuple(value.split()) if isinstance(value, str) else ()
        if not words:
            raise GrammarFileError(f"{place} must be a non-empty string, found {value!r}")
        if kind is Word and len(words) != 1:
            raise GrammarFileError(f"{place} must be a single word, found {value!r}")
        return words[0] if kind is Word else words
    if origin is Literal:
        if value not in args:
            choices = ", ".join(map(str, args))
            raise GrammarFileError(f"{place} must be one of {choices}, found {value!r}")
        return value
    if origin in (typing.Union, types.UnionType):
        return None if value is None else build(args[0], value, where)
    if origin is tuple or origin is Mapping:
        if not isinstance(value, list if origin is tuple else dict) or not value:
            shape = "list" if origin is tuple else "mapping"
            raise GrammarFileError(f"{place} must be a non-empty {shape}, found {value!r}")
        if origin is Mapping:
            return MappingProxyType(
                {build(args[0], k, f"{where} key"): build(args[1], v, f"{where}.{k}")
                 for k, v in value.items()}
            )  # fmt: skip
        if args[-1] is not Ellipsis and len(args) != len(value):
            raise GrammarFileError(f"{place} must list {len(args)} values, found {len(value)}")
        items = args[:1] * len(value) if args[-1] is Ellipsis else args
        pairs = enumerate(zip(items, value, strict=True))
        return tuple(build(item, v, f"{where}[{n}]") for n, (item, v) in pairs)
    if kind is bool and isinstance(value, bool):
        return value
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric and (kind is float or (kind is int and value == int(value))):
        return kind(value)
    if kind is str and isinstance(value, str):
        return value.strip()
    wanted = {bool: "true or false", int: "a whole number", float: "a number"}.get(kind, kind)
    raise GrammarFileError(f"{place} must be {wanted}, found {value!r}")


def _record(cls: type, value: Any, where: str) -> Any:
    """A dataclass from a mapping: every key known, every field without default present."""
    place = where or "the file"
    if not isinstance(value, dict):
        raise GrammarFileError(f"{place} must be a mapping, found {value!r}")
    known = [f for f in fields(cls) if f.init]
    unknown = sorted(str(key) for key in value if key not in {f.name for f in known})
    if unknown:
        use = ", ".join(f.name for f in known)
        raise GrammarFileError(f"{place} has unknown keys {unknown}; use {use}")
    for f in known:
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if no_default and f.name not in value:
            raise GrammarFileError(f"{place} has no '{f.name}'")
    hints = _hints(cls)
    prefix = f"{where}." if where else ""
    values = {key: build(hints[key], item, prefix + key) for key, item in value.items()}
    try:
        return cls(**values)
    except ValueError as err:
        raise GrammarFileError(f"{prefix}{err}") from None


# --------------------------------------------------------------------------- checks across the file


#: The category of the words of each lexicon list.
CATEGORIES = MappingProxyType(
    {"pronouns": "pronoun", "names": "name", "nouns": "noun", "places": "place",
     "transitive_verbs": "verb", "intransitive_verbs": "verb", "adjectives": "adjective",
     "times": "time", "numbers": "number"}
)  # fmt: skip


def check(grammar: GrammarFile) -> dict[str, str]:
    """Check what needs the whole file; return every Chinese word's category."""
    lex = grammar.lexicon
    tagged = [(e.zh, CATEGORIES[f.name]) for f in fields(lex) for e in getattr(lex, f.name)]
    tagged += [(n.measure, "measure_word") for n in lex.nouns if n.measure is not None]
    tagged += [(word.zh, role) for role, word in grammar.function_words.items()]
    tagged += [(zh, "connective") for c in grammar.connectives for zh in c.zh]
    categories: dict[str, str] = {}
    for zh, category in tagged:
        if categories.setdefault(zh, category) != category:
            raise GrammarFileError(
                f"{zh!r} is used both as {categories[zh]} and as {category}; "
                "a Chinese word may have one role only"
            )
    kinds = {n.kind for n in lex.nouns} | {"place"}
    if "person" not in kinds:
        raise GrammarFileError("lexicon.nouns needs at least one noun of kind person")
    selects = [(v.zh, v.objects) for v in lex.transitive_verbs]
    for zh, used in selects + [(a.zh, a.describes) for a in lex.adjectives]:
        unknown = sorted(set(used) - kinds)
        if unknown:
            known = ", ".join(sorted(kinds))
            raise GrammarFileError(f"{zh} uses unknown noun kinds {unknown}; known: {known}")
    if {t.tense for t in lex.times} != set(TENSES):
        raise GrammarFileError("lexicon.times needs a past, a present and a future time word")
    unaligned = grammar.english_function_words.unaligned
    for entry in (*lex.names, *lex.nouns, *lex.places, *lex.adjectives, *lex.times, *lex.numbers):
        for en in (entry.en, getattr(entry, "plural", entry.en)):
            if set(en) <= unaligned:
                words = " ".join(en)
                raise GrammarFileError(f"{entry.zh}'s translation {words!r} has only articles")
    return categories
