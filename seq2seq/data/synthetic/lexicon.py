"""The parser of ``data/grammar.yaml``: reads the file and checks each section.

:func:`load_lexicon` reads a grammar file and :func:`parse_lexicon` turns its YAML
document into a type-checked :class:`~seq2seq.data.synthetic.entries.Lexicon` (pronouns,
nouns, verbs ..., function words, connectives, word order and sampling weights); anything
missing or malformed raises :class:`GrammarFileError` with a message that says where
(value-level checks live in :mod:`~seq2seq.data.synthetic.fields`, checks across the whole
lexicon in :mod:`~seq2seq.data.synthetic.checks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from seq2seq.data.corpus import parse_alignment
from seq2seq.data.synthetic import fields as yf
from seq2seq.data.synthetic.entries import (
    Adjective,
    Connective,
    EnglishWords,
    FunctionWord,
    Lexicon,
    Name,
    Noun,
    Number,
    Place,
    Pronoun,
    Sampling,
    TimeWord,
    Verb,
)
from seq2seq.data.synthetic.fields import GrammarFileError
from seq2seq.data.synthetic.phrase import Phrase
from seq2seq.errors import UserError

T = TypeVar("T")

DEFAULT_GRAMMAR = Path(__file__).resolve().parents[3] / "data" / "grammar.yaml"

TENSES = ("present", "past", "future")
CLAUSE_KINDS = ("transitive", "intransitive", "adjective", "copula")
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
CLAUSE_PARTS = ("subject", "time", "aux", "companion", "place", "verb", "object")
#: The parts each construction of ``word_order`` must list: (Chinese parts, English parts).
WORD_ORDER_PARTS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = MappingProxyType(
    {
        "statement": (frozenset(CLAUSE_PARTS), frozenset(CLAUSE_PARTS)),
        "question": (frozenset((*CLAUSE_PARTS, "particle")),) * 2,
        "statement_time_first": (frozenset(CLAUSE_PARTS), frozenset(CLAUSE_PARTS)),
        "question_time_first": (frozenset((*CLAUSE_PARTS, "particle")),) * 2,
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


# --------------------------------------------------------------------------- parsing


def _parse_pronoun(item: Any, where: str) -> Pronoun:
    person = yf.get(item, "person", where)
    if person not in (1, 2, 3):
        raise GrammarFileError(f"{where}.person must be 1, 2 or 3, found {person!r}")
    plural = yf.get(item, "plural", where, False)
    if not isinstance(plural, bool):
        raise GrammarFileError(f"{where}.plural must be true or false")
    fields = ("subject", "object", "possessive")
    words = [yf.token(yf.get(item, f, where), f"{where}.{f}") for f in fields]
    return Pronoun(yf.token(yf.get(item, "zh", where), f"{where}.zh"), *words, person, plural)


def _parse_noun(item: Any, where: str) -> Noun:
    singular = yf.words(yf.get(item, "en", where), f"{where}.en")
    default_plural = " ".join((*singular[:-1], singular[-1] + "s"))
    plural = yf.words(yf.get(item, "plural", where, default_plural), f"{where}.plural")
    measure = yf.get(item, "measure", where, None)
    return Noun(
        zh=yf.token(yf.get(item, "zh", where), f"{where}.zh"),
        singular=singular,
        plural=plural,
        measure=None if measure is None else yf.token(measure, f"{where}.measure"),
        kind=yf.token(yf.get(item, "kind", where), f"{where}.kind"),
    )


def _parse_verb(item: Any, where: str, transitive: bool) -> Verb:
    forms = yf.get(item, "forms", where)
    if not isinstance(forms, list) or len(forms) != 3:
        raise GrammarFileError(f"{where}.forms must list [base, third person singular, past]")
    base, third, past = (yf.words(f, f"{where}.forms") for f in forms)
    objects = yf.kinds(yf.get(item, "objects", where), f"{where}.objects") if transitive else ()
    return Verb(yf.token(yf.get(item, "zh", where), f"{where}.zh"), base, third, past, objects)


def _parse_simple(item: Any, where: str, cls: Callable[..., T], **extra: Any) -> T:
    zh = yf.token(yf.get(item, "zh", where), f"{where}.zh")
    return cls(zh, yf.words(yf.get(item, "en", where), f"{where}.en"), **extra)


def _parse_entries(data: Any) -> dict[str, tuple[Any, ...]]:
    lex = yf.get(data, "lexicon", "the file")

    def each(key: str, parse: Callable[[Any, str], T]) -> tuple[T, ...]:
        return tuple(
            parse(item, f"lexicon.{key}[{n}]") for n, item in enumerate(yf.entries(lex, key))
        )

    return {
        "pronouns": each("pronouns", _parse_pronoun),
        "names": each("names", lambda it, w: _parse_simple(it, w, Name)),
        "nouns": each("nouns", _parse_noun),
        "places": each(
            "places",
            lambda it, w: _parse_simple(
                it,
                w,
                Place,
                preposition=yf.token(yf.get(it, "preposition", w), f"{w}.preposition"),
            ),
        ),
        "transitive_verbs": each("transitive_verbs", lambda it, w: _parse_verb(it, w, True)),
        "intransitive_verbs": each("intransitive_verbs", lambda it, w: _parse_verb(it, w, False)),
        "adjectives": each(
            "adjectives",
            lambda it, w: _parse_simple(
                it,
                w,
                Adjective,
                describes=yf.kinds(yf.get(it, "describes", w), f"{w}.describes"),
            ),
        ),
        "times": each(
            "times",
            lambda it, w: _parse_simple(
                it, w, TimeWord, tense=yf.choice(yf.get(it, "tense", w), TENSES, f"{w}.tense")
            ),
        ),
        "numbers": each(
            "numbers",
            lambda it, w: _parse_simple(
                it,
                w,
                Number,
                value=int(yf.number(yf.get(it, "value", w), f"{w}.value", low=1)),
            ),
        ),
    }


def _parse_function_words(data: Any) -> Mapping[str, FunctionWord]:
    section = yf.get(data, "function_words", "the file")
    words = {}
    for role in FUNCTION_ROLES:
        where = f"function_words.{role}"
        item = yf.get(section, role, "function_words")
        en = yf.get(item, "en", where, None)
        aligned = yf.get(item, "aligned", where, True)
        if not isinstance(aligned, bool):
            raise GrammarFileError(f"{where}.aligned must be true or false")
        words[role] = FunctionWord(
            zh=yf.token(yf.get(item, "zh", where), f"{where}.zh"),
            en=() if en is None else yf.words(en, f"{where}.en"),
            aligned=aligned,
        )
    for role in ("question_mark", "negation", "past_negation", "future", "degree", "comitative"):
        if not words[role].en:
            raise GrammarFileError(f"function_words.{role} needs an 'en' translation")
    return MappingProxyType(words)


def _parse_english(data: Any) -> EnglishWords:
    section = yf.get(data, "english_function_words", "the file")

    def word(key: str) -> str:
        return yf.token(
            yf.get(section, key, "english_function_words"), f"english_function_words.{key}"
        )

    def words(key: str, count: int) -> tuple[str, ...]:
        value = yf.get(section, key, "english_function_words")
        if not isinstance(value, list) or len(value) != count:
            raise GrammarFileError(f"english_function_words.{key} must list {count} words")
        return tuple(yf.token(v, f"english_function_words.{key}") for v in value)

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
    items = yf.get(data, "connectives", "the file")
    if not isinstance(items, list) or not items:
        raise GrammarFileError("connectives must be a non-empty list")
    connectives = []
    for n, item in enumerate(items):
        where = f"connectives[{n}]"
        zh = yf.words(yf.get(item, "zh", where), f"{where}.zh")
        en = yf.words(yf.get(item, "en", where), f"{where}.en")
        try:
            links = parse_alignment(
                yf.text(yf.get(item, "align", where), f"{where}.align"), len(zh), len(en)
            )
        except ValueError as err:
            raise GrammarFileError(f"{where}.align: {err}") from None
        if {i for i, _ in links.sure} != set(range(len(zh))):
            raise GrammarFileError(f"{where}.align must link every Chinese word")
        before_question = yf.get(item, "before_question", where, False)
        if not isinstance(before_question, bool):
            raise GrammarFileError(f"{where}.before_question must be true or false")
        weight = yf.number(yf.get(item, "weight", where, 1), f"{where}.weight")
        phrase = Phrase(zh, en, links.sure, links.possible)
        connectives.append(Connective(phrase, weight, before_question))
    if not any(c.weight for c in connectives):
        raise GrammarFileError("connectives need at least one positive weight")
    return tuple(connectives)


def _parse_word_order(data: Any) -> Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    section = yf.get(data, "word_order", "the file")
    orders = {}
    for construction, expected in WORD_ORDER_PARTS.items():
        where = f"word_order.{construction}"
        item = yf.get(section, construction, "word_order")
        pair = []
        for language, parts in zip(("zh", "en"), expected, strict=True):
            order = yf.get(item, language, where)
            if not isinstance(order, list) or sorted(order) != sorted(parts):
                raise GrammarFileError(
                    f"{where}.{language} must list each of {', '.join(sorted(parts))} once"
                )
            pair.append(tuple(order))
        orders[construction] = (pair[0], pair[1])
    return MappingProxyType(orders)


def _parse_sampling(data: Any) -> Sampling:
    section = yf.get(data, "sampling", "the file")
    where = "sampling"

    def rate(key: str) -> float:
        return yf.number(yf.get(section, key, where), f"{where}.{key}", high=1.0)

    lengths = yf.get(section, "clause_length", where)
    if not (
        isinstance(lengths, list) and len(lengths) == 2 and all(type(v) is int for v in lengths)
    ):
        raise GrammarFileError("sampling.clause_length must be [shortest, longest]")
    if not 2 <= lengths[0] <= lengths[1]:
        raise GrammarFileError("sampling.clause_length needs 2 <= shortest <= longest")
    optional = yf.get(section, "optional", where)
    forms = tuple(NP_FORM_LENGTHS)

    def weights(key: str, allowed: Sequence[str]) -> Mapping[str, float]:
        return yf.weights(yf.get(section, key, where), allowed, f"{where}.{key}")

    return Sampling(
        question_rate=rate("question_rate"),
        negation_rate=rate("negation_rate"),
        clause_length=(lengths[0], lengths[1]),
        stop_rate=rate("stop_rate"),
        clause_kinds=weights("clause_kinds", CLAUSE_KINDS),
        tenses=weights("tenses", TENSES),
        optional=MappingProxyType(
            {
                key: yf.number(
                    yf.get(optional, key, f"{where}.optional"),
                    f"{where}.optional.{key}",
                    high=1,
                )
                for key in ("time", "place", "companion")
            }
        ),
        subject_forms=weights("subject_forms", forms),
        object_forms=weights("object_forms", forms),
        companion_forms=weights("companion_forms", ("pronoun", "name", "bare", "possessive")),
        complement_forms=weights("complement_forms", COMPLEMENT_FORMS),
        subject_relative_object_forms=yf.forms(
            yf.get(section, "subject_relative_object_forms", where),
            ("pronoun", "name", "place", "bare"),
            f"{where}.subject_relative_object_forms",
        ),
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


def load_lexicon(path: Path) -> Lexicon:
    """Read and parse a grammar file.

    A missing, non-UTF-8 or non-YAML file raises :class:`UserError`; content that does
    not describe a lexicon raises :class:`GrammarFileError`.
    """
    if not path.is_file():
        raise UserError(f"grammar file {path} does not exist; pass the path of a grammar.yaml")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"grammar file {path} is not UTF-8; re-save it as UTF-8") from None
    except yaml.YAMLError as err:
        reason = " ".join(str(err).split())
        raise UserError(f"grammar file {path} is not valid YAML: {reason}") from None
    return parse_lexicon(data)
