"""Clause plans for the sampler: which slots each clause kind has, indexed by length.

:class:`Plans` turns the ``sampling`` weights of ``data/grammar.yaml`` into one
:class:`~seq2seq.data.synthetic.planning.ClausePlan` per verb / adjective / copula, and
indexes them by the Chinese lengths they can reach, so the sampler can draw a clause of
an exact length. The lengths here follow from how the builders assemble each form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from seq2seq.data.synthetic.checks import group
from seq2seq.data.synthetic.entries import Lexicon, Noun
from seq2seq.data.synthetic.lexicon import CLAUSE_KINDS, NP_FORM_LENGTHS
from seq2seq.data.synthetic.planning import ClausePlan, Option, Slot, running_sums

#: Chinese length of aux + verb for each (tense, negated): 吃 / 不 吃 / 吃 了 / 没 吃 / 会 吃 /
#: 不 会 吃; 很 高兴 / 不 高兴 / 会 很 高兴 / 不 会 高兴; 是 / 不 是. (Set by the builders.)
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

#: Per target length: the plan groups (one per clause kind) and running-sum kind weights.
PlanIndex = tuple[tuple[tuple[tuple[ClausePlan, ...], ...], tuple[float, ...]], ...]


@dataclass(frozen=True)
class KindSet:
    """The nouns and noun-phrase forms available for a set of noun kinds."""

    nouns: tuple[Noun, ...]
    count_nouns: tuple[Noun, ...]
    modifiable: tuple[Noun, ...]
    count_modifiable: tuple[Noun, ...]
    relative_heads: tuple[Noun, ...]
    people: tuple[Noun, ...]
    forms: frozenset[str]


class Plans:
    """Clause plans by length (with and without negation), and noun sets by kind."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.adjectives_by_kind = group(lexicon.adjectives, lambda a: a.describes)
        self.verbs_by_kind = group(lexicon.transitive_verbs, lambda v: v.objects)
        self._kind_sets: dict[tuple[str, ...], KindSet] = {}
        self.by_length: dict[bool, PlanIndex] = {
            allow: self._index(self._build(allow)) for allow in (True, False)
        }

    def kind_set(self, kinds: tuple[str, ...]) -> KindSet:
        """Nouns and noun-phrase forms for ``kinds`` (computed once per distinct tuple)."""
        if kinds not in self._kind_sets:
            self._kind_sets[kinds] = self._make_kind_set(kinds)
        return self._kind_sets[kinds]

    def _make_kind_set(self, kinds: tuple[str, ...]) -> KindSet:
        nouns = tuple(n for n in self.lexicon.nouns if n.kind in kinds)
        count = tuple(n for n in nouns if not n.mass)
        modifiable = tuple(n for n in nouns if self.adjectives_by_kind.get(n.kind))
        count_modifiable = tuple(n for n in modifiable if not n.mass)
        relative_heads = tuple(n for n in nouns if self.verbs_by_kind.get(n.kind))
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
        return KindSet(nouns, count, modifiable, count_modifiable, relative_heads, people, forms)

    def _np_slot(self, kinds: tuple[str, ...], weights: Mapping[str, float]) -> tuple[Option, ...]:
        forms = self.kind_set(kinds).forms
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

    def _build(self, allow_negation: bool) -> tuple[ClausePlan, ...]:
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

    def _index(self, plans: Sequence[ClausePlan]) -> PlanIndex:
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
