"""Grouping runs into attention variants and their statistics over seeds.

A variant is an attention (with its head count and decoder arrangement, or the Transformer)
and, when its runs differ in anything else they were trained with, those settings too: a
sweep over ``model.hidden_size`` and ``seed`` gives one row per hidden size
(``additive model.hidden_size=48``), each over the seeds. Settings that do not change what a
run learns (:data:`NOT_COMPARED`: the seed, which rows average over, the device, the threads)
never split a variant, nor does a setting some of its runs did not record.

Statistics: the mean over seeds and the sample standard deviation (``n - 1``); with a
single seed the sd is unknown (``None``). A metric a run does not have (AER of ``none``,
or of a corpus without gold alignments) is ``None`` and is left out of that metric's mean;
``n`` counts the runs that had it.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seq2seq.analysis.compare.runs import Run
from seq2seq.choices import ModelKind, variant_name
from seq2seq.errors import UserError
from seq2seq.evaluation.scores import Explanation
from seq2seq.evaluation.summary import RunSummary
from seq2seq.model.attention import ATTENTION_TYPES, has_weights

#: The checkpoint training tested in runs made before ``test_checkpoint`` was recorded.
LEGACY_TEST_CHECKPOINT = "best.pt"


@dataclass(frozen=True)
class Column:
    """One aggregated metric: which summary value it is and how it is shown.

    ``key`` names a test score (``in_test``) or a top-level :class:`RunSummary` field;
    ``read``, when given, takes the value from the summary instead (the ``explain`` block).
    ``multihead_only`` metrics are aggregated only for variants with several heads.
    ``show_sd`` is False for columns whose sd is always 0 (the parameter count).
    """

    key: str
    label: str
    fmt: str
    in_test: bool = True
    multihead_only: bool = False
    show_sd: bool = True
    read: Callable[[RunSummary], float | None] | None = None

    def value(self, summary: RunSummary) -> float | None:
        """This metric of one run; ``None`` where the run has none."""
        if self.read is not None:
            return self.read(summary)
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


def tested_explanation(summary: RunSummary) -> Explanation | None:
    """``evaluate.py --explain``'s record of the run's test split with the checkpoint training
    tested, if it was made."""
    checkpoint = summary.test_checkpoint or LEGACY_TEST_CHECKPOINT
    return summary.explain.get(f"test {checkpoint}")


def _map_aer(method: str) -> Callable[[RunSummary], float | None]:
    """The AER of one map of the tested explanation: the attention (a Transformer's reported
    layer), an attribution, or the reported layer's Shift-Att."""

    def read(summary: RunSummary) -> float | None:
        explanation = tested_explanation(summary)
        if explanation is None:
            return None
        layer = None
        transformer = summary.decoder == TRANSFORMER and summary.config is not None
        if method in ("attention", "shift_att") and transformer:
            model = summary.config["model"]  # type: ignore[index]
            layer = model["alignment_layer"] % model["decoder_layers"]
        found = explanation.map(method, layer)
        return None if found is None else found.aer

    return read


def _intervened(name: str, score: str) -> Callable[[RunSummary], float | None]:
    """One score of the split under intervention ``name`` ("none": the model's own)."""

    def read(summary: RunSummary) -> float | None:
        explanation = tested_explanation(summary)
        found = None if explanation is None else explanation.intervention(name)
        return None if found is None else getattr(found, score)

    return read


#: Attention put to the test (``evaluate.py --explain`` on the test split): how well each
#: map aligns with the gold links, and what replacing the attention does to the translation.
EXPLAIN_COLUMNS: tuple[Column, ...] = (
    Column("aer_attention", "AER attention", ".3f", read=_map_aer("attention")),
    Column("aer_grad_x_input", "AER grad × input", ".3f", read=_map_aer("grad_x_input")),
    Column(
        "aer_integrated_gradients",
        "AER integrated gradients",
        ".3f",
        read=_map_aer("integrated_gradients"),
    ),
    Column("aer_shift_att", "AER Shift-Att", ".3f", read=_map_aer("shift_att")),
    Column("bleu_own", "BLEU own", ".2f", read=_intervened("none", "bleu")),
    Column("bleu_uniform", "BLEU uniform", ".2f", read=_intervened("uniform", "bleu")),
    Column("bleu_shuffle", "BLEU shuffle", ".2f", read=_intervened("shuffle", "bleu")),
    Column("bleu_argmax", "BLEU argmax", ".2f", read=_intervened("argmax", "bleu")),
    Column(
        "token_accuracy_own", "token acc. own", ".3f", read=_intervened("none", "token_accuracy")
    ),
    Column(
        "token_accuracy_gold",
        "token acc. gold",
        ".3f",
        read=_intervened("gold", "token_accuracy"),
    ),
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
    """The runs of one attention variant (over seeds) and their statistics; ``settings`` are
    the values its runs share where the family's runs differ (``{"model.hidden_size": 48}``)."""

    name: str
    attention: str
    num_heads: int
    decoder: str
    runs: list[Run]
    settings: dict[str, Any] = field(default_factory=dict)
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


#: Settings that never split a variant: the seed (each row is a mean over seeds), where the
#: corpus lies (the dataset check compares corpora), and what only changes the speed or the
#: logs of a run.
NOT_COMPARED = frozenset(
    {
        "seed",
        "resume",
        "device",
        "data.dir",
        "data.path",
        "data.samples",
        "train.num_threads",
        "train.processes",
        "train.eval_batch_size",
        "train.log_every",
    }
)


def _setting_text(value: object) -> str:
    """A setting's value as on the command line (``true``, ``null``, ``0.001``, ``[a, b]``)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, list):
        return "[" + ", ".join(_setting_text(v) for v in value) + "]"
    return str(value)


def _setting_order(value: object) -> tuple[int, float, str]:
    """Numbers by value, then everything else by its text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return 0, float(value), ""
    return 1, 0.0, _setting_text(value)


def differing_settings(runs: Sequence[Run]) -> list[str]:
    """The settings whose values differ between ``runs`` (all of which recorded them),
    :data:`NOT_COMPARED` aside, in the order of the first run's config."""
    if len(runs) < 2 or any(not run.settings for run in runs):
        return []
    first = runs[0].settings
    return [
        key
        for key in first
        if key not in NOT_COMPARED
        and all(key in run.settings for run in runs)
        and any(run.settings[key] != first[key] for run in runs)
    ]


def settings_label(settings: Mapping[str, Any]) -> str:
    """``model.hidden_size=48 train.lr=0.001``: the settings as command-line overrides."""
    return " ".join(f"{key}={_setting_text(value)}" for key, value in settings.items())


def group_runs(runs: Sequence[Run]) -> list[Variant]:
    """Group runs by ``(attention, num_heads, decoder)``, in the canonical variant order, and
    each of those by the settings its runs differ in (:func:`differing_settings`).

    A variant is named after its attention type, a Transformer (decoder ``transformer``)
    ``transformer`` and listed last; when one type appears with several head counts or
    decoder arrangements, the name says which (e.g. ``multihead-8h``, ``additive-bahdanau``);
    then its settings, as overrides (``additive model.hidden_size=48``), ordered by value.
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
        for settings, group in split_by_settings(members):
            variants.append(
                Variant(
                    name=f"{name} {settings_label(settings)}" if settings else name,
                    attention=attention,
                    num_heads=heads,
                    decoder=decoder,
                    runs=sorted(group, key=lambda run: (run.seed, str(run.path))),
                    settings=settings,
                )
            )
    return variants


def split_by_settings(runs: Sequence[Run]) -> list[tuple[dict[str, Any], list[Run]]]:
    """``runs`` grouped by the values of their :func:`differing_settings`, ordered by them."""
    keys = differing_settings(runs)
    groups: dict[tuple[str, ...], list[Run]] = {}
    for run in runs:
        groups.setdefault(tuple(_setting_text(run.settings[k]) for k in keys), []).append(run)
    split = [({key: group[0].settings[key] for key in keys}, group) for group in groups.values()]
    return sorted(split, key=lambda item: [_setting_order(v) for v in item[0].values()])


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


def explain_details(variant: Variant) -> dict[str, Any]:
    """Every intervention's and every map's scores of the variant's explained runs, mean ± sd
    over them: ``{"interventions": {name: {score: Stat}}, "maps": {"method[@layer]": {"aer":
    Stat, "aer_per_head": [Stat, ...]}}}`` (empty when no run was explained)."""
    explanations = [e for r in variant.runs if (e := tested_explanation(r.summary)) is not None]
    interventions: dict[str, dict[str, Stat]] = {}
    maps: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(s.intervention for e in explanations for s in e.interventions):
        found = [e.intervention(name) for e in explanations]
        interventions[name] = {
            score: mean_sd(getattr(x, score) if x else None for x in found)
            for score in ("bleu", "exact_match", "token_accuracy", "loss")
        }
    for method, layer in dict.fromkeys((m.method, m.layer) for e in explanations for m in e.maps):
        found = [e.map(method, layer) for e in explanations]
        heads = max((len(x.aer_per_head or []) for x in found if x), default=0)
        maps[method if layer is None else f"{method}@{layer}"] = {
            "aer": mean_sd(x.aer if x else None for x in found),
            "aer_per_head": [
                mean_sd(x.aer_per_head[h] if x and x.aer_per_head else None for x in found)
                for h in range(heads)
            ],
        }
    return {"runs": len(explanations), "interventions": interventions, "maps": maps}


def aggregate_variant(variant: Variant, buckets: Sequence[str]) -> None:
    """Fill ``variant.stats`` (every column) and ``variant.bleu_by_length`` (every bucket)."""
    for column in (*COLUMNS, *EXPLAIN_COLUMNS):
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
    folders: dict[str, list[str]] = {}
    for run in runs:
        folders.setdefault(run.dataset, []).append(str(run.path))
    datasets = sorted(folders)
    if len(datasets) <= 1:
        return datasets, []
    listing = "; ".join(
        f"{name}: {len(paths)} run{'s' * (len(paths) != 1)} ({_some(sorted(paths))})"
        for name, paths in sorted(folders.items())
    )
    if not allow_mixed_data:
        raise UserError(
            f"the runs use different datasets ({listing}); compare runs of one dataset, "
            "or pass --allow-mixed-data"
        )
    return datasets, [f"the runs use different datasets ({listing})"]


def _some(paths: Sequence[str], shown: int = 2) -> str:
    """The first ``shown`` of ``paths``, and how many more."""
    more = len(paths) - shown
    return ", ".join(paths[:shown]) + (f" and {more} more" if more > 0 else "")


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
