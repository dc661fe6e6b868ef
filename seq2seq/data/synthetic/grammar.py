"""The grammar: builds Chinese→English sentence pairs with gold word alignments.

Pairs are assembled from :class:`~seq2seq.data.synthetic.phrase.Phrase` pieces, so every alignment
is right by construction. The lexicon, function words, connectives, word order and
sampling weights live in ``data/grammar.yaml`` (read by :mod:`seq2seq.data.synthetic.lexicon`),
which documents the alignment conventions at its top. The English inflection rules
(agreement, do-support, tense) live here.

Two ways in:

* builders such as :meth:`Grammar.clause` make one known sentence
  (``grammar.clause("我", "爱", "中国").to_pair()``);
* :meth:`Grammar.sample_pair` draws a random sentence of a requested source length.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from seq2seq.data.corpus import Pair
from seq2seq.data.synthetic.lexicon import (
    CLAUSE_KINDS,
    DEFAULT_GRAMMAR,
    NP_FORM_LENGTHS,
    TENSES,
    GrammarFileError,
    Lexicon,
    Noun,
    Verb,
    load_lexicon,
)
from seq2seq.data.synthetic.phrase import CrossLink, NounPhrase, Phrase, arrange, concat
from seq2seq.data.synthetic.planning import (
    ClausePlan,
    Fits,
    Option,
    Slot,
    draw,
    fit_lengths,
    pick,
    running_sums,
    weighted,
)
from seq2seq.errors import UserError

T = TypeVar("T")

CONTENT_CATEGORIES = frozenset(
    {"pronoun", "name", "noun", "place", "verb", "adjective", "time", "number"}
)
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


@dataclass(frozen=True)
class _KindSet:
    """The nouns and noun-phrase forms available for a set of noun kinds."""

    nouns: tuple[Noun, ...]
    count_nouns: tuple[Noun, ...]
    modifiable: tuple[Noun, ...]
    count_modifiable: tuple[Noun, ...]
    relative_heads: tuple[Noun, ...]
    people: tuple[Noun, ...]
    forms: frozenset[str]


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
        self._fits: dict[tuple[bool, int, int], Fits] = {}
        self._kind_sets: dict[tuple[str, ...], _KindSet] = {}
        self._plans_by_length = {
            allow: self._index_plans(self._build_plans(allow)) for allow in (True, False)
        }
        lengths = [n for n, (groups, _) in enumerate(self._plans_by_length[True]) if groups]
        if not lengths:
            raise GrammarFileError("the grammar cannot build any clause; check sampling weights")
        self.min_clause_len = min(lengths)

    @classmethod
    def load(cls, path: str | Path = DEFAULT_GRAMMAR) -> Grammar:
        """Read a grammar file; a missing or invalid file raises :class:`UserError`."""
        path = Path(path)
        try:
            return cls(load_lexicon(path))
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
            "verb": self._marker("copula"),
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
            join = weighted(rng, connectives, [c.weight for c in connectives])
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
        plans = kinds[draw(rng, cumulative)]
        plan = pick(rng, plans)
        key = (question, plan.index, target)
        fits = self._fits.get(key)
        if fits is None:
            fits = self._fits[key] = fit_lengths(plan.slots, target)
        combo = fits.combos[draw(rng, fits.cumulative)]
        chosen = {
            slot.name: slot.label(rng, length)
            for slot, length in zip(plan.slots, combo, strict=True)
        }
        return self._realise(rng, plan, chosen, question)

    def _realise(
        self, rng: random.Random, plan: ClausePlan, chosen: Mapping[str, Any], question: bool
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
            adjective = pick(rng, self._adjectives_by_kind[noun.kind]).zh
        else:
            noun = self._pick_other(rng, people.people, [subject.head])
        return self.copula_clause(
            subject, noun.zh, adjective=adjective, negated=negated, question=question
        )

    def _sample_time(self, rng: random.Random, tense: str) -> str:
        return pick(rng, self._times_by_tense[tense]).zh

    @staticmethod
    def _pick_other(rng: random.Random, items: Sequence[T], avoid: Sequence[str]) -> T:
        """A random item whose ``zh`` is not in ``avoid`` (any item if all are avoided)."""
        for _ in range(8):
            item = pick(rng, items)
            if item.zh not in avoid:  # type: ignore[attr-defined]
                return item
        others = [item for item in items if item.zh not in avoid]  # type: ignore[attr-defined]
        return pick(rng, others or items)

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
            return self.possessive(pick(rng, lex.pronouns).zh, pick(rng, ks.nouns).zh)
        if form in ("relative", "relative_time"):
            return self._sample_relative(rng, ks, with_time=form == "relative_time")
        if form == "subject_relative":
            return self._sample_subject_relative(rng, ks)
        modified = form in ("modified", "counted_modified", "this_modified")
        if form == "modified":
            noun = pick(rng, ks.modifiable)
        else:
            noun = pick(rng, ks.count_modifiable if modified else ks.count_nouns)
        adjective = pick(rng, self._adjectives_by_kind[noun.kind]).zh if modified else None
        if form == "modified":
            return self.modified(noun.zh, adjective)  # type: ignore[arg-type]
        if form in ("counted", "counted_modified"):
            return self.counted(noun.zh, pick(rng, lex.numbers).zh, adjective)
        if form in ("this", "this_modified"):
            return self.this(noun.zh, adjective)
        raise ValueError(f"unknown noun-phrase form {form!r}")

    def _sample_relative(self, rng: random.Random, ks: _KindSet, with_time: bool) -> NounPhrase:
        head = pick(rng, ks.relative_heads)
        verb = pick(rng, self._verbs_by_kind[head.kind])
        subject = pick(rng, self._speakers).zh
        time = self._sample_time(rng, "past") if with_time else None
        return self.relative(head.zh, subject, verb.zh, time)

    def _sample_subject_relative(self, rng: random.Random, ks: _KindSet) -> NounPhrase:
        head = pick(rng, ks.people)
        verb = pick(rng, self.lexicon.transitive_verbs)
        inner = self._kind_set(verb.objects)
        forms = [f for f in ("pronoun", "name", "place", "bare") if f in inner.forms]
        obj = self._sample_np(rng, pick(rng, forms), verb.objects, ())
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
            "relative_time": bool(relative_heads),  # every tense has a time word
            "subject_relative": bool(people),
        }
        forms = frozenset(form for form, ok in available.items() if ok)
        return _KindSet(nouns, count, modifiable, count_modifiable, relative_heads, people, forms)

    def _np_slot(self, kinds: tuple[str, ...], weights: Mapping[str, float]) -> tuple[Option, ...]:
        forms = self._kind_set(kinds).forms
        return tuple(
            Option(form, NP_FORM_LENGTHS[form], weight)
            for form, weight in weights.items()
            if weight > 0 and form in forms
        )

    def _companion_slot(self, rate: float) -> tuple[Option, ...]:
        """No companion, or 和 X 一起 with X in one of the companion forms."""
        forms = self._np_slot(("person",), self.lexicon.sampling.companion_forms)
        total = sum(o.weight for o in forms)
        options = [Option(None, 0, 1.0 - rate)]
        options.extend(Option(o.label, o.length + 2, rate * o.weight / total) for o in forms)
        return tuple(o for o in options if o.weight > 0)

    @staticmethod
    def _optional(label: str, length: int, rate: float) -> tuple[Option, ...]:
        options = (Option(None, 0, 1.0 - rate), Option(label, length, rate))
        return tuple(o for o in options if o.weight > 0)

    def _predicate_slot(self, kind: str, allow_negation: bool) -> tuple[Option, ...]:
        """(tense, negated) choices with the Chinese length of aux + verb they produce."""
        settings = self.lexicon.sampling
        lengths = PREDICATE_LENGTHS["transitive" if kind == "intransitive" else kind]
        neg_rate = settings.negation_rate if allow_negation else 0.0
        options = []
        for (tense, negated), length in lengths.items():
            weight = settings.tenses.get(tense, 0.0) * (neg_rate if negated else 1.0 - neg_rate)
            if weight > 0:
                options.append(Option((tense, negated), length, weight))
        if not options:  # e.g. only past allowed but the copula is present-only
            options.append(Option(("present", False), lengths[("present", False)], 1.0))
        return tuple(options)

    def _build_plans(self, allow_negation: bool) -> tuple[ClausePlan, ...]:
        settings = self.lexicon.sampling
        optional = settings.optional
        person = ("person",)
        time = Slot.of("time", self._optional("time", 1, optional["time"]))
        place = Slot.of("place", self._optional("place", 2, optional["place"]))
        companion = Slot.of("companion", self._companion_slot(optional["companion"]))
        plans: list[ClausePlan] = []

        def plan(kind: str, head: str, subject_kinds: tuple[str, ...], *slots: Slot) -> None:
            subject = Slot.of("subject", self._np_slot(subject_kinds, settings.subject_forms))
            predicate = Slot.of("predicate", self._predicate_slot(kind, allow_negation))
            all_slots = (subject, predicate, *slots)
            if settings.clause_kinds.get(kind, 0) <= 0 or any(not s.lengths for s in all_slots):
                return
            reachable = 1
            for slot in all_slots:
                reachable = slot.sums(reachable)
            plans.append(ClausePlan(kind, head, all_slots, subject_kinds, reachable, len(plans)))

        for verb in self.lexicon.transitive_verbs:
            obj = Slot.of("object", self._np_slot(verb.objects, settings.object_forms))
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
        complement = self._np_slot(person, settings.complement_forms)
        plan("copula", "", person, Slot.of("complement", complement))
        return tuple(plans)

    def _index_plans(
        self, plans: Sequence[ClausePlan]
    ) -> tuple[tuple[tuple[tuple[ClausePlan, ...], ...], tuple[float, ...]], ...]:
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
                    running_sums(weights[kind] for _, kind in groups),
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
