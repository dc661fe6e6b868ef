"""The sampler: random sentences of a requested Chinese length.

:class:`Sampler` joins clauses with connectives and ends some sentences in a yes/no
question; each clause follows a :class:`~seq2seq.data.synthetic.planning.ClausePlan`
whose slot lengths add up to the target exactly. :class:`NounPhraseSampler` fills a
noun-phrase slot with random words. Every random draw goes through the ``rng`` passed in,
in a fixed order, so the same seed gives the same corpus.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from seq2seq.data.synthetic.checks import group
from seq2seq.data.synthetic.clauses import Clauses
from seq2seq.data.synthetic.lexicon import GrammarFileError
from seq2seq.data.synthetic.nounphrases import NounPhrases
from seq2seq.data.synthetic.phrase import NounPhrase, Phrase, concat
from seq2seq.data.synthetic.planning import ClausePlan, Fits, draw, fit_lengths, pick, weighted
from seq2seq.data.synthetic.plans import KindSet, Plans

T = TypeVar("T")


def other_than(items: Sequence[T], chosen: T, verb: str) -> T:
    """``chosen``, or when its ``zh`` is ``verb`` the next item in ``items`` that differs.

    Deterministic (no random draw), so avoiding a clash changes that one sentence only and
    the rest of the random stream stays as it was.
    """
    if chosen.zh != verb:  # type: ignore[attr-defined]
        return chosen
    start = items.index(chosen)
    for step in range(1, len(items)):
        item = items[(start + step) % len(items)]
        if item.zh != verb:  # type: ignore[attr-defined]
            return item
    return chosen


def pick_other(rng: random.Random, items: Sequence[T], avoid: Sequence[str]) -> T:
    """A random item whose ``zh`` is not in ``avoid`` (any item if all are avoided)."""
    for _ in range(8):
        item = pick(rng, items)
        if item.zh not in avoid:  # type: ignore[attr-defined]
            return item
    others = [item for item in items if item.zh not in avoid]  # type: ignore[attr-defined]
    return pick(rng, others or items)


class NounPhraseSampler:
    """Random noun phrases of a given form whose head is of given kinds."""

    def __init__(self, nps: NounPhrases, plans: Plans) -> None:
        self.nps = nps
        self.plans = plans
        self.lexicon = plans.lexicon
        self.speakers = (*self.lexicon.pronouns, *self.lexicon.names)
        self.times_by_tense = group(self.lexicon.times, lambda t: (t.tense,))

    def time(self, rng: random.Random, tense: str) -> str:
        """A random time word of ``tense``."""
        return pick(rng, self.times_by_tense[tense]).zh

    def __call__(
        self,
        rng: random.Random,
        form: str,
        kinds: tuple[str, ...],
        avoid: Sequence[str],
        verb: str = "",
    ) -> NounPhrase:
        """A random noun phrase of ``form`` whose head is of one of ``kinds``.

        A relative clause in it does not use ``verb`` (the clause's own verb), which would
        stutter: "the cook that Mary taught taught ...".
        """
        ks = self.plans.kind_set(kinds)
        lex = self.lexicon
        if form in ("pronoun", "name", "place", "bare"):
            pool = {"pronoun": lex.pronouns, "name": lex.names, "place": lex.places}
            return self.nps.noun(pick_other(rng, pool.get(form, ks.nouns), avoid).zh)
        if form == "possessive":
            return self.nps.possessive(pick(rng, lex.pronouns).zh, pick(rng, ks.nouns).zh)
        if form in ("relative", "relative_time"):
            return self._relative(rng, ks, form == "relative_time", verb)
        if form == "subject_relative":
            return self._subject_relative(rng, ks, verb)
        modified = form in ("modified", "counted_modified", "this_modified")
        if form == "modified":
            noun = pick(rng, ks.modifiable)
        else:
            noun = pick(rng, ks.count_modifiable if modified else ks.count_nouns)
        by_kind = self.plans.adjectives_by_kind
        adjective = pick(rng, by_kind[noun.kind]).zh if modified else None
        if form == "modified":
            return self.nps.modified(noun.zh, adjective)  # type: ignore[arg-type]
        if form in ("counted", "counted_modified"):
            return self.nps.counted(noun.zh, pick(rng, lex.numbers).zh, adjective)
        if form in ("this", "this_modified"):
            return self.nps.this(noun.zh, adjective)
        raise ValueError(f"unknown noun-phrase form {form!r}")

    def _relative(
        self, rng: random.Random, ks: KindSet, with_time: bool, avoid_verb: str
    ) -> NounPhrase:
        head = pick(rng, ks.relative_heads)
        verbs = self.plans.verbs_by_kind[head.kind]
        verb = other_than(verbs, pick(rng, verbs), avoid_verb)
        subject = pick(rng, self.speakers).zh
        time = self.time(rng, "past") if with_time else None
        return self.nps.relative(head.zh, subject, verb.zh, time)

    def _subject_relative(self, rng: random.Random, ks: KindSet, avoid_verb: str) -> NounPhrase:
        head = pick(rng, ks.people)
        verbs = self.lexicon.transitive_verbs
        verb = other_than(verbs, pick(rng, verbs), avoid_verb)
        inner = self.plans.kind_set(verb.objects)
        allowed = self.lexicon.sampling.subject_relative_object_forms
        forms = [f for f in allowed if f in inner.forms]
        obj = self(rng, pick(rng, forms), verb.objects, ())
        return self.nps.subject_relative(head.zh, verb.zh, obj)


class Sampler:
    """Random sentences: clauses of planned lengths joined by connectives."""

    def __init__(self, clauses: Clauses, plans: Plans) -> None:
        self.clauses = clauses
        self.plans = plans
        self.lexicon = plans.lexicon
        self.nps = NounPhraseSampler(clauses.nps, plans)
        self._fits: dict[tuple[bool, int, int], Fits] = {}
        lengths = [n for n, (groups, _) in enumerate(plans.by_length[True]) if groups]
        if not lengths:
            raise GrammarFileError("the grammar cannot build any clause; check sampling weights")
        self.min_clause_len = min(lengths)

    def sentence(self, rng: random.Random, src_len: int) -> Phrase:
        """A random sentence of ``src_len`` Chinese tokens (a few fewer at worst)."""
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
            clause = self._clause(rng, target, question and last)
            pieces.append(clause)
            if last:
                return concat(pieces)
            remaining -= len(clause.zh)
            join = weighted(rng, connectives, [c.weight for c in connectives])
            pieces.append(join.phrase)
            remaining -= len(join.phrase.zh)

    def _clause(self, rng: random.Random, target: int, question: bool) -> Phrase:
        """A random clause of ``target`` Chinese tokens (not counting 吗 ？), or the longest
        shorter one the grammar allows."""
        by_length = self.plans.by_length[not question]
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
        subject = self.nps(rng, chosen["subject"], plan.subject_kinds, (), plan.head)
        avoid = [subject.head]
        if plan.kind == "copula":
            return self._copula(rng, subject, chosen["complement"], negated, question)
        time = self.nps.time(rng, tense) if chosen["time"] else None
        place = None
        if chosen.get("place"):
            place = pick_other(rng, self.lexicon.places, avoid).zh
            avoid.append(place)
        if plan.kind == "adjective":
            if tense == "past" and time is None:
                tense = "present"  # nothing in the Chinese would mark the past
            return self.clauses.adjective_clause(
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
            objects = self.clauses.words.transitive[plan.head].objects
            obj = self.nps(rng, chosen["object"], objects, avoid)
            avoid.append(obj.head)
        companion = None
        if chosen["companion"]:
            companion = self.nps(rng, chosen["companion"], ("person",), avoid)
        return self.clauses.clause(
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

    def _copula(
        self, rng: random.Random, subject: NounPhrase, form: str, negated: bool, question: bool
    ) -> Phrase:
        people = self.plans.kind_set(("person",))
        adjective = None
        if form == "modified":
            noun = pick_other(rng, people.modifiable, [subject.head])
            adjective = pick(rng, self.plans.adjectives_by_kind[noun.kind]).zh
        else:
            noun = pick_other(rng, people.people, [subject.head])
        return self.clauses.copula_clause(
            subject, noun.zh, adjective=adjective, negated=negated, question=question
        )
