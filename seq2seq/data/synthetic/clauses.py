"""Clause builders: verb, adjective and copula clauses, and the English verb group.

The English inflection rules live here (agreement, do-support, tense, 了 -> past); word
order comes from ``word_order`` in ``data/grammar.yaml``.
"""

from __future__ import annotations

from seq2seq.data.synthetic.grammar_file import TENSES, Verb
from seq2seq.data.synthetic.nounphrases import NounPhrases
from seq2seq.data.synthetic.phrase import CrossLink, NounPhrase, Phrase
from seq2seq.data.synthetic.words import Words, lookup

_NO_PARTS = dict.fromkeys(("time", "companion", "place", "object"), Phrase())


class Clauses:
    """Builds one clause (statement or yes/no question) from its chosen words."""

    def __init__(self, words: Words, nps: NounPhrases) -> None:
        self.words = words
        self.nps = nps

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
        """A verb clause; ``obj=None`` uses the intransitive verb (see :meth:`Grammar.clause`)."""
        check_mood(tense, negated, question)
        w = self.words
        subj = self.nps.np(subject)
        table = w.transitive if obj is not None else w.intransitive
        entry = lookup(table, verb, "transitive verb" if obj is not None else "intransitive verb")
        aux, main, cross = verb_group(w, entry, subj.third_singular, tense, negated, question)
        obj_np = self.nps.np(obj) if obj is not None else None
        comp_np = self.nps.np(companion) if companion is not None else None
        # a time phrase after a relative clause would read as that clause's time
        time_first = time is not None and any(
            np is not None and np.relative for np in (obj_np, comp_np)
        )
        parts = {
            "subject": subj.as_subject,
            "time": w.time(time, tense),
            "aux": aux,
            "companion": self._companion(comp_np),
            "place": w.place(place),
            "verb": main,
            "object": obj_np.as_object if obj_np is not None else Phrase(),
        }
        do_support = question and tense == "present" and not negated
        maybe = (("verb", 0, "aux", 0),) if do_support else ()
        return self._finish(parts, question, cross, time_first, maybe)

    def _companion(self, companion: NounPhrase | None) -> Phrase:
        """和 玛丽 一起 -> with Mary (一起 unaligned)."""
        if companion is None:
            return Phrase()
        w = self.words
        return w.function("comitative") + companion.as_object + w.marker("together")

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
        """他 很 高兴 -> he is very happy (see :meth:`Grammar.adjective_clause`)."""
        check_mood(tense, negated, question)
        if tense == "past" and time is None:
            raise ValueError("a past adjective clause needs a past time word such as 昨天")
        w = self.words
        subj = self.nps.np(subject)
        entry = lookup(w.adjectives, adjective, "adjective")
        head = w.word(adjective, entry.en)
        degree = Phrase() if negated else w.function("degree")
        maybe: tuple[CrossLink, ...] = ()
        if tense == "future":  # "be" possibly linked to the adjective
            aux = w.future(negated)
            verb = w.with_article(degree + head, len(degree.zh), w.en.copula_infinitive)
        else:  # the copula possibly linked to the adjective
            copula = w.copula(subj, tense)
            aux = w.negated("negation", copula, False) if negated else Phrase((), (copula,))
            verb = degree + head
            maybe = (("verb", len(degree.zh), "aux", 0),)
        parts = {
            "subject": subj.as_subject,
            "time": w.time(time, tense),
            "aux": aux,
            "place": w.place(place),
            "verb": verb,
        }
        return self._finish(parts, question, (), cross_possible=maybe)

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
        check_mood("present", negated, question)
        w = self.words
        subj = self.nps.np(subject)
        entry = lookup(w.nouns, noun, "noun")
        copula = w.copula(subj, "present")
        aux = w.negated("negation", copula, False) if negated else Phrase((), (copula,))
        modifier = w.modifier(adjective)
        if subj.plural or entry.mass:
            complement = modifier + w.word(noun, entry.plural if subj.plural else entry.en)
        else:
            rest = modifier + w.word(noun, entry.en)
            an, a = w.en.indefinite_article_vowel, w.en.indefinite_article
            article = an if rest.en[0][0].lower() in "aeiou" else a
            complement = w.with_article(rest, len(rest.zh) - 1, article)
        parts = {"subject": subj.as_subject, "aux": aux, "verb": w.marker("copula")}
        return self._finish({**parts, "object": complement}, question, (("verb", 0, "aux", 0),))

    def _finish(
        self,
        parts: dict[str, Phrase],
        question: bool,
        cross: tuple[CrossLink, ...],
        time_first: bool = False,
        cross_possible: tuple[CrossLink, ...] = (),
    ) -> Phrase:
        """Arrange the parts (those left out are empty) as a statement, or as a question
        ending in 吗 ？ -> ?; ``time_first`` opens the English clause with its time phrase."""
        w = self.words
        parts = {**_NO_PARTS, **parts}
        suffix = "_time_first" if time_first else ""
        if not question:
            return w.arrange("statement" + suffix, parts, cross, cross_possible)
        mark = w.fw["question_mark"]
        particle = Phrase((w.fw["question"].zh, mark.zh), mark.en, ((1, 0),))
        with_particle = {**parts, "particle": particle}
        return w.arrange("question" + suffix, with_particle, cross, cross_possible)

    def connective(self, zh: str) -> Phrase:
        """A connective by its Chinese text, e.g. ``"， 然后"`` -> ``, and then``."""
        return lookup(self.words.connectives, zh, "connective")


def check_mood(tense: str, negated: bool, question: bool) -> None:
    """Reject a tense the grammar does not know, and negated questions."""
    if tense not in TENSES:
        raise ValueError(f"tense must be one of {', '.join(TENSES)}, got {tense!r}")
    if negated and question:
        raise ValueError("negated questions are not part of the grammar")


def verb_group(
    w: Words, verb: Verb, third_singular: bool, tense: str, negated: bool, question: bool
) -> tuple[Phrase, Phrase, tuple[CrossLink, ...]]:
    """The auxiliary part and the verb part of a verb clause, plus any link between them
    (agreement, do-support, tense: 吃 了 -> ate, 没 吃 -> did not eat, 会 吃 -> will eat)."""
    do, does, did = w.en.do
    base_en, third_en, past_en = verb.forms
    base = w.word(verb.zh, base_en)
    if tense == "future":
        return w.future(negated), base, ()
    if tense == "past":
        if negated:
            return w.negated("past_negation", did, True), base, ()
        if question:  # 吃 了 ... 吗 -> did ... eat: 了 links "did"
            return (
                Phrase((), (did,)),
                base + w.marker("perfective"),
                (("verb", 1, "aux", 0),),
            )
        past = w.word(verb.zh, past_en) + w.marker("perfective")
        return Phrase(), Phrase(past.zh, past.en, (*past.links, (1, 0))), ()
    auxiliary = does if third_singular else do
    if negated:
        return w.negated("negation", auxiliary, True), base, ()
    if question:  # do-support: possibly linked to the verb (cross_possible in clause)
        return Phrase((), (auxiliary,)), base, ()
    return Phrase(), (w.word(verb.zh, third_en) if third_singular else base), ()
