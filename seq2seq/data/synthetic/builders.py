"""Builders of known phrases: the grammar file's words, noun phrases and clauses, aligned.

:class:`Builders` turns lexicon entries into :class:`~.phrase.Phrase` pieces with their
links (a content word linked to every English word but articles, 不 to ``do not`` ...),
builds every noun-phrase form from them, and clauses around those. The English inflection
rules live here (agreement, do-support, tense, 了 -> past); word order comes from
``word_order`` in ``data/grammar.yaml``. A builder raises ``ValueError`` for a word of the
wrong kind or a request outside the grammar (a negated question, 昨天 in a future clause).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from seq2seq.data.synthetic.grammar_file import TENSES, GrammarFile, Marker, Translated, Verb
from seq2seq.data.synthetic.phrase import CrossLink, NounPhrase, Phrase, arrange, concat

T = TypeVar("T")
NounLike = NounPhrase | str  # a noun phrase, or the word of a pronoun, name, place or noun

#: Possible links in a relative clause: the article to the head noun, "that" / "who" to 的.
_ARTICLE_AND_RELATIVE: tuple[CrossLink, ...] = (
    ("head", 0, "article", 0),
    ("modifier", 0, "relative", 0),
)
_NO_PARTS = dict.fromkeys(("time", "companion", "place", "object"), Phrase())


def lookup(table: Mapping[str, T], zh: str, what: str) -> T:
    """``table[zh]``, or a ``ValueError`` saying ``zh`` is not a ``what``."""
    if zh not in table:
        raise ValueError(f"{zh!r} is not a {what} in the grammar")
    return table[zh]


def marker(word: Marker) -> Phrase:
    """A Chinese function word with no English of its own (的, 吗, 了 ...)."""
    return Phrase((word.zh,))


def negation(word: Translated, auxiliary: str, link_auxiliary: bool) -> Phrase:
    """不 / 没 before the verb: ``do not`` (不-do 不-not) or ``is not`` (不-not)."""
    en = (auxiliary, *word.en)
    first = 0 if link_auxiliary else 1
    return Phrase((word.zh,), en, tuple((0, j) for j in range(first, len(en))))


class Builders:
    """Known phrases of the grammar file's words (``builders.clause("我", "爱", "中国")``)."""

    def __init__(self, grammar: GrammarFile) -> None:
        self.file, self.lexicon = grammar, grammar.lexicon
        lex = grammar.lexicon
        self.fw, self.en = grammar.function_words, grammar.english_function_words
        self.pronouns = {p.zh: p for p in lex.pronouns}
        self.names = {n.zh: n for n in lex.names}
        self.nouns = {n.zh: n for n in lex.nouns}
        self.places = {p.zh: p for p in lex.places}
        self.transitive = {v.zh: v for v in lex.transitive_verbs}
        self.intransitive = {v.zh: v for v in lex.intransitive_verbs}
        self.adjectives = {a.zh: a for a in lex.adjectives}
        self.times = {t.zh: t for t in lex.times}
        self.numbers = {n.zh: n for n in lex.numbers}
        self.connectives = {" ".join(c.zh): c.phrase for c in grammar.connectives}
        self.unaligned_tgt: frozenset[str] = self.en.unaligned
        self._words: dict[tuple[str, tuple[str, ...]], Phrase] = {}

    # ----------------------------------------------------------------- words

    def word(self, zh: str, en: tuple[str, ...]) -> Phrase:
        """A lexicon word: linked to every English word except articles and relatives,
        which get possible links (公园 -> the park: 公园-park sure, 公园-the possible).
        Cached: the sampler asks for the same words again and again."""
        if (zh, en) not in self._words:
            links = tuple((0, j) for j, word in enumerate(en) if word not in self.unaligned_tgt)
            maybe = tuple((0, j) for j, word in enumerate(en) if word in self.unaligned_tgt)
            self._words[zh, en] = Phrase((zh,), en, links, maybe)
        return self._words[zh, en]

    def with_article(self, phrase: Phrase, head: int, article: str | None = None) -> Phrase:
        """``the`` (or ``article``) before ``phrase``, possibly linked to its noun, Chinese
        word ``head`` of the phrase: 书 -> the book (书-book sure, 书-the possible)."""
        en = (article or self.en.definite_article, *phrase.en)
        links = tuple((i, j + 1) for i, j in phrase.links)
        maybe = ((head, 0), *((i, j + 1) for i, j in phrase.possible))
        return Phrase(phrase.zh, en, links, maybe)

    def future(self, negative: bool) -> Phrase:
        """会 -> will, 不 会 -> will not (不-not, 会-will)."""
        will, neg = self.fw.future.phrase, self.fw.negation
        if not negative:
            return will
        nots = tuple((0, len(will.en) + j) for j in range(len(neg.en)))
        return Phrase(
            (neg.zh, *will.zh), will.en + neg.en, (*((1, j) for _, j in will.links), *nots)
        )

    def copula(self, subject: NounPhrase, tense: str, negative: bool = False) -> Phrase:
        """am / is / are, or was / were, agreeing with the subject; ``is not`` (不-not)."""
        am, is_, are = self.en.copula_present
        if tense == "past":
            was, were = self.en.copula_past
            copula = was if not subject.plural and subject.person != 2 else were
        elif subject.person == 1 and not subject.plural:
            copula = am
        else:
            copula = is_ if subject.third_singular else are
        return negation(self.fw.negation, copula, False) if negative else Phrase((), (copula,))

    def time(self, zh: str | None, tense: str) -> Phrase:
        """A time word, checked against the clause's tense (or nothing)."""
        if zh is None:
            return Phrase()
        time = lookup(self.times, zh, "time word")
        if time.tense != tense:
            raise ValueError(f"time word {zh} is {time.tense}, but the clause is {tense}")
        return self.word(zh, time.en)

    def place(self, zh: str | None) -> Phrase:
        """在 北京 -> in Beijing (在 linked to the place's preposition), or nothing."""
        if zh is None:
            return Phrase()
        place = lookup(self.places, zh, "place")
        at = Phrase((self.fw.locative.zh,), (place.preposition,), ((0, 0),))
        return at + self.word(zh, place.en)

    def modifier(self, adjective: str | None) -> Phrase:
        """新 的 -> new (的 unaligned), or nothing."""
        if adjective is None:
            return Phrase()
        entry = lookup(self.adjectives, adjective, "adjective")
        return self.word(adjective, entry.en) + marker(self.fw.modifier)

    # ----------------------------------------------------------------- noun phrases

    def np(self, value: NounLike) -> NounPhrase:
        """``value`` itself, or the noun phrase of a single word."""
        return value if isinstance(value, NounPhrase) else self.noun(value)

    def noun(self, zh: str) -> NounPhrase:
        """A pronoun, name, place or bare noun (书: subject ``the book``, object ``books``)."""
        if zh in self.pronouns:
            p = self.pronouns[zh]
            subject, obj = self.word(zh, (p.subject,)), self.word(zh, (p.object,))
            return NounPhrase(subject, obj, p.person, p.plural, zh)
        if zh in self.names or zh in self.places:
            phrase = self.word(zh, (self.names.get(zh) or self.places[zh]).en)
            return NounPhrase(phrase, phrase, head=zh)
        return self.modified(zh, None)

    def modified(self, zh: str, adjective: str | None) -> NounPhrase:
        """[新 的] 书: subject ``the [new] book``, object ``[new] books``."""
        noun = lookup(self.nouns, zh, "noun, pronoun, name or place")
        mod = self.modifier(adjective)
        singular = mod + self.word(zh, noun.en)
        if noun.mass:
            return NounPhrase(singular, singular, head=zh)
        subject = self.with_article(singular, len(singular.zh) - 1)
        return NounPhrase(subject, mod + self.word(zh, noun.plural), head=zh)

    def counted(self, zh: str, number: str, adjective: str | None = None) -> NounPhrase:
        """三 本 [新 的] 书 -> three [new] books (measure word and 的 unaligned)."""
        num = lookup(self.numbers, number, "number")
        return self._measured(self.word(number, num.en), zh, adjective, num.value != 1)

    def this(self, zh: str, adjective: str | None = None) -> NounPhrase:
        """这 本 [新 的] 书 -> this [new] book."""
        return self._measured(self.fw.demonstrative.phrase, zh, adjective, False)

    def _measured(self, det: Phrase, zh: str, adjective: str | None, plural: bool) -> NounPhrase:
        """``det`` (a number or 这), the measure word (unaligned), a 的-modifier, the noun."""
        noun = lookup(self.nouns, zh, "noun")
        if noun.mass:
            raise ValueError(f"{zh} is a mass noun; it has no measure word")
        head = self.word(zh, noun.plural if plural else noun.en)
        phrase = concat((det, Phrase((noun.measure,)), self.modifier(adjective), head))
        return NounPhrase(phrase, phrase, plural=plural, head=zh)

    def possessive(self, owner: str, zh: str) -> NounPhrase:
        """我 的 书 -> my book (的 unaligned)."""
        pronoun = lookup(self.pronouns, owner, "pronoun")
        noun = lookup(self.nouns, zh, "noun")
        de = marker(self.fw.modifier)
        phrase = concat((self.word(owner, (pronoun.possessive,)), de, self.word(zh, noun.en)))
        return NounPhrase(phrase, phrase, head=zh)

    def relative(
        self, zh: str, subject: NounLike, verb: str, time: str | None = None
    ) -> NounPhrase:
        """我 [昨天] 买 的 书 -> the book that I bought [yesterday] (past tense)."""
        past = lookup(self.transitive, verb, "transitive verb").forms[2]
        parts = {"subject": self.np(subject).as_subject, "time": self.time(time, "past")}
        return self._relative("relative_clause", zh, self.en.relative, verb, past, parts)

    def subject_relative(self, zh: str, verb: str, obj: NounLike) -> NounPhrase:
        """喜欢 猫 的 学生 -> the student who likes cats."""
        third = lookup(self.transitive, verb, "transitive verb").forms[1]
        parts = {"object": self.np(obj).as_object}
        relative = self.en.relative_person
        return self._relative("subject_relative_clause", zh, relative, verb, third, parts)

    def _relative(
        self, construction: str, zh: str, relative: str, verb: str, form: tuple[str, ...],
        parts: dict[str, Phrase],
    ) -> NounPhrase:  # fmt: skip
        """The noun ``zh`` after a relative clause of ``verb`` in ``form`` and ``parts``:
        的 unaligned, the article possibly linked to the noun, the relative pronoun to 的."""
        noun = lookup(self.nouns, zh, "noun")
        parts = {
            **parts,
            "verb": self.word(verb, form),
            "modifier": marker(self.fw.modifier),
            "head": self.word(zh, noun.en),
            "article": Phrase((), (self.en.definite_article,)),
            "relative": Phrase((), (relative,)),
        }
        order = getattr(self.file.word_order, construction)
        phrase = arrange(parts, order.zh, order.en, (), _ARTICLE_AND_RELATIVE)
        return NounPhrase(phrase, phrase, head=zh, relative=True)

    # ----------------------------------------------------------------- clauses

    def clause(
        self, subject: NounLike, verb: str, obj: NounLike | None = None, *,
        tense: str = "present", negated: bool = False, time: str | None = None,
        place: str | None = None, companion: NounLike | None = None, question: bool = False,
    ) -> Phrase:  # fmt: skip
        """A verb clause; ``obj=None`` uses the intransitive verb. E.g.
        ``clause("我", "吃", "苹果", tense="past", time="昨天", place="北京")`` is
        我 昨天 在 北京 吃 了 苹果 -> I ate apples in Beijing yesterday."""
        check_mood(tense, negated, question)
        subj = self.np(subject)
        if obj is None:
            entry = lookup(self.intransitive, verb, "intransitive verb")
        else:
            entry = lookup(self.transitive, verb, "transitive verb")
        aux, main, cross = self.verb_group(entry, subj.third_singular, tense, negated, question)
        parts = {
            "subject": subj.as_subject,
            "time": self.time(time, tense),
            "aux": aux,
            "place": self.place(place),
            "verb": main,
        }
        obj_np, comp_np = (None if np is None else self.np(np) for np in (obj, companion))
        if obj_np is not None:
            parts["object"] = obj_np.as_object
        if comp_np is not None:  # 和 玛丽 一起 -> with Mary (一起 unaligned)
            with_ = (self.fw.comitative.phrase, comp_np.as_object, marker(self.fw.together))
            parts["companion"] = concat(with_)
        do_support = question and tense == "present" and not negated
        maybe = (("verb", 0, "aux", 0),) if do_support else ()
        # a time phrase after a relative clause would read as that clause's time
        time_first = time is not None and any(np and np.relative for np in (obj_np, comp_np))
        return self._finish(parts, question, cross, maybe, time_first)

    def verb_group(
        self, verb: Verb, third_singular: bool, tense: str, negative: bool, question: bool
    ) -> tuple[Phrase, Phrase, tuple[CrossLink, ...]]:
        """The auxiliary part and the verb part of a verb clause, plus any link between them
        (agreement, do-support, tense: 吃 了 -> ate, 没 吃 -> did not eat, 会 吃 -> will eat)."""
        do, does, did = self.en.do
        base_en, third_en, past_en = verb.forms
        base, perfective = self.word(verb.zh, base_en), marker(self.fw.perfective)
        if tense == "future":
            return self.future(negative), base, ()
        if tense == "past" and negative:
            return negation(self.fw.past_negation, did, True), base, ()
        if tense == "past" and question:  # 吃 了 ... 吗 -> did ... eat: 了 links "did"
            return Phrase((), (did,)), base + perfective, (("verb", 1, "aux", 0),)
        if tense == "past":  # 吃 了 -> ate: 了 links the inflected word
            past = self.word(verb.zh, past_en) + perfective
            return Phrase(), Phrase(past.zh, past.en, (*past.links, (1, 0))), ()
        auxiliary = does if third_singular else do
        if negative:
            return negation(self.fw.negation, auxiliary, True), base, ()
        if question:  # do-support: possibly linked to the verb (see clause)
            return Phrase((), (auxiliary,)), base, ()
        return Phrase(), (self.word(verb.zh, third_en) if third_singular else base), ()

    def adjective_clause(
        self, subject: NounLike, adjective: str, *, tense: str = "present",
        negated: bool = False, time: str | None = None, place: str | None = None,
        question: bool = False,
    ) -> Phrase:  # fmt: skip
        """他 很 高兴 -> he is very happy (the copula, or "be", possibly linked to 高兴)."""
        check_mood(tense, negated, question)
        if tense == "past" and time is None:
            raise ValueError("a past adjective clause needs a past time word such as 昨天")
        subj = self.np(subject)
        head = self.word(adjective, lookup(self.adjectives, adjective, "adjective").en)
        degree = Phrase() if negated else self.fw.degree.phrase
        if tense == "future":
            aux = self.future(negated)
            verb = self.with_article(degree + head, len(degree.zh), self.en.copula_infinitive)
            maybe: tuple[CrossLink, ...] = ()
        else:
            aux, verb = self.copula(subj, tense, negated), degree + head
            maybe = (("verb", len(degree.zh), "aux", 0),)
        parts = {"subject": subj.as_subject, "time": self.time(time, tense), "aux": aux}
        parts |= {"place": self.place(place), "verb": verb}
        return self._finish(parts, question, (), maybe)

    def copula_clause(
        self, subject: NounLike, noun: str, *, adjective: str | None = None,
        negated: bool = False, question: bool = False,
    ) -> Phrase:  # fmt: skip
        """他 是 [聪明 的] 老师 -> he is a [clever] teacher (是-is; a unaligned)."""
        check_mood("present", negated, question)
        subj = self.np(subject)
        entry = lookup(self.nouns, noun, "noun")
        modifier = self.modifier(adjective)
        if subj.plural or entry.mass:
            complement = modifier + self.word(noun, entry.plural if subj.plural else entry.en)
        else:
            rest = modifier + self.word(noun, entry.en)
            an, a = self.en.indefinite_article_vowel, self.en.indefinite_article
            article = an if rest.en[0][0].lower() in "aeiou" else a
            complement = self.with_article(rest, len(rest.zh) - 1, article)
        aux = self.copula(subj, "present", negated)
        parts = {"subject": subj.as_subject, "aux": aux, "verb": marker(self.fw.copula)}
        return self._finish({**parts, "object": complement}, question, (("verb", 0, "aux", 0),))

    def _finish(
        self, parts: dict[str, Phrase], question: bool, cross: tuple[CrossLink, ...],
        cross_possible: tuple[CrossLink, ...] = (), time_first: bool = False,
    ) -> Phrase:  # fmt: skip
        """Arrange the parts (those left out are empty) as a statement, or as a question
        ending in 吗 ？ -> ?; ``time_first`` opens the English clause with its time phrase."""
        parts = {**_NO_PARTS, **parts}
        if question:
            mark = self.fw.question_mark
            parts["particle"] = Phrase((self.fw.question.zh, mark.zh), mark.en, ((1, 0),))
        mood = "question" if question else "statement"
        order = getattr(self.file.word_order, mood + ("_time_first" if time_first else ""))
        return arrange(parts, order.zh, order.en, cross, cross_possible)

    def connective(self, zh: str) -> Phrase:
        """A connective by its Chinese text, e.g. ``"， 然后"`` -> ``, and then``."""
        return lookup(self.connectives, zh, "connective")


def check_mood(tense: str, negated: bool, question: bool) -> None:
    """Reject a tense the grammar does not know, and negated questions."""
    if tense not in TENSES:
        raise ValueError(f"tense must be one of {', '.join(TENSES)}, got {tense!r}")
    if negated and question:
        raise ValueError("negated questions are not part of the grammar")
