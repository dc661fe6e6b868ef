"""``data/grammar.yaml`` as typed records: the schema, its reader, and the checks across it.

The file's sections are the frozen pydantic models below (:class:`GrammarFile` at the top).
Pydantic turns each YAML value into the type its field declares (``Word``: one token,
``Words``: a string read as tokens, ``Rate``: 0 to 1, ``Weight``: at least 0, a ``Literal``
choice, a non-empty list ...) and refuses unknown keys; each record checks what its own fields
must agree on (a connective's alignment, a construction's parts). :func:`read_grammar_file`
turns the first error into one line naming the value's path (``lexicon.nouns[3].measure``),
and :func:`check` checks what needs the whole file (a Chinese word in two roles, a verb taking
an unknown noun kind). All raise :class:`GrammarFileError`. (OmegaConf's structured configs
would name ``zh`` instead of ``lexicon.nouns[3].zh`` for a bad value inside a list, which a
learner cannot find.)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, TypeVar, get_args

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from seq2seq.data.corpus import parse_alignment
from seq2seq.data.synthetic.phrase import Phrase
from seq2seq.errors import UserError

DEFAULT_GRAMMAR = Path(__file__).resolve().parents[3] / "data" / "grammar.yaml"


class GrammarFileError(ValueError):
    """Something in the grammar file is missing or malformed (the message says what)."""


# --------------------------------------------------------------------------- value types


def _refused(wanted: str) -> PydanticCustomError:
    """The error for a value that is not ``wanted`` (``"a single word"``)."""
    return PydanticCustomError("wanted", "must be {wanted}", {"wanted": wanted})


def _words(value: Any) -> tuple[str, ...]:
    """A string read as its tokens (``"take care of"``: three words)."""
    words = tuple(value.split()) if isinstance(value, str) else ()
    if not words:
        raise _refused("a non-empty string")
    return words


def _word(value: Any) -> str:
    """A string of exactly one token."""
    words = _words(value)
    if len(words) != 1:
        raise _refused("a single word")
    return words[0]


T = TypeVar("T")
K = TypeVar("K")
Word = Annotated[str, PlainValidator(_word)]
Words = Annotated[tuple[str, ...], PlainValidator(_words)]
Rate = Annotated[float, Strict(), Field(ge=0, le=1)]
Weight = Annotated[float, Strict(), Field(ge=0)]
#: YAML lists, read as tuples: of at least one value, of exactly two, of exactly three.
NonEmpty = Annotated[tuple[T, ...], Field(min_length=1)]
Two = Annotated[tuple[T, ...], Field(min_length=2, max_length=2)]
Three = Annotated[tuple[T, ...], Field(min_length=3, max_length=3)]
#: How often each key is drawn (a non-empty mapping, read-only like the rest of the records).
Weights = Annotated[Mapping[K, Weight], Field(min_length=1), AfterValidator(MappingProxyType)]
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


# --------------------------------------------------------------------------- the schema


class Record(BaseModel):
    """A mapping of the file with exactly these keys; frozen once read."""

    # Built on first read: every process that loads the data config imports the schema, and
    # most of them never read the file.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        # extra="forbid" reports each unknown key alone; a learner with a typo wants the known ones
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                known = ", ".join(cls.model_fields)
                raise PydanticCustomError(
                    "unknown_keys",
                    "has unknown keys {unknown}; use {known}",
                    {"unknown": unknown, "known": known},
                )
        return data


class Pronoun(Record):
    """我 -> I / me / my; ``person`` and ``plural`` drive agreement."""

    zh: Word
    subject: Word
    object: Word
    possessive: Word
    person: Literal[1, 2, 3]
    plural: StrictBool = False


class Entry(Record):
    """A lexicon word and its English (names; the base of the entries below)."""

    zh: Word
    en: Words


class Noun(Entry):
    """``kind`` (person, food ...) is what verbs and adjectives select; ``plural`` defaults to
    the singular + "s"; mass nouns (茶 tea) have no ``measure`` word, plural or bare article."""

    kind: Word
    measure: Word | None = None
    plural: Words = Field(default_factory=lambda data: (*data["en"][:-1], data["en"][-1] + "s"))

    @property
    def mass(self) -> bool:  # 茶 tea, 水 water
        return self.measure is None


class Place(Entry):
    """北京 -> Beijing, 公园 -> the park; 在 translates to ``preposition``."""

    preposition: Word


class Adjective(Entry):
    """An adjective and the noun kinds (and ``place``) it ``describes``."""

    describes: NonEmpty[Word]


class TimeWord(Entry):
    """昨天 -> yesterday, and the tense it calls for."""

    tense: Tense


class Number(Entry):
    """三 -> three; ``value`` 1 keeps the noun singular."""

    value: Annotated[int, Strict(), Field(ge=1)]


class Verb(Record):
    """``forms``: base, third person singular, past; ``objects``: the noun kinds it takes."""

    zh: Word
    forms: Three[Words]
    objects: NonEmpty[Word] = ()


class Lexicon(Record):
    """The word lists of ``lexicon``; each list's category is its name in the singular,
    without its qualifier (``transitive_verbs``: ``verb``), and its words are always aligned."""

    pronouns: NonEmpty[Pronoun]
    names: NonEmpty[Entry]
    nouns: NonEmpty[Noun]
    places: NonEmpty[Place]
    transitive_verbs: NonEmpty[Verb]
    intransitive_verbs: NonEmpty[Verb]
    adjectives: NonEmpty[Adjective]
    times: NonEmpty[TimeWord]
    numbers: NonEmpty[Number]


def category(lexicon_list: str) -> str:
    """The category of the words of a :class:`Lexicon` list (``times``: ``time``)."""
    return lexicon_list.removesuffix("s").rsplit("_", 1)[-1]


class Marker(Record):
    """A Chinese grammatical word with no English of its own (``aligned: false``: never aligned)."""

    zh: Word
    aligned: StrictBool = True


class Translated(Record):
    """A Chinese grammatical word with a fixed English (不 -> not)."""

    zh: Word
    en: Words

    @property
    def phrase(self) -> Phrase:
        """The word linked to each of its English words."""
        return Phrase((self.zh,), self.en, tuple((0, j) for j in range(len(self.en))))


class FunctionWords(Record):
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


class EnglishWords(Record):
    """English grammatical words; the first five have no Chinese counterpart."""

    definite_article: Word
    indefinite_article: Word
    indefinite_article_vowel: Word
    relative: Word
    relative_person: Word
    do: Three[Word]
    copula_present: Three[Word]
    copula_past: Two[Word]
    copula_infinitive: Word

    @property
    def unaligned(self) -> frozenset[str]:
        """Articles and relative pronouns: never sure-aligned."""
        articles = (self.definite_article, self.indefinite_article, self.indefinite_article_vowel)
        return frozenset((*articles, self.relative, self.relative_person))


class Connective(Record):
    """Joins two clauses (``， 然后`` -> ``, and then``); ``align`` is Pharaoh inside it."""

    zh: Words
    en: Words
    align: str
    weight: Weight = 1.0
    before_question: StrictBool = False  # may introduce a final question clause

    @property
    def phrase(self) -> Phrase:
        """The connective with the links of ``align`` (checked when the file is read)."""
        links = parse_alignment(self.align, len(self.zh), len(self.en))
        return Phrase(self.zh, self.en, links.sure, links.possible)

    @model_validator(mode="after")
    def _links_every_chinese_word(self) -> Connective:
        try:
            linked = {i for i, _ in self.phrase.links}
        except ValueError as err:  # not Pharaoh, or a link outside the connective
            raise ValueError(f"align: {err}") from None
        if linked != set(range(len(self.zh))):
            raise ValueError("align must link every Chinese word")
        return self


class Order(Record):
    """The parts of a construction in Chinese and in English order."""

    zh: NonEmpty[Word]
    en: NonEmpty[Word]


class WordOrder(Record):
    """The order of the parts of each construction (:data:`ORDER_PARTS` says which parts)."""

    statement: Order
    question: Order
    statement_time_first: Order  # the object or companion ends in a relative clause
    question_time_first: Order
    relative_clause: Order  # 我 买 的 书 -> the book that I bought
    subject_relative_clause: Order  # 喜欢 猫 的 学生 -> the student who likes cats

    @model_validator(mode="after")
    def _each_part_once(self) -> WordOrder:
        for construction, parts in ORDER_PARTS.items():
            for language, wanted in zip(("zh", "en"), parts, strict=True):
                if sorted(getattr(getattr(self, construction), language)) != sorted(wanted.split()):
                    listed = ", ".join(sorted(wanted.split()))
                    raise ValueError(f"{construction}.{language} must list each of {listed} once")
        return self


class OptionalParts(Record):
    """The chance that a clause has each optional part."""

    time: Rate
    place: Rate
    companion: Rate


class Sampling(Record):
    """How often each construction is drawn (weights need not sum to 1)."""

    question_rate: Rate
    negation_rate: Rate
    clause_kinds: Weights[ClauseKind]
    tenses: Weights[Tense]
    optional: OptionalParts
    subject_forms: Weights[NounPhraseForm]
    object_forms: Weights[NounPhraseForm]
    companion_forms: Weights[Literal["pronoun", "name", "bare", "possessive"]]
    complement_forms: Weights[Literal["bare", "modified"]]
    subject_relative_object_forms: NonEmpty[Literal["pronoun", "name", "place", "bare"]]

    @model_validator(mode="after")
    def _a_positive_weight_each(self) -> Sampling:
        for name, weights in self:
            if isinstance(weights, Mapping) and not any(weights.values()):
                raise ValueError(f"{name} needs at least one positive weight")
        return self


class GrammarFile(Record):
    """Everything ``grammar.yaml`` says, typed and checked."""

    word_order: WordOrder
    function_words: FunctionWords
    english_function_words: EnglishWords
    connectives: NonEmpty[Connective]
    sampling: Sampling
    lexicon: Lexicon

    @model_validator(mode="after")
    def _a_positive_connective(self) -> GrammarFile:
        if not any(c.weight for c in self.connectives):
            raise ValueError("connectives need at least one positive weight")
        return self


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
    try:
        return GrammarFile.model_validate(data)
    except ValidationError as err:
        raise GrammarFileError(_message(err.errors()[0])) from None


#: What a value must be, by the type of pydantic's error (its ``ctx`` fills the braces).
_WANTED = {
    "wanted": "{wanted}",  # raised by the value types above
    "model_type": "a mapping",
    "dict_type": "a mapping",
    "tuple_type": "a list",
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "literal_error": "one of {expected}",
    "greater_than_equal": "at least {ge:g}",
    "less_than_equal": "at most {le:g}",
}


def _path(loc: tuple[int | str, ...]) -> str:
    """``("lexicon", "nouns", 3, "zh")`` -> ``lexicon.nouns[3].zh``; ``()``: the file."""
    if loc and loc[-1] == "[key]":  # a mapping's key, found at the value's place
        return f"{_path(loc[:-2])} key"
    steps = (f"[{step}]" if isinstance(step, int) else f".{step}" for step in loc)
    return "".join(steps).removeprefix(".") or "the file"


def _message(error: ErrorDetails) -> str:
    """One line for pydantic's ``error``: the value's path, what it must be, what it is."""
    loc, kind, ctx = error["loc"], error["type"], error.get("ctx", {})
    if kind == "value_error":  # a record's own check: its message starts with the field
        return f"{_path(loc)}.{ctx['error']}" if loc else str(ctx["error"])
    if kind == "missing":
        return f"{_path(loc[:-1])} has no {loc[-1]!r}"
    if kind == "unknown_keys":
        return f"{_path(loc)} {error['msg']}"
    if kind in ("too_short", "too_long"):  # a list of more than one value has a fixed length
        size = ctx.get("min_length", ctx.get("max_length"))
        noun = "mapping" if ctx["field_type"] == "Dictionary" else "list"
        wanted = f"a non-empty {noun}" if size == 1 else f"a list of {size} values"
    elif kind in _WANTED:
        wanted = _WANTED[kind].format(**ctx)
    else:
        return f"{_path(loc)}: {error['msg']}"
    return f"{_path(loc)} must be {wanted}, found {error['input']!r}"


# --------------------------------------------------------------------------- checks across the file


def check(grammar: GrammarFile) -> dict[str, str]:
    """Check what needs the whole file; return every Chinese word's category (a lexicon
    list's category, ``measure_word``, ``connective``, or a function word's role)."""
    lex, fw = grammar.lexicon, grammar.function_words
    tagged = [(e.zh, category(name)) for name, entries in lex for e in entries]
    tagged += [(n.measure, "measure_word") for n in lex.nouns if n.measure is not None]
    tagged += [(word.zh, role) for role, word in fw]
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
