"""Random sentences of a requested Chinese length: clauses drawn freely, kept when they fit.

:class:`Sampler` draws a clause the way ``sampling`` in ``data/grammar.yaml`` weighs the
choices (clause kind, head word, tense, negation, optional parts, noun-phrase forms), builds
it, and only then counts its tokens: nothing predicts a clause's length, so no table has to
agree with the builders. A sentence grows by clauses (drawn back to front, so a question
stays last), each joined to the next by a connective drawn among those with which it fits,
until its length lies in ``[low, high]``. A clause that would overshoot, or leave a gap
shorter than :data:`MIN_GAP`, is drawn again (rejection sampling); after :data:`REDRAWS`
misses the sentence starts over. Every draw goes through the ``rng`` passed in, in a fixed
order, so a seed fixes the corpus.
"""

from __future__ import annotations

import math
import random
from bisect import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from itertools import accumulate
from typing import Any, TypeVar

from seq2seq.data.synthetic.builders import Builders
from seq2seq.data.synthetic.grammar_file import GrammarFileError
from seq2seq.data.synthetic.phrase import NounPhrase, Phrase, concat

T = TypeVar("T")

#: Tokens a growing sentence must leave for one more join and clause (a shorter gap is rarely
#: filled exactly). It shapes only the speed and the number of clauses, never a length or link.
MIN_GAP = 6
REDRAWS = 20  # draws of one clause before the sentence starts over
RESTARTS = 40  # sentences started before a request counts as impossible


def pick(rng: random.Random, items: Sequence[T]) -> T:
    """An item chosen uniformly."""
    return items[int(rng.random() * len(items))]  # as uniform as randrange, and faster


def pick_other(rng: random.Random, items: Sequence[Any], avoid: Iterable[str]) -> Any:
    """A random item whose ``zh`` is not in ``avoid`` (any item if all are avoided)."""
    return pick(rng, [item for item in items if item.zh not in avoid] or items)


def draw(rng: random.Random, weights: Mapping[T, float]) -> T:
    """A key drawn with probability proportional to its weight (one with weight 0 never):
    ``rng.choices(keys, weights)[0]`` to the bit (the same one ``random()`` and the same
    arithmetic), without its generality (the generator's second most frequent call)."""
    cumulative = list(accumulate(weights.values()))
    total = cumulative[-1] + 0.0
    if not 0.0 < total < math.inf:
        raise ValueError(f"the weights must have a positive finite total, got {total}")
    return tuple(weights)[bisect(cumulative, rng.random() * total, 0, len(cumulative) - 1)]


def group(entries: Iterable[T], keys: Callable[[T], Iterable[str]]) -> dict[str, list[T]]:
    """Entries grouped under each of their keys, in file order."""
    groups: dict[str, list[T]] = {}
    for entry in entries:
        for key in keys(entry):
            groups.setdefault(key, []).append(entry)
    return groups


class Sampler:
    """Random clauses, noun phrases and sentences of the grammar's words; raises
    :class:`GrammarFileError` when ``sampling`` leaves a noun-phrase slot without a form."""

    def __init__(self, builders: Builders) -> None:
        self.builders = builders
        self.settings = builders.file.sampling
        lex = self.lexicon = builders.lexicon
        self.adjectives_by_kind = group(lex.adjectives, lambda a: a.describes)
        self.verbs_by_kind = group(lex.transitive_verbs, lambda v: v.objects)
        self.times_by_tense = group(lex.times, lambda t: (t.tense,))
        self.speakers = (*lex.pronouns, *lex.names)
        self.joins = {" ".join(c.zh): c.weight for c in builders.file.connectives}
        before = {" ".join(c.zh): c.weight for c in builders.file.connectives if c.before_question}
        self.question_joins = before if any(before.values()) else self.joins
        self.join_sizes = {zh: len(zh.split()) for zh in self.joins}  # tokens of each join
        self.pools = cache(self._pools)
        self.forms = cache(self._forms)
        slots = [("subject", ("person",)), ("companion", ("person",)), ("complement", ("person",))]
        slots += [("object", v.objects) for v in lex.transitive_verbs]
        slots += [("subject", a.describes) for a in lex.adjectives]
        for role, kinds in slots:
            if not any(self.forms(role, kinds).values()):
                raise GrammarFileError(
                    f"sampling.{role}_forms gives no noun-phrase form for {', '.join(kinds)}"
                )

    # ----------------------------------------------------------------- sentences

    def sentence(self, rng: random.Random, low: int, high: int) -> Phrase:
        """A random sentence of ``low`` to ``high`` Chinese tokens; clauses joined by
        connectives, some ending in a yes/no question. ``ValueError`` when none is found."""
        if not 1 <= low <= high:
            raise ValueError(f"need 1 <= low <= high, got {low}, {high}")
        for _ in range(RESTARTS):
            question = rng.random() < self.settings.question_rate
            pieces = self._grow(rng, low, high, question)
            if pieces is not None:
                return concat(reversed(pieces))
        span = f"{low}" if low == high else f"{low}-{high}"
        raise ValueError(
            f"drew no sentence of {span} tokens in {RESTARTS} tries; ask for longer sentences"
        )

    def _grow(self, rng: random.Random, low: int, high: int, question: bool) -> list[Phrase] | None:
        """Joins and clauses, last first, that add up to ``low..high`` tokens; ``None`` when a
        clause does not fit in :data:`REDRAWS` draws. A clause is drawn first, then a join
        among those with which it fits."""

        def fits(n: int) -> bool:  # done, or room left for one more clause
            return n <= high and (n >= low or n <= low - MIN_GAP)

        pieces: list[Phrase] = []
        size = 0
        while size < low:
            for _ in range(REDRAWS):
                clause = self.clause(rng, question and size == 0)
                grown = size + len(clause.zh)
                if not size:
                    if fits(grown):
                        break
                    continue
                joins = self.question_joins if question and len(pieces) == 1 else self.joins
                sizes = self.join_sizes
                fitting = {zh: w for zh, w in joins.items() if fits(grown + sizes[zh])}
                if any(fitting.values()):
                    join = self.builders.connectives[draw(rng, fitting)]
                    pieces.append(join)
                    grown += len(join.zh)
                    break
            else:
                return None
            pieces.append(clause)
            size = grown
        return pieces

    # ----------------------------------------------------------------- clauses

    def clause(self, rng: random.Random, question: bool) -> Phrase:
        """A random clause (a yes/no question when ``question``)."""
        settings, lex, optional = self.settings, self.lexicon, self.settings.optional
        kind = draw(rng, settings.clause_kinds)
        negated = not question and rng.random() < settings.negation_rate
        if kind == "copula":  # 他 是 [聪明 的] 老师: a person's noun after 是 (present only)
            subject = self.noun_phrase(rng, "subject", ("person",), ())
            form = draw(rng, self.forms("complement", ("person",)))
            noun = pick_other(rng, self.pools(("person",))[form], [subject.head])
            adjective = None
            if form == "modified":
                adjective = pick(rng, self.adjectives_by_kind[noun.kind]).zh
            return self.builders.copula_clause(
                subject, noun.zh, adjective=adjective, negated=negated, question=question
            )
        tense = draw(rng, settings.tenses)
        verbs = lex.transitive_verbs if kind == "transitive" else lex.intransitive_verbs
        head = pick(rng, lex.adjectives if kind == "adjective" else verbs)
        kinds = head.describes if kind == "adjective" else ("person",)  # type: ignore[union-attr]
        subject = self.noun_phrase(rng, "subject", kinds, (), head.zh)
        avoid = [subject.head]
        time = None
        if rng.random() < optional.time:
            time = pick(rng, self.times_by_tense[tense]).zh
        # no 在-phrase beside a place subject (北京 很 漂亮) or object (*在 北京 去 上海)
        objects = getattr(head, "objects", ())
        place = None
        if (
            subject.head not in self.builders.places
            and set(objects) != {"place"}
            and rng.random() < optional.place
        ):
            place = pick_other(rng, lex.places, avoid).zh
            avoid.append(place)
        if kind == "adjective":
            if tense == "past" and time is None:
                tense = "present"  # nothing in the Chinese would mark the past
            return self.builders.adjective_clause(
                subject, head.zh, tense=tense, negated=negated, time=time, place=place,
                question=question,
            )  # fmt: skip
        obj = None
        if kind == "transitive":
            obj = self.noun_phrase(rng, "object", objects, avoid)
            avoid.append(obj.head)
        companion = None
        if rng.random() < optional.companion:
            companion = self.noun_phrase(rng, "companion", ("person",), avoid)
        return self.builders.clause(
            subject, head.zh, obj, tense=tense, negated=negated, time=time, place=place,
            companion=companion, question=question,
        )  # fmt: skip

    # ----------------------------------------------------------------- noun phrases

    def _forms(self, role: str, kinds: tuple[str, ...]) -> dict[str, float]:
        """The weights of ``sampling.<role>_forms`` that entries of ``kinds`` can fill."""
        weights = getattr(self.settings, f"{role}_forms").items()
        return {form: w for form, w in weights if form in self.pools(kinds)}

    def _pools(self, kinds: tuple[str, ...]) -> dict[str, Sequence[Any]]:
        """For each noun-phrase form, the entries of ``kinds`` that can head it (if any)."""
        lex = self.lexicon
        nouns = tuple(n for n in lex.nouns if n.kind in kinds)
        count = tuple(n for n in nouns if not n.mass)
        modifiable = tuple(n for n in count if n.kind in self.adjectives_by_kind)
        relative = tuple(n for n in nouns if n.kind in self.verbs_by_kind)
        person = "person" in kinds
        pools = {
            "pronoun": lex.pronouns if person else (),
            "name": lex.names if person else (),
            "place": lex.places if "place" in kinds else (),
            "bare": nouns,
            "possessive": nouns,
            "counted": count,
            "this": count,
            "modified": tuple(n for n in nouns if n.kind in self.adjectives_by_kind),
            "counted_modified": modifiable,
            "this_modified": modifiable,
            "relative": relative,
            "relative_time": relative,  # every tense has a time word
            "subject_relative": tuple(n for n in nouns if n.kind == "person"),
        }
        return {form: pool for form, pool in pools.items() if pool}

    def noun_phrase(
        self, rng: random.Random, role: str, kinds: tuple[str, ...], avoid: Sequence[str],
        verb: str = "", form: str | None = None,
    ) -> NounPhrase:  # fmt: skip
        """A random noun phrase for ``role`` (subject, object, companion) whose head is of one
        of ``kinds``, in ``form`` or one drawn by ``sampling.<role>_forms``. Its head is not in
        ``avoid``, and a relative clause in it does not use ``verb`` (the clause's own), which
        would stutter: "the cook that Mary taught taught ..."."""
        form = form or draw(rng, self.forms(role, kinds))
        pool, lex, make = self.pools(kinds)[form], self.lexicon, self.builders
        if form in ("pronoun", "name", "place", "bare"):
            return make.noun(pick_other(rng, pool, avoid).zh)
        head = pick(rng, pool)
        if form == "possessive":
            return make.possessive(pick(rng, lex.pronouns).zh, head.zh)
        if form in ("relative", "relative_time"):
            verbs = self.verbs_by_kind[head.kind]
            chosen = pick_other(rng, verbs, (verb,))
            time = pick(rng, self.times_by_tense["past"]).zh if form == "relative_time" else None
            return make.relative(head.zh, pick(rng, self.speakers).zh, chosen.zh, time)
        if form == "subject_relative":
            chosen = pick_other(rng, lex.transitive_verbs, (verb,))
            inner = self.pools(chosen.objects)
            forms = [f for f in self.settings.subject_relative_object_forms if f in inner]
            obj = self.noun_phrase(rng, "object", chosen.objects, (), form=pick(rng, forms))
            return make.subject_relative(head.zh, chosen.zh, obj)
        adjective = pick(rng, self.adjectives_by_kind[head.kind]).zh if "modified" in form else None
        if form == "modified":
            return make.modified(head.zh, adjective)
        if form.startswith("counted"):
            return make.counted(head.zh, pick(rng, lex.numbers).zh, adjective)
        return make.this(head.zh, adjective)
