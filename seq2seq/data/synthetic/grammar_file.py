"""``data/grammar.yaml`` as typed records: the schema, its reader, and the checks across it.

The file's sections are the frozen dataclasses below (:class:`GrammarFile` at the top);
:func:`build` turns each YAML value into the type its field declares (``Word``: one token,
``Words``: a string read as tokens, ``Rate``: 0 to 1, ``Weight``: at least 0, a ``Literal``
choice ...), so a wrong type, a missing or unknown key or a value out of range stops with
one line naming its path (``lexicon.nouns[3].measure``). :func:`check` checks what needs the
whole file (a Chinese word in two roles, a verb taking an unknown noun kind). All raise
:class:`GrammarFileError`. (OmegaConf's structured configs would name ``zh`` instead of
``lexicon.nouns[3].zh`` for a bad value inside a list, which a learner cannot find.)
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NewType, NoReturn, get_args, get_origin, get_type_hints

import yaml

from seq2seq.data.corpus import parse_alignment
from seq2seq.data.synthetic.phrase import Phrase
from seq2seq.errors import UserError

DEFAULT_GRAMMAR = Path(__file__).resolve().parents[3] / "data" / "grammar.yaml"

Word = NewType("Word", str)
Words = NewType("Words", tuple[str, ...])
Rate = NewType("Rate", float)
Weight = NewType("Weight", float)
Tense = Literal["present", "past", "future"]
TENSES: tuple[Tense, ...] = get_args(Tense)
ClauseKind = Literal["transitive", "intransitive", "adjective", "copula"]
# fmt: off
NounPhraseForm = Literal[
    "pronoun", "name", "place", "bare", "possessive", "counted", "this", "modified",
    "counted_modified", "this_modified", "relative", "relative_time", "subject_relative",
]
# fmt: on
_CLAUSE = "subject time aux companion place verb object"
_QUESTION = f"{_CLAUSE} particle"
#: The parts each construction of ``word_order`` lists: (Chinese parts, English parts).
# fmt: off
ORDER_PARTS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "statement": (_CLAUSE, _CLAUSE),
    "question": (_QUESTION, _QUESTION),
    "statement_time_first": (_CLAUSE, _CLAUSE),
    "question_time_first": (_QUESTION, _QUESTION),
    "relative_clause": ("subject time verb modifier head",
                        "article head relative subject verb time"),
    "subject_relative_clause": ("verb object modifier head", "article head relative verb object"),
})
# fmt: on


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
    """The word lists of ``lexicon``; each list's category is its name in the singular,
    without its qualifier (``transitive_verbs``: ``verb``), and its words are always aligned."""

    pronouns: tuple[Pronoun, ...]
    names: tuple[Entry, ...]
    nouns: tuple[Noun, ...]
    places: tuple[Place, ...]
    transitive_verbs: tuple[Verb, ...]
    intransitive_verbs: tuple[Verb, ...]
    adjectives: tuple[Adjective, ...]
    times: tuple[TimeWord, ...]
    numbers: tuple[Number, ...]


def category(lexicon_list: str) -> str:
    """The category of the words of a :class:`Lexicon` list (``times``: ``time``)."""
    return lexicon_list.removesuffix("s").rsplit("_", 1)[-1]


@dataclass(frozen=True)
class Marker:
    """A Chinese grammatical word with no English of its own (``aligned: false``: never aligned)."""

    zh: Word
    aligned: bool = True


@dataclass(frozen=True)
class Translated:
    """A Chinese grammatical word with a fixed English (不 -> not)."""

    zh: Word
    en: Words

    @property
    def phrase(self) -> Phrase:
        """The word linked to each of its English words."""
        return Phrase((self.zh,), self.en, tuple((0, j) for j in range(len(self.en))))


@dataclass(frozen=True)
class FunctionWords:
    """The Chinese grammatical words, by the role the builders give them."""

    modifier: Marker  # 的
    question: Marker  # 吗
    together: Marker  # 一起 in 和 X 一起
    perfective: Marker  # 了: linked to the past-tense verb, or to "did"
    locative: Marker  # 在: its English comes from the place
    copula: Marker  # 是: linked to am / is / are
    question_mark: Translated  # ？
    negation: Translated  # 不
    past_negation: Translated  # 没
    future: Translated  # 会
    degree: Translated  # 很
    comitative: Translated  # 和
    demonstrative: Translated  # 这


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
        articles = (self.definite_article, self.indefinite_article, self.indefinite_article_vowel)
        return frozenset((*articles, self.relative, self.relative_person))


@dataclass(frozen=True)
class Connective:
    """Joins two clauses (``， 然后`` -> ``, and then``); ``align`` is Pharaoh inside it."""

    zh: Words
    en: Words
    align: str
    weight: Weight = Weight(1.0)
    before_question: bool = False  # may introduce a final question clause
    phrase: Phrase = field(init=False, repr=False)

    def __post_init__(self) -> None:
        links = parse_alignment(self.align, len(self.zh), len(self.en))
        if {i for i, _ in links.sure} != set(range(len(self.zh))):
            raise ValueError("align must link every Chinese word")
        object.__setattr__(self, "phrase", Phrase(self.zh, self.en, links.sure, links.possible))


@dataclass(frozen=True)
class Order:
    """The parts of a construction in Chinese and in English order."""

    zh: tuple[Word, ...]
    en: tuple[Word, ...]


@dataclass(frozen=True)
class WordOrder:
    """The order of the parts of each construction (:data:`ORDER_PARTS` says which parts)."""

    statement: Order
    question: Order
    statement_time_first: Order  # the object or companion ends in a relative clause
    question_time_first: Order
    relative_clause: Order  # 我 买 的 书 -> the book that I bought
    subject_relative_clause: Order  # 喜欢 猫 的 学生 -> the student who likes cats

    def __post_init__(self) -> None:
        for construction, parts in ORDER_PARTS.items():
            for language, wanted in zip(("zh", "en"), parts, strict=True):
                if sorted(getattr(getattr(self, construction), language)) != sorted(wanted.split()):
                    listed = ", ".join(sorted(wanted.split()))
                    raise ValueError(f"{construction}.{language} must list each of {listed} once")


@dataclass(frozen=True)
class OptionalParts:
    """The chance that a clause has each optional part."""

    time: Rate
    place: Rate
    companion: Rate


@dataclass(frozen=True)
class Sampling:
    """How often each construction is drawn (weights need not sum to 1)."""

    question_rate: Rate
    negation_rate: Rate
    clause_kinds: Mapping[ClauseKind, Weight]
    tenses: Mapping[Tense, Weight]
    optional: OptionalParts
    subject_forms: Mapping[NounPhraseForm, Weight]
    object_forms: Mapping[NounPhraseForm, Weight]
    companion_forms: Mapping[Literal["pronoun", "name", "bare", "possessive"], Weight]
    complement_forms: Mapping[Literal["bare", "modified"], Weight]
    subject_relative_object_forms: tuple[Literal["pronoun", "name", "place", "bare"], ...]


@dataclass(frozen=True)
class GrammarFile:
    """Everything ``grammar.yaml`` says, typed and checked."""

    word_order: WordOrder
    function_words: FunctionWords
    english_function_words: EnglishWords
    connectives: tuple[Connective, ...]
    sampling: Sampling
    lexicon: Lexicon

    def __post_init__(self) -> None:
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

    def fail(wanted: str) -> NoReturn:
        raise GrammarFileError(f"{place} must be {wanted}, found {value!r}")

    if is_dataclass(kind):
        return _record(kind, value, where)
    if kind is Word or kind is Words:
        words = tuple(value.split()) if isinstance(value, str) else ()
        if not words or (kind is Word and len(words) != 1):
            fail("a single word" if words else "a non-empty string")
        return words[0] if kind is Word else words
    if kind is Rate or kind is Weight:
        number = build(float, value, where)
        if kind is Rate and not 0 <= number <= 1:
            fail("a number between 0 and 1")
        if number < 0:
            fail("a number at least 0")
        return number
    if origin is Literal:
        if value not in args:
            fail("one of " + ", ".join(map(str, args)))
        return value
    if origin in (typing.Union, types.UnionType):
        return None if value is None else build(args[0], value, where)
    if origin is Mapping:
        if not isinstance(value, dict) or not value:
            fail("a non-empty mapping")
        built = {build(args[0], k, f"{where} key"): build(args[1], v, f"{where}.{k}")
                 for k, v in value.items()}  # fmt: skip
        if args[1] is Weight and not any(built.values()):
            raise GrammarFileError(f"{place} needs at least one positive weight")
        return MappingProxyType(built)
    if origin is tuple:
        fixed = args[-1] is not Ellipsis
        if not isinstance(value, list) or not value or (fixed and len(args) != len(value)):
            fail(f"a list of {len(args)} values" if fixed else "a non-empty list")
        items = args if fixed else args[:1] * len(value)
        pairs = enumerate(zip(items, value, strict=True))
        return tuple(build(item, v, f"{where}[{n}]") for n, (item, v) in pairs)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind is bool and isinstance(value, bool):
        return value
    if (kind is int and number and isinstance(value, int)) or (kind is float and number):
        return kind(value)
    if kind is str and isinstance(value, str):
        return value.strip()
    fail({bool: "true or false", int: "a whole number", float: "a number"}.get(kind, str(kind)))


def _record(cls: type, value: Any, where: str) -> Any:
    """A dataclass from a mapping: every key known, every field without default present."""
    place, prefix = where or "the file", f"{where}." if where else ""
    if not isinstance(value, dict):
        raise GrammarFileError(f"{place} must be a mapping, found {value!r}")
    known = {f.name: f for f in fields(cls) if f.init}
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise GrammarFileError(f"{place} has unknown keys {unknown}; use {', '.join(known)}")
    missing = [name for name, f in known.items() if f.default is MISSING and name not in value]
    if missing:
        raise GrammarFileError(f"{place} has no '{missing[0]}'")
    values = {key: build(_hints(cls)[key], item, prefix + key) for key, item in value.items()}
    try:
        return cls(**values)
    except ValueError as err:
        raise GrammarFileError(f"{prefix}{err}") from None


# --------------------------------------------------------------------------- checks across the file


def check(grammar: GrammarFile) -> dict[str, str]:
    """Check what needs the whole file; return every Chinese word's category (a lexicon
    list's category, ``measure_word``, ``connective``, or a function word's role)."""
    lex, fw = grammar.lexicon, grammar.function_words
    tagged = [(e.zh, category(f.name)) for f in fields(lex) for e in getattr(lex, f.name)]
    tagged += [(n.measure, "measure_word") for n in lex.nouns if n.measure is not None]
    tagged += [(getattr(fw, f.name).zh, f.name) for f in fields(fw)]
    tagged += [(zh, "connective") for c in grammar.connectives for zh in c.zh]
    categories: dict[str, str] = {}
    for zh, tag in tagged:
        if categories.setdefault(zh, tag) != tag:
            raise GrammarFileError(
                f"{zh!r} is used both as {categories[zh]} and as {tag}; "
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
