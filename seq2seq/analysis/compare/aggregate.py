"""Grouping runs into attention variants and their statistics over seeds.

Statistics: the mean over seeds and the sample standard deviation (``n - 1``); with a
single seed the sd is unknown (``None``). A metric a run does not have (AER of ``none``,
or of a corpus without gold alignments) is ``None`` and is left out of that metric's mean;
``n`` counts the runs that had it.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from seq2seq.analysis.compare.runs import Run
from seq2seq.choices import ModelKind, variant_name
from seq2seq.errors import UserError
from seq2seq.evaluation.summary import RunSummary
from seq2seq.model.attention import ATTENTION_TYPES, has_weights

#: The checkpoint training tested in runs made before ``test_checkpoint`` was recorded.
LEGACY_TEST_CHECKPOINT = "best.pt"


@dataclass(frozen=True)
class Column:
    """One aggregated metric: which summary value it is and how it is shown.

    ``key`` names a test score (``in_test``) or a top-level :class:`RunSummary` field.
    ``multihead_only`` metrics are aggregated only for variants with several heads.
    ``show_sd`` is False for columns whose sd is always 0 (the parameter count).
    """

    key: str
    label: str
    fmt: str
    in_test: bool = True
    multihead_only: bool = False
    show_sd: bool = True

    def value(self, summary: RunSummary) -> float | None:
        """This metric of one run; ``None`` where the run has none."""
        return summary.test.value(self.key) if self.in_test else getattr(summary, self.key)


COLUMNS: tuple[Column, ...] = (
    Column("bleu", "BLEU", ".2f"),
    Column("chrf", "chrF", ".2f"),
    Column("exact_match", "exact match", ".3f"),
    Column("aer", "AER", ".3f"),
    Column("aer_best_head", "AER best head", ".3f", multihead_only=True),
    Column("attention_entropy", "entropy", ".3f"),
    Column("parameters", "parameters", ",.0f", in_test=False, show_sd=False),
    Column("train_seconds", "train time (s)", ".1f", in_test=False),
    Column("train_tokens_per_second", "train tokens/s", ",.0f", in_test=False),
    Column("decoding_sentences_per_second", "test sentences/s", ",.0f", in_test=False),
    Column("best_step", "steps to best", ".0f", in_test=False),
)


@dataclass(frozen=True)
class Stat:
    """Mean and sample sd (``n - 1``) of ``n`` values; ``None`` where undefined."""

    mean: float | None
    sd: float | None
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "sd": self.sd, "n": self.n}


@dataclass
class Variant:
    """The runs of one attention variant (over seeds) and their statistics."""

    name: str
    attention: str
    num_heads: int
    decoder: str
    runs: list[Run]
    stats: dict[str, Stat] = field(default_factory=dict)
    bleu_by_length: dict[str, Stat] = field(default_factory=dict)

    @property
    def seeds(self) -> list[int]:
        """Each run's seed (a seed repeats when two runs share it)."""
        return sorted(run.seed for run in self.runs)

    @property
    def distinct_seeds(self) -> list[int]:
        return sorted(set(self.seeds))


@dataclass
class Comparison:
    """Everything the outputs are made from.

    The scores compared are each run's own test block (``RunSummary.test``: the checkpoint
    ``test_checkpoints`` names, at the run's best step, with ``beam_sizes``), never the
    evaluations ``scripts/evaluate.py`` adds. ``notes`` explain values the table cannot
    show (why an AER is n/a).
    """

    variants: list[Variant]
    buckets: list[str]
    bucket_sizes: dict[str, int] | None
    datasets: list[str]
    warnings: list[str] = field(default_factory=list)
    test_checkpoints: list[str] = field(default_factory=list)
    beam_sizes: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def has_attention_weights(attention: str) -> bool:
    """Whether ``attention`` has weights; a type this version does not know (a run made by
    another version) is judged by its AER alone."""
    return attention not in ATTENTION_TYPES or has_weights(attention)


def mean_sd(values: Iterable[float | None]) -> Stat:
    """Mean and sample standard deviation (``n - 1``) of the non-``None`` values.

    No values give ``Stat(None, None, 0)``; one value gives an sd of ``None``.
    """
    numbers = [float(v) for v in values if v is not None]
    if not numbers:
        return Stat(None, None, 0)
    sd = statistics.stdev(numbers) if len(numbers) > 1 else None
    return Stat(statistics.fmean(numbers), sd, len(numbers))


def _order_key(attention: str, num_heads: int) -> tuple[int, str, int]:
    """The registry's order first (none, additive, dot, multihead), then others by name."""
    known = list(ATTENTION_TYPES)
    rank = known.index(attention) if attention in known else len(known)
    return rank, attention, num_heads


#: The decoder arrangement a Transformer run records (its own decoder layers), which is also
#: its model kind: :func:`~seq2seq.choices.variant_name` names the family from either.
TRANSFORMER = ModelKind.transformer.value


def group_runs(runs: Sequence[Run]) -> list[Variant]:
    """Group runs by ``(attention, num_heads, decoder)``, in the canonical variant order.

    A variant is named after its attention type, a Transformer (decoder ``transformer``)
    ``transformer`` and listed last; when one type appears with several head counts or
    decoder arrangements, the name says which (e.g. ``multihead-8h``, ``additive-bahdanau``).
    """
    groups: dict[tuple[str, int, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.attention, run.num_heads, run.decoder), []).append(run)
    # each group's family, named as the run folders are
    families = {key: variant_name(key[2], key[0]) for key in groups}
    head_counts: dict[str, set[int]] = {}
    decoders: dict[str, set[str]] = {}
    for (_, heads, decoder), family in families.items():
        head_counts.setdefault(family, set()).add(heads)
        decoders.setdefault(family, set()).add(decoder)
    variants = []
    ordered = sorted(
        groups.items(),
        key=lambda kv: (kv[0][2] == TRANSFORMER, *_order_key(*kv[0][:2]), kv[0][2]),
    )
    for (attention, heads, decoder), members in ordered:
        family = families[attention, heads, decoder]
        name = family if len(head_counts[family]) == 1 else f"{family}-{heads}h"
        if len(decoders[family]) > 1:
            name = f"{name}-{decoder}"
        members = sorted(members, key=lambda run: (run.seed, str(run.path)))
        variants.append(
            Variant(name=name, attention=attention, num_heads=heads, decoder=decoder, runs=members)
        )
    return variants


def _bucket_key(label: str, first_seen: int) -> tuple[int, int]:
    """Sort buckets by their first number (``"1-10"`` < ``"11-20"`` < ``"41+"``)."""
    match = re.match(r"\s*(\d+)", label)
    return (int(match.group(1)) if match else 1 << 30, first_seen)


def bucket_order(runs: Sequence[Run]) -> list[str]:
    """Every source-length bucket any run scored, shortest first."""
    seen: dict[str, int] = {}
    for run in runs:
        for label in run.summary.test.bleu_by_length or {}:
            seen.setdefault(label, len(seen))
    return sorted(seen, key=lambda label: _bucket_key(label, seen[label]))


def common_bucket_sizes(runs: Sequence[Run]) -> dict[str, int] | None:
    """The test sentences per bucket when every run reports the same counts, else ``None``."""
    sizes = [run.summary.test.bucket_sizes for run in runs]
    first = sizes[0] if sizes else None
    if not isinstance(first, Mapping) or any(s != first for s in sizes):
        return None
    return {str(k): v for k, v in first.items()}


def aggregate_variant(variant: Variant, buckets: Sequence[str]) -> None:
    """Fill ``variant.stats`` (every column) and ``variant.bleu_by_length`` (every bucket)."""
    for column in COLUMNS:
        if column.multihead_only and variant.num_heads <= 1:
            variant.stats[column.key] = Stat(None, None, 0)
        else:
            variant.stats[column.key] = mean_sd(column.value(r.summary) for r in variant.runs)
    for bucket in buckets:
        variant.bleu_by_length[bucket] = mean_sd(
            (r.summary.test.bleu_by_length or {}).get(bucket) for r in variant.runs
        )


def _duplicate_seed_warnings(variants: Sequence[Variant]) -> list[str]:
    warnings = []
    for variant in variants:
        seeds = variant.seeds
        for seed in sorted({s for s in seeds if seeds.count(s) > 1}):
            paths = ", ".join(str(r.path) for r in variant.runs if r.seed == seed)
            warnings.append(
                f"{variant.name} has several runs with seed {seed} ({paths}); all are averaged"
            )
    return warnings


def _check_datasets(runs: Sequence[Run], allow_mixed_data: bool) -> tuple[list[str], list[str]]:
    """The datasets of ``runs`` and any warning; :class:`UserError` if mixed and not allowed.

    Averaging seeds across corpora, or comparing variants trained on different data, would
    make the table meaningless.
    """
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.dataset] = counts.get(run.dataset, 0) + 1
    datasets = sorted(counts)
    if len(datasets) <= 1:
        return datasets, []
    listing = "; ".join(f"{name}: {n} run{'s' * (n != 1)}" for name, n in sorted(counts.items()))
    if not allow_mixed_data:
        raise UserError(
            f"the runs use different datasets ({listing}); compare runs of one dataset, "
            "or pass --allow-mixed-data"
        )
    return datasets, [f"the runs use different datasets ({listing})"]


def alignment_notes(variants: Sequence[Variant]) -> list[str]:
    """Why a variant's AER is n/a (or averages fewer runs than it has)."""
    notes = []
    for variant in variants:
        aer = variant.stats["aer"]
        if not has_attention_weights(variant.attention):
            notes.append(f"{variant.name}: no attention weights, so no AER or attention entropy")
        elif aer.n == 0:
            notes.append(
                f"{variant.name}: AER n/a: its test pairs lack gold alignments (AER is scored "
                "only when every test pair has one)"
            )
        elif aer.n < len(variant.runs):
            notes.append(
                f"{variant.name}: AER over {aer.n} of {len(variant.runs)} runs; the test pairs "
                "of the others lack gold alignments"
            )
    return notes


def build_comparison(runs: Sequence[Run], *, allow_mixed_data: bool = False) -> Comparison:
    """Group ``runs`` by variant and compute every statistic."""
    if not runs:
        raise UserError("no runs to compare")
    datasets, warnings = _check_datasets(runs, allow_mixed_data)
    variants = group_runs(runs)
    buckets = bucket_order(runs)
    for variant in variants:
        aggregate_variant(variant, buckets)
    return Comparison(
        variants=variants,
        buckets=buckets,
        bucket_sizes=common_bucket_sizes(runs),
        datasets=datasets,
        warnings=warnings + _duplicate_seed_warnings(variants),
        test_checkpoints=sorted(
            {r.summary.test_checkpoint or LEGACY_TEST_CHECKPOINT for r in runs}
        ),
        beam_sizes=sorted({r.summary.test.beam_size for r in runs}),
        notes=alignment_notes(variants),
    )
