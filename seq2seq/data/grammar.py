"""A YAML grammar that generates Chinese→English sentence pairs with gold word alignments.

Pairs are assembled from :class:`Phrase` pieces (Chinese tokens, English tokens and the
links between them); concatenating or reordering pieces shifts the links, so every
alignment is right by construction. The lexicon, function words, connectives, word order
and sampling weights live in ``data/grammar.yaml``, which documents the alignment
conventions at its top. The English inflection rules (agreement, do-support, tense)
live here.

Two ways in:

* builders such as :meth:`Grammar.clause` make one known sentence
  (``grammar.clause("我", "爱", "中国").to_pair()``);
* :meth:`Grammar.sample_pair` draws a random sentence of a requested source length.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from seq2seq.data.corpus import Pair, parse_alignment
from seq2seq.errors import UserError

T = TypeVar("T")
Link = tuple[int, int]
#: A link across two parts of a construction: (zh part, index, en part, index).
CrossLink = tuple[str, int, str, int]

DEFAULT_GRAMMAR = Path(__file__).resolve().parents[2] / "data" / "grammar.yaml"

TENSES = ("present", "past", "future")
CLAUSE_KINDS = ("transitive", "intransitive", "adjective", "copula")
CONTENT_CATEGORIES = frozenset(
    {"pronoun", "name", "noun", "place", "verb", "adjective", "time", "number"}
)
#: Chinese length of each noun-phrase form (the English side may differ).
NP_FORM_LENGTHS: Mapping[str, int] = MappingProxyType(
    {
        "pronoun": 1,  # 我 / I, me
        "name": 1,  # 玛丽 / Mary
        "place": 1,  # 公园 / the park
        "bare": 1,  # 书 / the book (subject), books (object)
        "possessive": 3,  # 我 的 书 / my book
        "counted": 3,  # 三 本 书 / three books
        "this": 3,  # 这 本 书 / this book
        "modified": 3,  # 新 的 书 / the new book, new books
        "subject_relative": 4,  # 喜欢 猫 的 学生 / the student who likes cats
        "relative": 4,  # 我 买 的 书 / the book that I bought
        "relative_time": 5,  # 我 昨天 买 的 书 / the book that I bought yesterday
        "counted_modified": 5,  # 三 本 新 的 书 / three new books
        "this_modified": 5,  # 这 本 新 的 书 / this new book
    }
)
COMPLEMENT_FORMS = ("bare", "modified")
#: Chinese length of aux + verb for each (tense, negated): 吃 / 不 吃 / 吃 了 / 没 吃 / 会 吃 /
#: 不 会 吃; 很 高兴 / 不 高兴 / 会 很 高兴 / 不 会 高兴; 是 / 不 是.
PREDICATE_LENGTHS: Mapping[str, Mapping[tuple[str, bool], int]] = MappingProxyType(
    {
        "transitive": MappingProxyType(
            {
                ("present", False): 1,
                ("present", True): 2,
                ("past", False): 2,
                ("past", True): 2,
                ("future", False): 2,
                ("future", True): 3,
            }
        ),
        "adjective": MappingProxyType(
            {
                ("present", False): 2,
                ("present", True): 2,
                ("past", False): 2,
                ("past", True): 2,
                ("future", False): 3,
                ("future", True): 3,
            }
        ),
        "copula": MappingProxyType({("present", False): 1, ("present", True): 2}),
    }
)
CLAUSE_PARTS = ("subject", "time", "aux", "companion", "place", "verb", "object")
#: The parts each construction of ``word_order`` must list: (Chinese parts, English parts).
WORD_ORDER_PARTS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = MappingProxyType(
    {
        "statement": (frozenset(CLAUSE_PARTS), frozenset(CLAUSE_PARTS)),
        "question": (frozenset((*CLAUSE_PARTS, "particle")),) * 2,
        "relative_clause": (
            frozenset({"subject", "time", "verb", "modifier", "head"}),
            frozenset({"article", "head", "relative", "subject", "verb", "time"}),
        ),
        "subject_relative_clause": (
            frozenset({"verb", "object", "modifier", "head"}),
            frozenset({"article", "head", "relative", "verb", "object"}),
        ),
    }
)
FUNCTION_ROLES = (
    "modifier",
    "question",
    "together",
    "question_mark",
    "perfective",
    "negation",
    "past_negation",
    "future",
    "degree",
    "locative",
    "comitative",
    "demonstrative",
    "copula",
)


# --------------------------------------------------------------------------- phrases


@dataclass(frozen=True)
class Phrase:
    """Chinese tokens, English tokens and the ``(zh_index, en_index)`` links between them.

    Indices are local to the phrase; ``a + b`` concatenates both sides and shifts ``b``'s
    links past ``a``.
    """

    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()

    def __add__(self, other: Phrase) -> Phrase:
        if not (other.zh or other.en):
            return self
        if not (self.zh or self.en):
            return other
        dz, de = len(self.zh), len(self.en)
        shifted = tuple((i + dz, j + de) for i, j in other.links)
        return Phrase(self.zh + other.zh, self.en + other.en, self.links + shifted)

    def to_pair(self) -> Pair:
        """The sentence pair, with links sorted by (source, target)."""
        return Pair(self.zh, self.en, tuple(sorted(set(self.links))))


def concat(phrases: Iterable[Phrase]) -> Phrase:
    """Concatenate phrases in order on both sides (like ``sum`` with ``+``, in one pass)."""
    zh: list[str] = []
    en: list[str] = []
    links: list[Link] = []
    for phrase in phrases:
        dz, de = len(zh), len(en)
        links.extend([(i + dz, j + de) for i, j in phrase.links])
        zh.extend(phrase.zh)
        en.extend(phrase.en)
    return Phrase(tuple(zh), tuple(en), tuple(links))


def arrange(
    parts: Mapping[str, Phrase],
    zh_order: Sequence[str],
    en_order: Sequence[str],
    cross_links: Iterable[CrossLink] = (),
) -> Phrase:
    """Lay out named parts in one order in Chinese and another in English.

    Each part keeps its own links; ``cross_links`` join a Chinese word of one part to an
    English word of another (了 in the verb part -> "did" in the auxiliary part).
    """
    zh: list[str] = []
    en: list[str] = []
    zh_start: dict[str, int] = {}
    en_start: dict[str, int] = {}
    for name in zh_order:
        zh_start[name] = len(zh)
        zh.extend(parts[name].zh)
    for name in en_order:
        en_start[name] = len(en)
        en.extend(parts[name].en)
    links: list[Link] = []
    for name in zh_order:
        part_links = parts[name].links
        if part_links:
            dz, de = zh_start[name], en_start[name]
            links.extend([(i + dz, j + de) for i, j in part_links])
    links.extend([(zh_start[a] + i, en_start[b] + j) for a, i, b, j in cross_links])
    return Phrase(tuple(zh), tuple(en), tuple(links))


@dataclass(frozen=True)
class NounPhrase:
    """A noun phrase as subject and as object (they differ for pronouns and bare nouns)."""

    as_subject: Phrase
    as_object: Phrase
    person: int = 3
    plural: bool = False
    head: str = ""

    @property
    def third_singular(self) -> bool:
        """Whether a present-tense verb takes -s after this subject (he/she/it)."""
        return self.person == 3 and not self.plural


# --------------------------------------------------------------------------- lexicon


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


# --------------------------------------------------------------------------- parsing


class GrammarFileError(ValueError):
    """Something in the grammar file is missing or malformed (the message says what)."""


_MISSING = object()


def _get(mapping: Any, key: str, where: str, default: Any = _MISSING) -> Any:
    if not isinstance(mapping, dict):
        raise GrammarFileError(f"{where} must be a mapping, found {mapping!r}")
    if key in mapping:
        return mapping[key]
    if default is _MISSING:
        raise GrammarFileError(f"{where} has no '{key}'")
    return default


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GrammarFileError(f"{where} must be a non-empty string (quote it), found {value!r}")
    return value.strip()


def _words(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_text(value, where).split())


def _token(value: Any, where: str) -> str:
    words = _words(value, where)
    if len(words) != 1:
        raise GrammarFileError(f"{where} must be a single word, found {value!r}")
    return words[0]


def _number(value: Any, where: str, low: float = 0.0, high: float | None = None) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= low
    if not ok or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise GrammarFileError(f"{where} must be a number {bound}, found {value!r}")
    return float(value)


def _entries(data: Any, key: str) -> list[Any]:
    value = _get(data, key, "lexicon")
    if not isinstance(value, list) or not value:
        raise GrammarFileError(f"lexicon.{key} must be a non-empty list")
    return value


def _choice(value: Any, allowed: Sequence[str], where: str) -> str:
    if value not in allowed:
        raise GrammarFileError(f"{where} must be one of {', '.join(allowed)}, found {value!r}")
    return value


def _kinds(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise GrammarFileError(f"{where} must be a non-empty list of noun kinds")
    return tuple(_token(v, where) for v in value)


def _weights(value: Any, allowed: Sequence[str], where: str) -> Mapping[str, float]:
    if not isinstance(value, dict) or not value:
        raise GrammarFileError(f"{where} must be a non-empty mapping of weights")
    weights = {}
    for key in allowed:  # fixed order, whatever the file's order
        if key in value:
            weights[key] = _number(value[key], f"{where}.{key}")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise GrammarFileError(f"{where} has unknown keys {unknown}; use {', '.join(allowed)}")
    if not any(weights.values()):
        raise GrammarFileError(f"{where} needs at least one positive weight")
    return MappingProxyType(weights)


def _parse_pronoun(item: Any, where: str) -> Pronoun:
    person = _get(item, "person", where)
    if person not in (1, 2, 3):
        raise GrammarFileError(f"{where}.person must be 1, 2 or 3, found {person!r}")
    plural = _get(item, "plural", where, False)
    if not isinstance(plural, bool):
        raise GrammarFileError(f"{where}.plural must be true or false")
    fields = ("subject", "object", "possessive")
    words = [_token(_get(item, f, where), f"{where}.{f}") for f in fields]
    return Pronoun(_token(_get(item, "zh", where), f"{where}.zh"), *words, person, plural)


def _parse_noun(item: Any, where: str) -> Noun:
    singular = _words(_get(item, "en", where), f"{where}.en")
    default_plural = " ".join((*singular[:-1], singular[-1] + "s"))
    plural = _words(_get(item, "plural", where, default_plural), f"{where}.plural")
    measure = _get(item, "measure", where, None)
    return Noun(
        zh=_token(_get(item, "zh", where), f"{where}.zh"),
        singular=singular,
        plural=plural,
        measure=None if measure is None else _token(measure, f"{where}.measure"),
        kind=_token(_get(item, "kind", where), f"{where}.kind"),
    )


def _parse_verb(item: Any, where: str, transitive: bool) -> Verb:
    forms = _get(item, "forms", where)
    if not isinstance(forms, list) or len(forms) != 3:
        raise GrammarFileError(f"{where}.forms must list [base, third person singular, past]")
    base, third, past = (_words(f, f"{where}.forms") for f in forms)
    objects = _kinds(_get(item, "objects", where), f"{where}.objects") if transitive else ()
    return Verb(_token(_get(item, "zh", where), f"{where}.zh"), base, third, past, objects)


def _parse_simple(item: Any, where: str, cls: Callable[..., T], **extra: Any) -> T:
    zh = _token(_get(item, "zh", where), f"{where}.zh")
    return cls(zh, _words(_get(item, "en", where), f"{where}.en"), **extra)


def _parse_entries(data: Any) -> dict[str, tuple[Any, ...]]:
    lex = _get(data, "lexicon", "the file")

    def each(key: str, parse: Callable[[Any, str], T]) -> tuple[T, ...]:
        return tuple(
            parse(item, f"lexicon.{key}[{n}]") for n, item in enumerate(_entries(lex, key))
        )

    return {
        "pronouns": each("pronouns", _parse_pronoun),
        "names": each("names", lambda it, w: _parse_simple(it, w, Name)),
        "nouns": each("nouns", _parse_noun),
        "places": each(
            "places",
            lambda it, w: _parse_simple(
                it, w, Place, preposition=_token(_get(it, "preposition", w), f"{w}.preposition")
            ),
        ),
        "transitive_verbs": each("transitive_verbs", lambda it, w: _parse_verb(it, w, True)),
        "intransitive_verbs": each("intransitive_verbs", lambda it, w: _parse_verb(it, w, False)),
        "adjectives": each(
            "adjectives",
            lambda it, w: _parse_simple(
                it, w, Adjective, describes=_kinds(_get(it, "describes", w), f"{w}.describes")
            ),
        ),
        "times": each(
            "times",
            lambda it, w: _parse_simple(
                it, w, TimeWord, tense=_choice(_get(it, "tense", w), TENSES, f"{w}.tense")
            ),
        ),
        "numbers": each(
            "numbers",
            lambda it, w: _parse_simple(
                it, w, Number, value=int(_number(_get(it, "value", w), f"{w}.value", low=1))
            ),
        ),
    }


def _parse_function_words(data: Any) -> Mapping[str, FunctionWord]:
    section = _get(data, "function_words", "the file")
    words = {}
    for role in FUNCTION_ROLES:
        where = f"function_words.{role}"
        item = _get(section, role, "function_words")
        en = _get(item, "en", where, None)
        aligned = _get(item, "aligned", where, True)
        if not isinstance(aligned, bool):
            raise GrammarFileError(f"{where}.aligned must be true or false")
        words[role] = FunctionWord(
            zh=_token(_get(item, "zh", where), f"{where}.zh"),
            en=() if en is None else _words(en, f"{where}.en"),
            aligned=aligned,
        )
    for role in ("question_mark", "negation", "past_negation", "future", "degree", "comitative"):
        if not words[role].en:
            raise GrammarFileError(f"function_words.{role} needs an 'en' translation")
    return MappingProxyType(words)


def _parse_english(data: Any) -> EnglishWords:
    section = _get(data, "english_function_words", "the file")

    def word(key: str) -> str:
        return _token(_get(section, key, "english_function_words"), f"english_function_words.{key}")

    def words(key: str, count: int) -> tuple[str, ...]:
        value = _get(section, key, "english_function_words")
        if not isinstance(value, list) or len(value) != count:
            raise GrammarFileError(f"english_function_words.{key} must list {count} words")
        return tuple(_token(v, f"english_function_words.{key}") for v in value)

    return EnglishWords(
        the=word("definite_article"),
        a=word("indefinite_article"),
        an=word("indefinite_article_vowel"),
        that=word("relative"),
        who=word("relative_person"),
        do=words("do", 3),  # type: ignore[arg-type]
        copula_present=words("copula_present", 3),  # type: ignore[arg-type]
        copula_past=words("copula_past", 2),  # type: ignore[arg-type]
        be=word("copula_infinitive"),
    )


def _parse_connectives(data: Any) -> tuple[Connective, ...]:
    items = _get(data, "connectives", "the file")
    if not isinstance(items, list) or not items:
        raise GrammarFileError("connectives must be a non-empty list")
    connectives = []
    for n, item in enumerate(items):
        where = f"connectives[{n}]"
        zh = _words(_get(item, "zh", where), f"{where}.zh")
        en = _words(_get(item, "en", where), f"{where}.en")
        try:
            links = parse_alignment(
                _text(_get(item, "align", where), f"{where}.align"), len(zh), len(en)
            )
        except ValueError as err:
            raise GrammarFileError(f"{where}.align: {err}") from None
        if {i for i, _ in links} != set(range(len(zh))):
            raise GrammarFileError(f"{where}.align must link every Chinese word")
        before_question = _get(item, "before_question", where, False)
        if not isinstance(before_question, bool):
            raise GrammarFileError(f"{where}.before_question must be true or false")
        weight = _number(_get(item, "weight", where, 1), f"{where}.weight")
        connectives.append(Connective(Phrase(zh, en, links), weight, before_question))
    if not any(c.weight for c in connectives):
        raise GrammarFileError("connectives need at least one positive weight")
    return tuple(connectives)


def _parse_word_order(data: Any) -> Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    section = _get(data, "word_order", "the file")
    orders = {}
    for construction, expected in WORD_ORDER_PARTS.items():
        where = f"word_order.{construction}"
        item = _get(section, construction, "word_order")
        pair = []
        for language, parts in zip(("zh", "en"), expected, strict=True):
            order = _get(item, language, where)
            if not isinstance(order, list) or sorted(order) != sorted(parts):
                raise GrammarFileError(
                    f"{where}.{language} must list each of {', '.join(sorted(parts))} once"
                )
            pair.append(tuple(order))
        orders[construction] = (pair[0], pair[1])
    return MappingProxyType(orders)


def _parse_sampling(data: Any) -> Sampling:
    section = _get(data, "sampling", "the file")
    where = "sampling"

    def rate(key: str) -> float:
        return _number(_get(section, key, where), f"{where}.{key}", high=1.0)

    lengths = _get(section, "clause_length", where)
    if not (
        isinstance(lengths, list) and len(lengths) == 2 and all(type(v) is int for v in lengths)
    ):
        raise GrammarFileError("sampling.clause_length must be [shortest, longest]")
    if not 2 <= lengths[0] <= lengths[1]:
        raise GrammarFileError("sampling.clause_length needs 2 <= shortest <= longest")
    optional = _get(section, "optional", where)
    forms = tuple(NP_FORM_LENGTHS)

    def weights(key: str, allowed: Sequence[str]) -> Mapping[str, float]:
        return _weights(_get(section, key, where), allowed, f"{where}.{key}")

    return Sampling(
        question_rate=rate("question_rate"),
        negation_rate=rate("negation_rate"),
        clause_length=(lengths[0], lengths[1]),
        stop_rate=rate("stop_rate"),
        clause_kinds=weights("clause_kinds", CLAUSE_KINDS),
        tenses=weights("tenses", TENSES),
        optional=MappingProxyType(
            {
                key: _number(
                    _get(optional, key, f"{where}.optional"), f"{where}.optional.{key}", high=1
                )
                for key in ("time", "place", "companion")
            }
        ),
        subject_forms=weights("subject_forms", forms),
        object_forms=weights("object_forms", forms),
        companion_forms=weights("companion_forms", ("pronoun", "name", "bare", "possessive")),
        complement_forms=weights("complement_forms", COMPLEMENT_FORMS),
    )


def parse_lexicon(data: Any) -> Lexicon:
    """Turn the YAML document into a :class:`Lexicon`; raises :class:`GrammarFileError`."""
    return Lexicon(
        **_parse_entries(data),
        function_words=_parse_function_words(data),
        english=_parse_english(data),
        connectives=_parse_connectives(data),
        word_order=_parse_word_order(data),
        sampling=_parse_sampling(data),
    )


# --------------------------------------------------------------------------- sampling plans


@dataclass(frozen=True)
class _Option:
    """One choice for a slot of a clause: a label, its Chinese length and its weight."""

    label: Any
    length: int
    weight: float


@dataclass(frozen=True)
class _Slot:
    """A named part of a clause and its options, grouped by Chinese length."""

    name: str
    lengths: tuple[int, ...]
    length_weights: tuple[float, ...]
    labels: tuple[tuple[Any, ...], ...]  # per length
    label_cumulative: tuple[tuple[float, ...], ...]  # per length: running sums of weights

    @classmethod
    def of(cls, name: str, options: Iterable[_Option]) -> _Slot:
        by_length: dict[int, list[_Option]] = {}
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
            tuple(_running_sums(o.weight for o in group) for group in groups),
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
        return labels[_draw(rng, self.label_cumulative[k])]


@dataclass(frozen=True)
class _ClausePlan:
    """A clause kind with its head word fixed, and the slots to fill."""

    kind: str
    head: str
    slots: tuple[_Slot, ...]
    subject_kinds: tuple[str, ...]
    reachable: int  # bit n set <=> the slots can add up to n Chinese tokens
    index: int  # position among the grammar's plans (a cache key)


@dataclass(frozen=True)
class _Fits:
    """Every way a plan's slot lengths add up to one target, with running-sum weights."""

    combos: tuple[tuple[int, ...], ...]
    cumulative: tuple[float, ...]


@dataclass(frozen=True)
class _KindSet:
    """The nouns and noun-phrase forms available for a set of noun kinds."""

    kinds: tuple[str, ...]
    nouns: tuple[Noun, ...]
    count_nouns: tuple[Noun, ...]
    modifiable: tuple[Noun, ...]
    count_modifiable: tuple[Noun, ...]
    relative_heads: tuple[Noun, ...]
    people: tuple[Noun, ...]
    forms: frozenset[str]


def _running_sums(weights: Iterable[float]) -> tuple[float, ...]:
    total = 0.0
    sums = []
    for weight in weights:
        total += weight
        sums.append(total)
    return tuple(sums)


def _draw(rng: random.Random, cumulative: Sequence[float]) -> int:
    """Index ``i`` with probability proportional to ``cumulative[i] - cumulative[i - 1]``."""
    return min(bisect_right(cumulative, rng.random() * cumulative[-1]), len(cumulative) - 1)


def _weighted(rng: random.Random, items: Sequence[T], weights: Sequence[float]) -> T:
    return items[_draw(rng, _running_sums(weights))]


def _pick(rng: random.Random, items: Sequence[T]) -> T:
    if not items:
        raise ValueError("nothing to choose from")
    return items[int(rng.random() * len(items))]  # as uniform as randrange, and faster


def _fits(slots: Sequence[_Slot], target: int) -> _Fits:
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
    return _Fits(tuple(combos), _running_sums(weights))


# --------------------------------------------------------------------------- grammar


class Grammar:
    """The lexicon and rules of ``grammar.yaml``: builders for known sentences and a sampler.

    ``categories`` maps every Chinese word to its category (``pronoun``, ``noun``, ``verb``,
    ``measure_word``, a function-word role such as ``perfective`` ...). ``content_src`` are
    the content words (always aligned); ``unaligned_src`` / ``unaligned_tgt`` the words
    that are never aligned.
    """

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self._fw = lexicon.function_words
        self._en = lexicon.english
        self._markers = {role: Phrase((fw.zh,)) for role, fw in self._fw.items()}
        self._functions = {
            role: Phrase((fw.zh,), fw.en, tuple((0, j) for j in range(len(fw.en))))
            for role, fw in self._fw.items()
        }
        self._the = Phrase((), (self._en.the,))
        self._pronouns = _index(lexicon.pronouns, "lexicon.pronouns")
        self._names = _index(lexicon.names, "lexicon.names")
        self._nouns = _index(lexicon.nouns, "lexicon.nouns")
        self._places = _index(lexicon.places, "lexicon.places")
        self._transitive = _index(lexicon.transitive_verbs, "lexicon.transitive_verbs")
        self._intransitive = _index(lexicon.intransitive_verbs, "lexicon.intransitive_verbs")
        self._adjectives = _index(lexicon.adjectives, "lexicon.adjectives")
        self._times = _index(lexicon.times, "lexicon.times")
        self._numbers = _index(lexicon.numbers, "lexicon.numbers")
        self._connectives = {" ".join(c.phrase.zh): c for c in lexicon.connectives}
        self.categories: Mapping[str, str] = MappingProxyType(self._categorise())
        self.unaligned_tgt: frozenset[str] = self._en.unaligned
        self.unaligned_src: frozenset[str] = frozenset(
            zh for zh, cat in self.categories.items() if cat == "measure_word"
        ) | frozenset(fw.zh for fw in self._fw.values() if not fw.aligned)
        self.content_src: frozenset[str] = frozenset(
            zh for zh, cat in self.categories.items() if cat in CONTENT_CATEGORIES
        )
        self._check_references()
        self._check_translations()
        self._adjectives_by_kind = _group(lexicon.adjectives, lambda a: a.describes)
        self._verbs_by_kind = _group(lexicon.transitive_verbs, lambda v: v.objects)
        self._times_by_tense = _group(lexicon.times, lambda t: (t.tense,))
        self._speakers = (*lexicon.pronouns, *lexicon.names)
        self._word_cache: dict[tuple[str, tuple[str, ...]], Phrase] = {}
        self._fits: dict[tuple[bool, int, int], _Fits] = {}
        self._kind_sets: dict[tuple[str, ...], _KindSet] = {}
        self._plans = {allow: self._build_plans(allow) for allow in (True, False)}
        self._plans_by_length = {allow: self._index_plans(p) for allow, p in self._plans.items()}
        lengths = [n for n, (groups, _) in enumerate(self._plans_by_length[True]) if groups]
        if not lengths:
            raise GrammarFileError("the grammar cannot build any clause; check sampling weights")
        self.min_clause_len = min(lengths)

    @classmethod
    def load(cls, path: str | Path = DEFAULT_GRAMMAR) -> Grammar:
        """Read a grammar file; a missing or invalid file raises :class:`UserError`."""
        path = Path(path)
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
            return cls(parse_lexicon(data))
        except GrammarFileError as err:
            raise UserError(f"grammar file {path}: {err}") from None

    # ----------------------------------------------------------------- validation

    def _categorise(self) -> dict[str, str]:
        lex = self.lexicon
        tagged: list[tuple[str, str]] = [
            *((p.zh, "pronoun") for p in lex.pronouns),
            *((n.zh, "name") for n in lex.names),
            *((n.zh, "noun") for n in lex.nouns),
            *((p.zh, "place") for p in lex.places),
            *((v.zh, "verb") for v in (*lex.transitive_verbs, *lex.intransitive_verbs)),
            *((a.zh, "adjective") for a in lex.adjectives),
            *((t.zh, "time") for t in lex.times),
            *((n.zh, "number") for n in lex.numbers),
            *((n.measure, "measure_word") for n in lex.nouns if n.measure is not None),
            *((fw.zh, role) for role, fw in self._fw.items()),
            *((zh, "connective") for c in lex.connectives for zh in c.phrase.zh),
        ]
        categories: dict[str, str] = {}
        for zh, category in tagged:
            if categories.setdefault(zh, category) != category:
                raise GrammarFileError(
                    f"{zh!r} is used both as {categories[zh]} and as {category}; "
                    "a Chinese word may have one role only"
                )
        return categories

    def _check_references(self) -> None:
        kinds = {n.kind for n in self.lexicon.nouns} | {"place"}
        if "person" not in kinds:
            raise GrammarFileError("lexicon.nouns needs at least one noun of kind person")
        for verb in self.lexicon.transitive_verbs:
            self._check_kinds(verb.objects, kinds, f"objects of {verb.zh}")
        for adjective in self.lexicon.adjectives:
            self._check_kinds(adjective.describes, kinds, f"adjective {adjective.zh}")
        for verb in self.lexicon.intransitive_verbs:
            other = self._transitive.get(verb.zh)
            if other is not None and other.base + other.third + other.past != (
                verb.base + verb.third + verb.past
            ):
                raise GrammarFileError(f"verb {verb.zh} has different forms in the two verb lists")
        if not {t.tense for t in self.lexicon.times} >= set(TENSES):
            raise GrammarFileError("lexicon.times needs a past, a present and a future time word")

    @staticmethod
    def _check_kinds(used: Iterable[str], known: set[str], where: str) -> None:
        unknown = sorted(set(used) - known)
        if unknown:
            raise GrammarFileError(
                f"{where} uses unknown kinds {unknown}; known: {', '.join(sorted(known))}"
            )

    def _check_translations(self) -> None:
        """Every content word must keep at least one aligned English word."""
        lex = self.lexicon
        translations = [
            *((n.zh, n.en) for n in lex.names),
            *((n.zh, n.singular) for n in lex.nouns),
            *((n.zh, n.plural) for n in lex.nouns),
            *((p.zh, p.en) for p in lex.places),
            *((a.zh, a.en) for a in lex.adjectives),
            *((t.zh, t.en) for t in lex.times),
            *((n.zh, n.en) for n in lex.numbers),
        ]
        for zh, en in translations:
            if all(word in self.unaligned_tgt for word in en):
                raise GrammarFileError(f"{zh}'s translation {' '.join(en)!r} has only articles")

    # ----------------------------------------------------------------- small phrases

    def _word(self, zh: str, en: tuple[str, ...]) -> Phrase:
        """A lexicon word: linked to every English word except articles and relatives."""
        key = (zh, en)
        phrase = self._word_cache.get(key)
        if phrase is None:
            links = tuple((0, j) for j, word in enumerate(en) if word not in self.unaligned_tgt)
            phrase = self._word_cache[key] = Phrase((zh,), en, links)
        return phrase

    def _marker(self, role: str) -> Phrase:
        """A Chinese function word with no English of its own (的, 吗, 了 ...)."""
        return self._markers[role]

    def _function(self, role: str) -> Phrase:
        """A Chinese function word with its fixed English (很 -> very, 和 -> with)."""
        return self._functions[role]

    def _negated(self, role: str, auxiliary: str, link_auxiliary: bool) -> Phrase:
        """不 / 没 before the verb: ``do not`` (不-do 不-not) or ``is not`` (不-not)."""
        fw = self._fw[role]
        en = (auxiliary, *fw.en)
        first = 0 if link_auxiliary else 1
        return Phrase((fw.zh,), en, tuple((0, j) for j in range(first, len(en))))

    def _future(self, negated: bool) -> Phrase:
        """会 -> will, 不 会 -> will not (不-not, 会-will)."""
        will = self._function("future")
        if not negated:
            return will
        neg = self._fw["negation"]
        shift = len(will.en)
        links = tuple((1, j) for _, j in will.links) + tuple(
            (0, shift + j) for j in range(len(neg.en))
        )
        return Phrase((neg.zh, *will.zh), will.en + neg.en, links)

    def _copula(self, subject: NounPhrase, tense: str) -> str:
        """am / is / are, or was / were, agreeing with the subject."""
        if tense == "past":
            was, were = self._en.copula_past
            return was if not subject.plural and subject.person != 2 else were
        am, is_, are = self._en.copula_present
        if subject.person == 1 and not subject.plural:
            return am
        return is_ if subject.third_singular else are

    def _time(self, zh: str | None, tense: str) -> Phrase:
        if zh is None:
            return Phrase()
        time = self._lookup(self._times, zh, "time word")
        if time.tense != tense:
            raise ValueError(f"time word {zh} is {time.tense}, but the clause is {tense}")
        return self._word(zh, time.en)

    def _place(self, zh: str | None) -> Phrase:
        """在 北京 -> in Beijing (在 linked to the place's preposition)."""
        if zh is None:
            return Phrase()
        place = self._lookup(self._places, zh, "place")
        at = Phrase((self._fw["locative"].zh,), (place.preposition,), ((0, 0),))
        return at + self._word(zh, place.en)

    def _companion(self, companion: NounPhrase | str | None) -> Phrase:
        """和 玛丽 一起 -> with Mary (一起 unaligned)."""
        if companion is None:
            return Phrase()
        np = self._np(companion)
        return self._function("comitative") + np.as_object + self._marker("together")

    def _modifier(self, adjective: str | None) -> Phrase:
        """新 的 -> new (的 unaligned), or nothing."""
        if adjective is None:
            return Phrase()
        entry = self._lookup(self._adjectives, adjective, "adjective")
        return self._word(adjective, entry.en) + self._marker("modifier")

    def _arrange(
        self, construction: str, parts: Mapping[str, Phrase], cross: Iterable[CrossLink] = ()
    ) -> Phrase:
        zh_order, en_order = self.lexicon.word_order[construction]
        return arrange(parts, zh_order, en_order, cross)

    @staticmethod
    def _lookup(table: Mapping[str, T], zh: str, what: str) -> T:
        try:
            return table[zh]
        except KeyError:
            raise ValueError(f"{zh!r} is not a {what} in the grammar") from None

    # ----------------------------------------------------------------- noun phrases

    def _np(self, value: NounPhrase | str) -> NounPhrase:
        return value if isinstance(value, NounPhrase) else self.noun(value)

    def noun(self, zh: str) -> NounPhrase:
        """A pronoun, name, place or bare noun (书: subject ``the book``, object ``books``)."""
        if zh in self._pronouns:
            p = self._pronouns[zh]
            subject, obj = self._word(zh, (p.subject,)), self._word(zh, (p.object,))
            return NounPhrase(subject, obj, p.person, p.plural, zh)
        if zh in self._names or zh in self._places:
            entry = self._names.get(zh) or self._places[zh]
            phrase = self._word(zh, entry.en)
            return NounPhrase(phrase, phrase, head=zh)
        noun = self._lookup(self._nouns, zh, "noun, pronoun, name or place")
        singular = self._word(zh, noun.singular)
        if noun.mass:
            return NounPhrase(singular, singular, head=zh)
        return NounPhrase(self._the + singular, self._word(zh, noun.plural), head=zh)

    def modified(self, zh: str, adjective: str) -> NounPhrase:
        """新 的 书: subject ``the new book``, object ``new books``."""
        noun = self._lookup(self._nouns, zh, "noun")
        mod = self._modifier(adjective)
        singular = mod + self._word(zh, noun.singular)
        if noun.mass:
            return NounPhrase(singular, singular, head=zh)
        return NounPhrase(self._the + singular, mod + self._word(zh, noun.plural), head=zh)

    def _count_noun(self, zh: str) -> Noun:
        noun = self._lookup(self._nouns, zh, "noun")
        if noun.mass:
            raise ValueError(f"{zh} is a mass noun; it has no measure word")
        return noun

    def counted(self, zh: str, number: str, adjective: str | None = None) -> NounPhrase:
        """三 本 [新 的] 书 -> three [new] books (measure word and 的 unaligned)."""
        noun = self._count_noun(zh)
        num = self._lookup(self._numbers, number, "number")
        form = noun.singular if num.value == 1 else noun.plural
        phrase = (
            self._word(number, num.en)
            + Phrase((noun.measure,))  # type: ignore[arg-type]
            + self._modifier(adjective)
            + self._word(zh, form)
        )
        return NounPhrase(phrase, phrase, plural=num.value != 1, head=zh)

    def this(self, zh: str, adjective: str | None = None) -> NounPhrase:
        """这 本 [新 的] 书 -> this [new] book."""
        noun = self._count_noun(zh)
        phrase = (
            self._function("demonstrative")
            + Phrase((noun.measure,))  # type: ignore[arg-type]
            + self._modifier(adjective)
            + self._word(zh, noun.singular)
        )
        return NounPhrase(phrase, phrase, head=zh)

    def possessive(self, owner: str, zh: str) -> NounPhrase:
        """我 的 书 -> my book (的 unaligned)."""
        pronoun = self._lookup(self._pronouns, owner, "pronoun")
        noun = self._lookup(self._nouns, zh, "noun")
        phrase = (
            self._word(owner, (pronoun.possessive,))
            + self._marker("modifier")
            + self._word(zh, noun.singular)
        )
        return NounPhrase(phrase, phrase, head=zh)

    def relative(
        self, zh: str, subject: NounPhrase | str, verb: str, time: str | None = None
    ) -> NounPhrase:
        """我 [昨天] 买 的 书 -> the book that I bought [yesterday] (past tense)."""
        noun = self._lookup(self._nouns, zh, "noun")
        entry = self._lookup(self._transitive, verb, "transitive verb")
        parts = {
            "subject": self._np(subject).as_subject,
            "time": self._time(time, "past"),
            "verb": self._word(verb, entry.past),
            "modifier": self._marker("modifier"),
            "head": self._word(zh, noun.singular),
            "article": self._the,
            "relative": Phrase((), (self._en.that,)),
        }
        phrase = self._arrange("relative_clause", parts)
        return NounPhrase(phrase, phrase, head=zh)

    def subject_relative(self, zh: str, verb: str, obj: NounPhrase | str) -> NounPhrase:
        """喜欢 猫 的 学生 -> the student who likes cats."""
        noun = self._lookup(self._nouns, zh, "noun")
        entry = self._lookup(self._transitive, verb, "transitive verb")
        parts = {
            "verb": self._word(verb, entry.third),
            "object": self._np(obj).as_object,
            "modifier": self._marker("modifier"),
            "head": self._word(zh, noun.singular),
            "article": self._the,
            "relative": Phrase((), (self._en.who,)),
        }
        phrase = self._arrange("subject_relative_clause", parts)
        return NounPhrase(phrase, phrase, head=zh)

    # ----------------------------------------------------------------- clauses

    def clause(
        self,
        subject: NounPhrase | str,
        verb: str,
        obj: NounPhrase | str | None = None,
        *,
        tense: str = "present",
        negated: bool = False,
        time: str | None = None,
        place: str | None = None,
        companion: NounPhrase | str | None = None,
        question: bool = False,
    ) -> Phrase:
        """A verb clause; ``obj=None`` uses the intransitive verb.

        ``grammar.clause("我", "吃", "苹果", tense="past", time="昨天", place="北京")``
        -> 我 昨天 在 北京 吃 了 苹果 / I ate apples in Beijing yesterday.
        """
        _check_mood(tense, negated, question)
        subj = self._np(subject)
        table = self._transitive if obj is not None else self._intransitive
        entry = self._lookup(
            table, verb, "transitive verb" if obj is not None else "intransitive verb"
        )
        aux, main, cross = self._verb_group(entry, subj.third_singular, tense, negated, question)
        parts = {
            "subject": subj.as_subject,
            "time": self._time(time, tense),
            "aux": aux,
            "companion": self._companion(companion),
            "place": self._place(place),
            "verb": main,
            "object": self._np(obj).as_object if obj is not None else Phrase(),
        }
        return self._finish_clause(parts, question, cross)

    def _verb_group(
        self, verb: Verb, third_singular: bool, tense: str, negated: bool, question: bool
    ) -> tuple[Phrase, Phrase, tuple[CrossLink, ...]]:
        """The auxiliary part and the verb part of a verb clause, plus any link between them."""
        do, does, did = self._en.do
        base = self._word(verb.zh, verb.base)
        if tense == "future":
            return self._future(negated), base, ()
        if tense == "past":
            if negated:
                return self._negated("past_negation", did, True), base, ()
            if question:  # 吃 了 ... 吗 -> did ... eat: 了 links "did"
                return (
                    Phrase((), (did,)),
                    base + self._marker("perfective"),
                    (("verb", 1, "aux", 0),),
                )
            past = self._word(verb.zh, verb.past) + self._marker("perfective")
            return Phrase(), Phrase(past.zh, past.en, (*past.links, (1, 0))), ()
        auxiliary = does if third_singular else do
        if negated:
            return self._negated("negation", auxiliary, True), base, ()
        if question:  # do-support: unaligned
            return Phrase((), (auxiliary,)), base, ()
        return Phrase(), self._word(verb.zh, verb.third if third_singular else verb.base), ()

    def adjective_clause(
        self,
        subject: NounPhrase | str,
        adjective: str,
        *,
        tense: str = "present",
        negated: bool = False,
        time: str | None = None,
        place: str | None = None,
        question: bool = False,
    ) -> Phrase:
        """他 很 高兴 -> he is very happy (the copula is unaligned; 很-very).

        Past needs a past time word, which is the only past marker in the Chinese.
        """
        _check_mood(tense, negated, question)
        if tense == "past" and time is None:
            raise ValueError("a past adjective clause needs a past time word such as 昨天")
        subj = self._np(subject)
        entry = self._lookup(self._adjectives, adjective, "adjective")
        head = self._word(adjective, entry.en)
        degree = Phrase() if negated else self._function("degree")
        if tense == "future":
            aux = self._future(negated)
            verb = Phrase((), (self._en.be,)) + degree + head
        else:
            copula = self._copula(subj, tense)
            aux = self._negated("negation", copula, False) if negated else Phrase((), (copula,))
            verb = degree + head
        parts = {
            "subject": subj.as_subject,
            "time": self._time(time, tense),
            "aux": aux,
            "companion": Phrase(),
            "place": self._place(place),
            "verb": verb,
            "object": Phrase(),
        }
        return self._finish_clause(parts, question, ())

    def copula_clause(
        self,
        subject: NounPhrase | str,
        noun: str,
        *,
        adjective: str | None = None,
        negated: bool = False,
        question: bool = False,
    ) -> Phrase:
        """他 是 [聪明 的] 老师 -> he is a [clever] teacher (是-is; a unaligned)."""
        _check_mood("present", negated, question)
        subj = self._np(subject)
        entry = self._lookup(self._nouns, noun, "noun")
        copula = self._copula(subj, "present")
        aux = self._negated("negation", copula, False) if negated else Phrase((), (copula,))
        modifier = self._modifier(adjective)
        if subj.plural or entry.mass:
            complement = modifier + self._word(
                noun, entry.plural if subj.plural else entry.singular
            )
        else:
            rest = modifier + self._word(noun, entry.singular)
            article = self._en.an if rest.en[0][0].lower() in "aeiou" else self._en.a
            complement = Phrase((), (article,)) + rest
        parts = {
            "subject": subj.as_subject,
            "time": Phrase(),
            "aux": aux,
            "companion": Phrase(),
            "place": Phrase(),
            "verb": Phrase((self._fw["copula"].zh,)),
            "object": complement,
        }
        return self._finish_clause(parts, question, (("verb", 0, "aux", 0),))

    def _finish_clause(
        self, parts: dict[str, Phrase], question: bool, cross: tuple[CrossLink, ...]
    ) -> Phrase:
        if not question:
            return self._arrange("statement", parts, cross)
        mark = self._fw["question_mark"]
        particle = Phrase((self._fw["question"].zh, mark.zh), mark.en, ((1, 0),))
        return self._arrange("question", {**parts, "particle": particle}, cross)

    def connective(self, zh: str) -> Phrase:
        """A connective by its Chinese text, e.g. ``"， 然后"`` -> ``, and then``."""
        return self._lookup(self._connectives, zh, "connective").phrase

    # ----------------------------------------------------------------- sampling

    def sample_pair(self, rng: random.Random, src_len: int) -> Pair:
        """A random sentence pair whose source has ``src_len`` tokens (a few fewer at worst).

        Long sentences join clauses with connectives; some end in a yes/no question.
        """
        return self.sample_sentence(rng, src_len).to_pair()

    def sample_sentence(self, rng: random.Random, src_len: int) -> Phrase:
        """Like :meth:`sample_pair`, as a :class:`Phrase`."""
        if src_len < self.min_clause_len:
            raise ValueError(f"src_len must be at least {self.min_clause_len}, got {src_len}")
        settings = self.lexicon.sampling
        particle = 2  # 吗 ？
        question = (
            src_len - particle >= self.min_clause_len and rng.random() < settings.question_rate
        )
        connectives = [c for c in self.lexicon.connectives if c.weight > 0]
        if question:
            connectives = [c for c in connectives if c.before_question] or connectives
        longest_join = max(len(c.phrase.zh) for c in connectives)
        shortest, longest = settings.clause_length
        pieces: list[Phrase] = []
        remaining = src_len - particle if question else src_len
        while True:
            room = remaining - longest_join - self.min_clause_len
            last = room < self.min_clause_len or (
                remaining <= longest and rng.random() < settings.stop_rate
            )
            if last:
                target = remaining
            else:
                upper = min(longest, room)
                target = rng.randint(min(shortest, upper), upper)
            clause = self._sample_clause(rng, target, question and last)
            pieces.append(clause)
            if last:
                return concat(pieces)
            remaining -= len(clause.zh)
            join = _weighted(rng, connectives, [c.weight for c in connectives])
            pieces.append(join.phrase)
            remaining -= len(join.phrase.zh)

    def _sample_clause(self, rng: random.Random, target: int, question: bool) -> Phrase:
        """A random clause of ``target`` Chinese tokens (not counting 吗 ？), or the longest
        shorter one the grammar allows."""
        by_length = self._plans_by_length[not question]
        target = min(target, len(by_length) - 1)
        while target > 0 and not by_length[target]:
            target -= 1
        if target <= 0:
            raise ValueError("the grammar has no clause this short")
        kinds, cumulative = by_length[target]
        plans = kinds[_draw(rng, cumulative)]
        plan = _pick(rng, plans)
        key = (question, plan.index, target)
        fits = self._fits.get(key)
        if fits is None:
            fits = self._fits[key] = _fits(plan.slots, target)
        combo = fits.combos[_draw(rng, fits.cumulative)]
        chosen = {
            slot.name: slot.label(rng, length)
            for slot, length in zip(plan.slots, combo, strict=True)
        }
        return self._realise(rng, plan, chosen, question)

    def _realise(
        self, rng: random.Random, plan: _ClausePlan, chosen: Mapping[str, Any], question: bool
    ) -> Phrase:
        """Fill a plan's chosen labels with words and build the clause."""
        tense, negated = chosen["predicate"]
        subject = self._sample_np(rng, chosen["subject"], plan.subject_kinds, ())
        avoid = [subject.head]
        if plan.kind == "copula":
            return self._realise_copula(rng, subject, chosen["complement"], negated, question)
        time = self._sample_time(rng, tense) if chosen["time"] else None
        place = None
        if chosen.get("place"):
            place = self._pick_other(rng, self.lexicon.places, avoid).zh
            avoid.append(place)
        if plan.kind == "adjective":
            if tense == "past" and time is None:
                tense = "present"  # nothing in the Chinese would mark the past
            return self.adjective_clause(
                subject,
                plan.head,
                tense=tense,
                negated=negated,
                time=time,
                place=place,
                question=question,
            )
        obj = None
        if plan.kind == "transitive":
            objects = self._transitive[plan.head].objects
            obj = self._sample_np(rng, chosen["object"], objects, avoid)
            avoid.append(obj.head)
        companion = None
        if chosen["companion"]:
            companion = self._sample_np(rng, chosen["companion"], ("person",), avoid)
        return self.clause(
            subject,
            plan.head,
            obj,
            tense=tense,
            negated=negated,
            time=time,
            place=place,
            companion=companion,
            question=question,
        )

    def _realise_copula(
        self, rng: random.Random, subject: NounPhrase, form: str, negated: bool, question: bool
    ) -> Phrase:
        people = self._kind_set(("person",))
        adjective = None
        if form == "modified":
            noun = self._pick_other(rng, people.modifiable, [subject.head])
            adjective = _pick(rng, self._adjectives_by_kind[noun.kind]).zh
        else:
            noun = self._pick_other(rng, people.people, [subject.head])
        return self.copula_clause(
            subject, noun.zh, adjective=adjective, negated=negated, question=question
        )

    def _sample_time(self, rng: random.Random, tense: str) -> str:
        return _pick(rng, self._times_by_tense[tense]).zh

    @staticmethod
    def _pick_other(rng: random.Random, items: Sequence[T], avoid: Sequence[str]) -> T:
        """A random item whose ``zh`` is not in ``avoid`` (any item if all are avoided)."""
        for _ in range(8):
            item = _pick(rng, items)
            if item.zh not in avoid:  # type: ignore[attr-defined]
                return item
        others = [item for item in items if item.zh not in avoid]  # type: ignore[attr-defined]
        return _pick(rng, others or items)

    def _sample_np(
        self, rng: random.Random, form: str, kinds: tuple[str, ...], avoid: Sequence[str]
    ) -> NounPhrase:
        """A random noun phrase of ``form`` whose head is of one of ``kinds``."""
        ks = self._kind_set(kinds)
        lex = self.lexicon
        if form in ("pronoun", "name", "place", "bare"):
            pool = {"pronoun": lex.pronouns, "name": lex.names, "place": lex.places}
            return self.noun(self._pick_other(rng, pool.get(form, ks.nouns), avoid).zh)
        if form == "possessive":
            return self.possessive(_pick(rng, lex.pronouns).zh, _pick(rng, ks.nouns).zh)
        if form in ("relative", "relative_time"):
            return self._sample_relative(rng, ks, with_time=form == "relative_time")
        if form == "subject_relative":
            return self._sample_subject_relative(rng, ks)
        modified = form in ("modified", "counted_modified", "this_modified")
        if form == "modified":
            noun = _pick(rng, ks.modifiable)
        else:
            noun = _pick(rng, ks.count_modifiable if modified else ks.count_nouns)
        adjective = _pick(rng, self._adjectives_by_kind[noun.kind]).zh if modified else None
        if form == "modified":
            return self.modified(noun.zh, adjective)  # type: ignore[arg-type]
        if form in ("counted", "counted_modified"):
            return self.counted(noun.zh, _pick(rng, lex.numbers).zh, adjective)
        if form in ("this", "this_modified"):
            return self.this(noun.zh, adjective)
        raise ValueError(f"unknown noun-phrase form {form!r}")

    def _sample_relative(self, rng: random.Random, ks: _KindSet, with_time: bool) -> NounPhrase:
        head = _pick(rng, ks.relative_heads)
        verb = _pick(rng, self._verbs_by_kind[head.kind])
        subject = _pick(rng, self._speakers).zh
        time = self._sample_time(rng, "past") if with_time else None
        return self.relative(head.zh, subject, verb.zh, time)

    def _sample_subject_relative(self, rng: random.Random, ks: _KindSet) -> NounPhrase:
        head = _pick(rng, ks.people)
        verb = _pick(rng, self.lexicon.transitive_verbs)
        inner = self._kind_set(verb.objects)
        forms = [f for f in ("pronoun", "name", "place", "bare") if f in inner.forms]
        obj = self._sample_np(rng, _pick(rng, forms), verb.objects, ())
        return self.subject_relative(head.zh, verb.zh, obj)

    # ----------------------------------------------------------------- plans

    def _kind_set(self, kinds: tuple[str, ...]) -> _KindSet:
        """Nouns and noun-phrase forms for ``kinds`` (computed once per distinct tuple)."""
        if kinds not in self._kind_sets:
            self._kind_sets[kinds] = self._make_kind_set(kinds)
        return self._kind_sets[kinds]

    def _make_kind_set(self, kinds: tuple[str, ...]) -> _KindSet:
        nouns = tuple(n for n in self.lexicon.nouns if n.kind in kinds)
        count = tuple(n for n in nouns if not n.mass)
        modifiable = tuple(n for n in nouns if self._adjectives_by_kind.get(n.kind))
        count_modifiable = tuple(n for n in modifiable if not n.mass)
        relative_heads = tuple(n for n in nouns if self._verbs_by_kind.get(n.kind))
        people = tuple(n for n in nouns if n.kind == "person")
        has_past_time = any(t.tense == "past" for t in self.lexicon.times)
        available = {
            "pronoun": "person" in kinds,
            "name": "person" in kinds and bool(self.lexicon.names),
            "place": "place" in kinds,
            "bare": bool(nouns),
            "possessive": bool(nouns),
            "counted": bool(count),
            "this": bool(count),
            "modified": bool(modifiable),
            "counted_modified": bool(count_modifiable),
            "this_modified": bool(count_modifiable),
            "relative": bool(relative_heads),
            "relative_time": bool(relative_heads) and has_past_time,
            "subject_relative": bool(people),
        }
        forms = frozenset(form for form, ok in available.items() if ok)
        return _KindSet(
            kinds, nouns, count, modifiable, count_modifiable, relative_heads, people, forms
        )

    def _np_slot(self, kinds: tuple[str, ...], weights: Mapping[str, float]) -> tuple[_Option, ...]:
        forms = self._kind_set(kinds).forms
        return tuple(
            _Option(form, NP_FORM_LENGTHS[form], weight)
            for form, weight in weights.items()
            if weight > 0 and form in forms
        )

    def _companion_slot(self, rate: float) -> tuple[_Option, ...]:
        """No companion, or 和 X 一起 with X in one of the companion forms."""
        forms = self._np_slot(("person",), self.lexicon.sampling.companion_forms)
        total = sum(o.weight for o in forms)
        options = [_Option(None, 0, 1.0 - rate)]
        options.extend(_Option(o.label, o.length + 2, rate * o.weight / total) for o in forms)
        return tuple(o for o in options if o.weight > 0)

    @staticmethod
    def _optional(label: str, length: int, rate: float) -> tuple[_Option, ...]:
        options = (_Option(None, 0, 1.0 - rate), _Option(label, length, rate))
        return tuple(o for o in options if o.weight > 0)

    def _predicate_slot(self, kind: str, allow_negation: bool) -> tuple[_Option, ...]:
        """(tense, negated) choices with the Chinese length of aux + verb they produce."""
        settings = self.lexicon.sampling
        lengths = PREDICATE_LENGTHS["transitive" if kind == "intransitive" else kind]
        neg_rate = settings.negation_rate if allow_negation else 0.0
        options = []
        for (tense, negated), length in lengths.items():
            weight = settings.tenses.get(tense, 0.0) * (neg_rate if negated else 1.0 - neg_rate)
            if weight > 0:
                options.append(_Option((tense, negated), length, weight))
        if not options:  # e.g. only past allowed but the copula is present-only
            options.append(_Option(("present", False), lengths[("present", False)], 1.0))
        return tuple(options)

    def _build_plans(self, allow_negation: bool) -> tuple[_ClausePlan, ...]:
        settings = self.lexicon.sampling
        optional = settings.optional
        person = ("person",)
        time = _Slot.of("time", self._optional("time", 1, optional["time"]))
        place = _Slot.of("place", self._optional("place", 2, optional["place"]))
        companion = _Slot.of("companion", self._companion_slot(optional["companion"]))
        plans: list[_ClausePlan] = []

        def plan(kind: str, head: str, subject_kinds: tuple[str, ...], *slots: _Slot) -> None:
            subject = _Slot.of("subject", self._np_slot(subject_kinds, settings.subject_forms))
            predicate = _Slot.of("predicate", self._predicate_slot(kind, allow_negation))
            all_slots = (subject, predicate, *slots)
            if settings.clause_kinds.get(kind, 0) <= 0 or any(not s.lengths for s in all_slots):
                return
            reachable = 1
            for slot in all_slots:
                reachable = slot.sums(reachable)
            plans.append(_ClausePlan(kind, head, all_slots, subject_kinds, reachable, len(plans)))

        for verb in self.lexicon.transitive_verbs:
            obj = _Slot.of("object", self._np_slot(verb.objects, settings.object_forms))
            # a verb that only takes places (去) gets no 在-phrase: *在 北京 去 上海
            places = (place,) if set(verb.objects) != {"place"} else ()
            plan("transitive", verb.zh, person, time, companion, *places, obj)
        for verb in self.lexicon.intransitive_verbs:
            plan("intransitive", verb.zh, person, time, companion, place)
        for adjective in self.lexicon.adjectives:
            others = tuple(k for k in adjective.describes if k != "place")
            if others:  # 他 在 北京 很 高兴
                plan("adjective", adjective.zh, others, time, place)
            if "place" in adjective.describes:  # 北京 很 漂亮 (no 在-phrase)
                plan("adjective", adjective.zh, adjective.describes, time)
        complement = tuple(
            _Option(form, NP_FORM_LENGTHS[form], weight)
            for form, weight in settings.complement_forms.items()
            if weight > 0 and form in self._kind_set(person).forms
        )
        plan("copula", "", person, _Slot.of("complement", complement))
        return tuple(plans)

    def _index_plans(
        self, plans: Sequence[_ClausePlan]
    ) -> tuple[tuple[tuple[tuple[_ClausePlan, ...], ...], tuple[float, ...]], ...]:
        """By target length: the plans of each clause kind that can make exactly that
        length, with running-sum kind weights (empty where no plan fits)."""
        longest = max((p.reachable.bit_length() for p in plans), default=0)
        weights = self.lexicon.sampling.clause_kinds
        index = []
        for length in range(longest):
            groups = [
                (tuple(p for p in plans if p.kind == kind and p.reachable >> length & 1), kind)
                for kind in CLAUSE_KINDS
            ]
            groups = [(group, kind) for group, kind in groups if group]
            index.append(
                (
                    tuple(group for group, _ in groups),
                    _running_sums(weights[kind] for _, kind in groups),
                )
            )
        return tuple(index)


def _group(entries: Iterable[T], keys: Callable[[T], Iterable[str]]) -> dict[str, tuple[T, ...]]:
    """Entries grouped under each of their keys, in file order."""
    groups: dict[str, list[T]] = {}
    for entry in entries:
        for key in keys(entry):
            groups.setdefault(key, []).append(entry)
    return {key: tuple(group) for key, group in groups.items()}


def _index(entries: Iterable[T], where: str) -> dict[str, T]:
    """Entries by their Chinese word; a word listed twice is an error."""
    table: dict[str, T] = {}
    for entry in entries:
        zh = entry.zh  # type: ignore[attr-defined]
        if zh in table:
            raise GrammarFileError(f"{where} lists {zh} twice")
        table[zh] = entry
    return table


def _check_mood(tense: str, negated: bool, question: bool) -> None:
    if tense not in TENSES:
        raise ValueError(f"tense must be one of {', '.join(TENSES)}, got {tense!r}")
    if negated and question:
        raise ValueError("negated questions are not part of the grammar")
