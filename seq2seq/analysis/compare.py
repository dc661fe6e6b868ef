"""Compare finished runs: mean ± sd over seeds per attention variant, as tables and figures.

``python scripts/compare.py multirun/<time>`` reads every run folder (one holding a
``metrics.json``) below the given sweep folders and/or the given run folders, groups the
runs by attention variant and writes, into the output folder:

* ``comparison.md`` -- the main table (test BLEU, chrF, exact match, AER, attention entropy,
  parameters, training time, steps to best; mean ± sd over seeds) and a BLEU-by-source-length
  table (mean over seeds);
* ``comparison.csv`` -- the same numbers, one row per variant (``<metric>_mean``,
  ``<metric>_sd``, ``<metric>_n``, and ``bleu_len_<bucket>_mean``/``_sd``/``_n``);
* ``comparison.json`` -- everything, including the run folders that went into each row;
* ``bleu_by_length.png``, ``aer.png``, ``valid_loss.png`` -- the figures;
* ``tb/`` -- the figures and the markdown table for TensorBoard.

Statistics: the mean over seeds and the sample standard deviation (``n - 1``); with a single
seed the sd is unknown (``null`` in JSON, empty in CSV, ``–`` in markdown). A metric a run
does not have (AER of ``none``, or of a corpus without gold alignments) is ``null`` and is
left out of that metric's mean; ``n`` counts the runs that had it.

Runs of different datasets are refused unless ``allow_mixed_data`` is set (then it is a
warning and the datasets are listed in the report): averaging seeds across corpora, or
comparing variants trained on different data, would make the table meaningless. A dataset
is ``metrics.json``'s ``data`` name plus, when ``.hydra/config.yaml`` gives one, the
corpus file or folder (``data.path`` or ``data.dir``).

The output folder is ``out``, or else the one sweep folder given; it may not be (or be
inside) a run folder. Only the files above are written there; a previous comparison's
TensorBoard event file in ``tb/`` is replaced, and no run is ever modified.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from seq2seq.errors import UserError
from seq2seq.model.attention import ATTENTION_TYPES, has_weights
from seq2seq.training.tblog import RunLogger
from seq2seq.viz import Point, plot_lines, save_figure

METRICS_FILE = "metrics.json"
MARKDOWN_FILE = "comparison.md"
CSV_FILE = "comparison.csv"
JSON_FILE = "comparison.json"
BLEU_BY_LENGTH_FIGURE = "bleu_by_length.png"
AER_FIGURE = "aer.png"
VALID_LOSS_FIGURE = "valid_loss.png"
TB_FOLDER = "tb"
TB_PREFIX = "comparison"
NO_SD = "–"
NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class Column:
    """One aggregated metric: where it lives in ``metrics.json`` and how it is shown.

    ``required`` metrics must be numbers; the others may be missing or ``null``.
    ``multihead_only`` metrics are aggregated only for variants with several heads.
    ``show_sd`` is False for columns whose sd is always 0 (the parameter count).
    """

    key: str
    label: str
    path: tuple[str, ...]
    fmt: str
    required: bool = True
    multihead_only: bool = False
    show_sd: bool = True


COLUMNS: tuple[Column, ...] = (
    Column("bleu", "BLEU", ("test", "bleu"), ".2f"),
    Column("chrf", "chrF", ("test", "chrf"), ".2f"),
    Column("exact_match", "exact match", ("test", "exact_match"), ".3f"),
    Column("aer", "AER", ("test", "aer"), ".3f", required=False),
    Column(
        "aer_best_head",
        "AER best head",
        ("test", "aer_best_head"),
        ".3f",
        required=False,
        multihead_only=True,
    ),
    Column("attention_entropy", "entropy", ("test", "attention_entropy"), ".3f", required=False),
    Column("parameters", "parameters", ("parameters",), ",.0f", show_sd=False),
    Column("train_seconds", "train time (s)", ("train_seconds",), ".1f"),
    Column("best_step", "steps to best", ("best_step",), ".0f"),
)


@dataclass(frozen=True)
class Stat:
    """Mean and sample sd (``n - 1``) of ``n`` values; ``None`` where undefined."""

    mean: float | None
    sd: float | None
    n: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "sd": self.sd, "n": self.n}


@dataclass(frozen=True)
class Run:
    """One finished run: its folder, identity and the content of its ``metrics.json``."""

    path: Path
    attention: str
    num_heads: int
    decoder: str
    seed: int
    dataset: str
    metrics: Mapping[str, Any]


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
        return sorted(run.seed for run in self.runs)


@dataclass
class Comparison:
    """Everything the outputs are made from."""

    variants: list[Variant]
    buckets: list[str]
    bucket_sizes: dict[str, int] | None
    datasets: list[str]
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- finding runs


def _is_run_dir(path: Path) -> bool:
    return (path / METRICS_FILE).is_file()


def _runs_below(folder: Path) -> list[Path]:
    """Run folders below ``folder`` (not descending into a run folder or hidden folders)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        if METRICS_FILE in files:
            found.append(Path(root))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def find_run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders named by ``paths``: run folders as given, sweep folders searched.

    A path may also be a ``metrics.json`` file (its folder is the run). Each run appears
    once even if reached through several paths. Raises :class:`UserError` for a missing
    path, a path that is some other file, or a folder without any run below it.
    """
    if not paths:
        raise UserError("give at least one sweep folder or run folder")
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UserError(f"{path} does not exist")
        if path.is_file():
            if path.name != METRICS_FILE:
                raise UserError(f"{path} is a file; give a sweep folder or a run folder")
            runs = [path.parent]
        elif _is_run_dir(path):
            runs = [path]
        else:
            runs = _runs_below(path)
            if not runs:
                raise UserError(
                    f"no run folders (folders with {METRICS_FILE}) found under {path}; "
                    "has the sweep finished?"
                )
        for run in runs:
            found.setdefault(run.resolve(), None)
    return list(found)


# --------------------------------------------------------------------------- loading runs


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_history(value: object) -> bool:
    """A list of validation records, each with a numeric ``step`` and ``valid_loss``."""
    return isinstance(value, list) and all(
        isinstance(h, Mapping) and _is_number(h.get("step")) and _is_number(h.get("valid_loss"))
        for h in value
    )


def _lookup(data: Mapping[str, Any], path: Sequence[str]) -> tuple[bool, Any]:
    """``(True, value)`` if ``data[path[0]][path[1]]...`` exists, else ``(False, None)``."""
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _check_field(
    data: Mapping[str, Any], path: Sequence[str], ok: Callable[[Any], bool], what: str, file: Path
) -> None:
    """Raise :class:`UserError` naming ``file`` unless ``data`` has ``path`` and ``ok(value)``."""
    name = ".".join(path)
    present, value = _lookup(data, path)
    if not present:
        raise UserError(f"{file}: missing key {name!r}; is it a metrics.json from train.py?")
    if not ok(value):
        raise UserError(f"{file}: {name!r} should be {what}, got {value!r}")


def validate_metrics(data: object, file: Path) -> None:
    """Check that ``data`` (a parsed ``metrics.json``) has every key the comparison uses."""
    if not isinstance(data, Mapping):
        raise UserError(f"{file}: expected a JSON object, got {type(data).__name__}")
    _check_field(data, ("attention",), lambda v: isinstance(v, str) and v != "", "a name", file)
    _check_field(data, ("seed",), _is_integer, "an integer", file)
    _check_field(data, ("data",), lambda v: isinstance(v, str), "a dataset name", file)
    for column in COLUMNS:
        if column.required:
            _check_field(data, column.path, _is_number, "a number", file)
        else:
            present, value = _lookup(data, column.path)
            if present and value is not None and not _is_number(value):
                raise UserError(f"{file}: {'.'.join(column.path)!r} should be a number or null")
    _check_field(
        data,
        ("test", "bleu_by_length"),
        lambda v: isinstance(v, Mapping) and all(_is_number(x) for x in v.values()),
        "an object of bucket -> BLEU",
        file,
    )
    _check_field(
        data,
        ("history",),
        _is_history,
        "a list of {step, valid_loss, ...} entries",
        file,
    )


def _corpus_location(run_dir: Path) -> str | None:
    """``data.path`` or ``data.dir`` from the run's saved Hydra config, if readable."""
    try:
        config = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    data = config.get("data") if isinstance(config, Mapping) else None
    if not isinstance(data, Mapping):
        return None
    location = data.get("path") or data.get("dir")
    return str(location) if location else None


def load_run(run_dir: Path) -> Run:
    """Read and check ``run_dir/metrics.json``; raise :class:`UserError` naming the file."""
    file = run_dir / METRICS_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(f"cannot read {file}: {err.strerror or err}") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{file} is not valid JSON ({err}); rerun or remove that run") from err
    validate_metrics(data, file)
    num_heads = data.get("num_heads", 1)
    if not _is_integer(num_heads) or num_heads < 0:
        raise UserError(f"{file}: 'num_heads' should be a whole number, got {num_heads!r}")
    location = _corpus_location(run_dir)
    return Run(
        path=run_dir,
        attention=data["attention"],
        num_heads=num_heads,
        decoder=str(data.get("decoder", "bahdanau")),  # metrics.json before model.decoder
        seed=data["seed"],
        dataset=f"{data['data']} ({location})" if location else data["data"],
        metrics=data,
    )


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """All runs named by ``paths`` (see :func:`find_run_dirs`), loaded and checked."""
    return [load_run(run_dir) for run_dir in find_run_dirs(paths)]


# --------------------------------------------------------------------------- aggregation


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
    """none, additive, dot, multihead first (in that order), then others by name."""
    known = list(ATTENTION_TYPES)
    rank = known.index(attention) if attention in known else len(known)
    return rank, attention, num_heads


def group_runs(runs: Sequence[Run]) -> list[Variant]:
    """Group runs by ``(attention, num_heads, decoder)``, in the canonical variant order.

    A variant is named after its attention type; when one type appears with several head
    counts or decoder arrangements, the name says which (e.g. ``multihead-8h``,
    ``additive-bahdanau``).
    """
    groups: dict[tuple[str, int, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.attention, run.num_heads, run.decoder), []).append(run)
    head_counts: dict[str, set[int]] = {}
    decoders: dict[str, set[str]] = {}
    for attention, heads, decoder in groups:
        head_counts.setdefault(attention, set()).add(heads)
        decoders.setdefault(attention, set()).add(decoder)
    variants = []
    ordered = sorted(groups.items(), key=lambda kv: (*_order_key(*kv[0][:2]), kv[0][2]))
    for (attention, heads, decoder), members in ordered:
        name = attention if len(head_counts[attention]) == 1 else f"{attention}-{heads}h"
        if len(decoders[attention]) > 1:
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
        for label in run.metrics["test"]["bleu_by_length"]:
            seen.setdefault(label, len(seen))
    return sorted(seen, key=lambda label: _bucket_key(label, seen[label]))


def common_bucket_sizes(runs: Sequence[Run]) -> dict[str, int] | None:
    """The test sentences per bucket when every run reports the same counts, else ``None``."""
    sizes = [run.metrics["test"].get("bucket_sizes") for run in runs]
    first = sizes[0] if sizes else None
    if not isinstance(first, Mapping) or any(s != first for s in sizes):
        return None
    return {str(k): v for k, v in first.items()}


def _column_value(run: Run, column: Column) -> float | None:
    _, value = _lookup(run.metrics, column.path)
    return value


def aggregate_variant(variant: Variant, buckets: Sequence[str]) -> None:
    """Fill ``variant.stats`` (every column) and ``variant.bleu_by_length`` (every bucket)."""
    for column in COLUMNS:
        if column.multihead_only and variant.num_heads <= 1:
            variant.stats[column.key] = Stat(None, None, 0)
        else:
            variant.stats[column.key] = mean_sd(_column_value(r, column) for r in variant.runs)
    for bucket in buckets:
        variant.bleu_by_length[bucket] = mean_sd(
            r.metrics["test"]["bleu_by_length"].get(bucket) for r in variant.runs
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
    """The datasets of ``runs`` and any warning; :class:`UserError` if mixed and not allowed."""
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
    )


# --------------------------------------------------------------------------- tables


def format_stat(stat: Stat, fmt: str, *, show_sd: bool = True) -> str:
    """``"12.34 ± 0.56"``; ``"12.34 ± –"`` for one value; ``"n/a"`` for none."""
    if stat.mean is None:
        return NOT_APPLICABLE
    mean = format(stat.mean, fmt)
    if not show_sd:
        return mean
    return f"{mean} ± {NO_SD if stat.sd is None else format(stat.sd, fmt)}"


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    align = ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def main_table_lines(comparison: Comparison) -> list[str]:
    """The markdown lines of the per-variant table."""
    header = ["variant", "seeds", *(column.label for column in COLUMNS)]
    rows = [
        [
            variant.name,
            str(len(variant.runs)),
            *(format_stat(variant.stats[c.key], c.fmt, show_sd=c.show_sd) for c in COLUMNS),
        ]
        for variant in comparison.variants
    ]
    return _markdown_table(header, rows)


def length_table_lines(comparison: Comparison) -> list[str]:
    """The markdown lines of the variant × source-length-bucket BLEU table."""
    sizes = comparison.bucket_sizes or {}
    header = ["variant"] + [f"{b} ({sizes[b]})" if b in sizes else b for b in comparison.buckets]
    rows = [
        [variant.name]
        + [format_stat(variant.bleu_by_length[b], ".2f", show_sd=False) for b in comparison.buckets]
        for variant in comparison.variants
    ]
    return _markdown_table(header, rows)


def render_markdown(comparison: Comparison) -> str:
    """``comparison.md``: a summary line, the main table and the BLEU-by-length table."""
    n_runs = sum(len(v.runs) for v in comparison.variants)
    lines = [
        "# Attention comparison",
        "",
        f"{n_runs} run{'s' * (n_runs != 1)} on {', '.join(comparison.datasets)}. Test set, "
        f"mean ± sd over seeds (sample sd, n−1; {NO_SD} with a single seed; "
        f"{NOT_APPLICABLE} where a variant has no such value). AER: lower is better; "
        "head-average, with the best single head for multi-head variants.",
        "",
        *main_table_lines(comparison),
        "",
        "## Test BLEU by source length",
        "",
        "Source length in words; mean over seeds"
        + ("; test sentences per bucket in brackets." if comparison.bucket_sizes else "."),
        "",
        *length_table_lines(comparison),
    ]
    if comparison.warnings:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in comparison.warnings)]
    return "\n".join(lines) + "\n"


def _csv_number(value: float | int | None) -> str:
    return "" if value is None else repr(value)


def csv_header(comparison: Comparison) -> list[str]:
    header = ["variant", "attention", "num_heads", "decoder", "n_seeds", "seeds"]
    for key in [c.key for c in COLUMNS] + [f"bleu_len_{b}" for b in comparison.buckets]:
        header += [f"{key}_mean", f"{key}_sd", f"{key}_n"]
    return header


def render_csv(comparison: Comparison) -> str:
    """``comparison.csv``: one row per variant; empty cells for undefined values."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(csv_header(comparison))
    for v in comparison.variants:
        stats = [v.stats[c.key] for c in COLUMNS]
        stats += [v.bleu_by_length[b] for b in comparison.buckets]
        row = [v.name, v.attention, v.num_heads, v.decoder, len(v.runs)]
        row.append(" ".join(map(str, v.seeds)))
        for stat in stats:
            row += [_csv_number(stat.mean), _csv_number(stat.sd), stat.n]
        writer.writerow(row)
    return out.getvalue()


def to_json(comparison: Comparison) -> dict[str, Any]:
    """``comparison.json``: statistics per variant plus the runs behind them."""
    return {
        "datasets": comparison.datasets,
        "buckets": comparison.buckets,
        "bucket_sizes": comparison.bucket_sizes,
        "warnings": comparison.warnings,
        "variants": [
            {
                "variant": v.name,
                "attention": v.attention,
                "num_heads": v.num_heads,
                "decoder": v.decoder,
                "n_seeds": len(v.runs),
                "seeds": v.seeds,
                "runs": [str(r.path) for r in v.runs],
                "metrics": {key: stat.as_dict() for key, stat in v.stats.items()},
                "bleu_by_length": {b: s.as_dict() for b, s in v.bleu_by_length.items()},
            }
            for v in comparison.variants
        ],
    }


# --------------------------------------------------------------------------- figures


def _placeholder_figure(message: str, title: str) -> Figure:
    """A figure that only says why there is nothing to plot."""
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig


def bleu_by_length_figure(comparison: Comparison) -> Figure:
    """Test BLEU against source-length bucket, one line per variant, ±sd over seeds."""
    series: dict[str, list[Point]] = {}
    for variant in comparison.variants:
        points: list[Point] = [
            (bucket, (stat.mean, stat.sd or 0.0))
            for bucket, stat in variant.bleu_by_length.items()
            if stat.mean is not None
        ]
        if points:
            series[variant.name] = points
    if not series:
        return _placeholder_figure("no run has BLEU by length", "BLEU by source length")
    return plot_lines(
        series,
        xlabel="source sentence length (words)",
        ylabel="test BLEU",
        title="BLEU by source length (mean ± sd over seeds)",
        categories=comparison.buckets,
    )


def aer_figure(comparison: Comparison) -> Figure:
    """AER per variant with attention (bars: head average ± sd; dots: best head)."""
    variants = [
        v
        for v in comparison.variants
        if has_weights(v.attention) and v.stats["aer"].mean is not None
    ]
    title = "Alignment error rate (lower is better)"
    if not variants:
        return _placeholder_figure(
            "no AER: no run with attention was scored against gold alignments", title
        )
    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    positions = list(range(len(variants)))
    means = [v.stats["aer"].mean or 0.0 for v in variants]
    sds = [v.stats["aer"].sd or 0.0 for v in variants]
    bars = ax.bar(
        positions, means, width=0.5, yerr=sds, capsize=4, color="tab:blue", label="head average"
    )
    ax.bar_label(bars, labels=[f"{m:.3f}" for m in means], padding=3, fontsize=8)
    best = [(k, v.stats["aer_best_head"]) for k, v in enumerate(variants)]
    best = [(k, s) for k, s in best if s.mean is not None]
    if best:
        ax.errorbar(
            [k for k, _ in best],
            [s.mean for _, s in best],
            yerr=[s.sd or 0.0 for _, s in best],
            fmt="D",
            color="tab:orange",
            capsize=4,
            label="best head",
        )
    ax.set_xticks(positions, [v.name for v in variants])
    ax.set_xlim(-0.75, len(variants) - 0.25)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("test AER (mean ± sd over seeds)")
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    return fig


def _aligned_steps(runs: Sequence[Run]) -> list[float] | None:
    """The common validation steps of ``runs``, or ``None`` if they differ."""
    step_lists = [[h["step"] for h in run.metrics["history"]] for run in runs]
    return step_lists[0] if all(s == step_lists[0] for s in step_lists) else None


def valid_loss_series(variant: Variant) -> dict[str, list[Point]]:
    """Validation-loss curves of one variant.

    When every seed validated at the same steps: one line, the mean (± sd with several
    seeds). Otherwise one line per seed, named ``<variant> seed <s>``.
    """
    steps = _aligned_steps(variant.runs)
    if steps is None:
        return {
            f"{variant.name} seed {run.seed}": [
                (h["step"], h["valid_loss"]) for h in run.metrics["history"]
            ]
            for run in variant.runs
            if run.metrics["history"]
        }
    if not steps:
        return {}
    points: list[Point] = []
    for k, step in enumerate(steps):
        stat = mean_sd(run.metrics["history"][k]["valid_loss"] for run in variant.runs)
        assert stat.mean is not None
        points.append((step, stat.mean) if stat.sd is None else (step, (stat.mean, stat.sd)))
    return {variant.name: points}


def valid_loss_figure(comparison: Comparison) -> Figure:
    """Validation loss against training step, one line per variant (or per seed)."""
    series: dict[str, list[Point]] = {}
    for variant in comparison.variants:
        series |= valid_loss_series(variant)
    title = "Validation loss (mean ± sd over seeds; per seed where steps differ)"
    if not series:
        return _placeholder_figure("no run has a validation history", title)
    return plot_lines(series, xlabel="training step", ylabel="validation loss", title=title)


def make_figures(comparison: Comparison) -> dict[str, Figure]:
    """File name -> figure, for every comparison figure."""
    return {
        BLEU_BY_LENGTH_FIGURE: bleu_by_length_figure(comparison),
        AER_FIGURE: aer_figure(comparison),
        VALID_LOSS_FIGURE: valid_loss_figure(comparison),
    }


# --------------------------------------------------------------------------- writing


def resolve_out_dir(paths: Sequence[str | Path], out: str | Path | None) -> Path:
    """Where the outputs go: ``out``, or the single sweep folder given.

    Raises :class:`UserError` when ``out`` is needed but missing, or when the output
    folder is a run folder or a file (nothing of a run is ever overwritten).
    """
    if out is not None:
        target = Path(out)
    elif len(paths) == 1 and Path(paths[0]).is_dir() and not _is_run_dir(Path(paths[0])):
        target = Path(paths[0])
    else:
        raise UserError(
            "--out DIR is required unless exactly one sweep folder is given "
            "(e.g. --out comparisons/attention)"
        )
    if target.exists() and not target.is_dir():
        raise UserError(f"--out {target} is a file; give a folder")
    for folder in (target, *target.resolve().parents):
        if _is_run_dir(folder):
            raise UserError(
                f"{target} is inside the run folder {folder}; write the comparison elsewhere "
                "with --out"
            )
    return target


def _remove_previous_event_file(out: Path) -> None:
    """Delete the TensorBoard event file a previous comparison into ``out`` wrote."""
    try:
        previous = json.loads((out / JSON_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    name = previous.get("tensorboard_event_file") if isinstance(previous, dict) else None
    if isinstance(name, str) and name.startswith("events.out.tfevents.") and "/" not in name:
        (out / TB_FOLDER / name).unlink(missing_ok=True)


def write_tensorboard(out: Path, figures: Mapping[str, Figure], markdown: str) -> str | None:
    """Figures and the table into ``out/tb``; returns the new event file's name.

    A previous comparison's event file there is removed, and the writer purges from step 0,
    so TensorBoard shows only this comparison.
    """
    tb_dir = out / TB_FOLDER
    _remove_previous_event_file(out)
    before = set(tb_dir.iterdir()) if tb_dir.is_dir() else set()
    logger = RunLogger(tb_dir, purge_step=0)
    try:
        for name, fig in figures.items():
            logger.figure(f"{TB_PREFIX}/{Path(name).stem}", fig, 0)
        logger.text(f"{TB_PREFIX}/table", markdown, 0)
    finally:
        logger.close()
    new = sorted(p.name for p in set(tb_dir.iterdir()) - before)
    return new[0] if new else None


def write_outputs(comparison: Comparison, out: Path) -> list[Path]:
    """Write every comparison output into ``out``; return the files written."""
    out.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(comparison)
    figures = make_figures(comparison)
    written = []
    for name, fig in figures.items():
        written.append(save_figure(fig, out / name))
    event_file = write_tensorboard(out, figures, markdown)
    (out / MARKDOWN_FILE).write_text(markdown, encoding="utf-8")
    (out / CSV_FILE).write_text(render_csv(comparison), encoding="utf-8")
    payload = to_json(comparison) | {"tensorboard_event_file": event_file}
    (out / JSON_FILE).write_text(
        json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    written += [out / MARKDOWN_FILE, out / CSV_FILE, out / JSON_FILE, out / TB_FOLDER]
    return written


def compare(
    paths: Sequence[str | Path], out: str | Path | None = None, *, allow_mixed_data: bool = False
) -> tuple[Comparison, Path]:
    """Load the runs under ``paths``, aggregate them and write every output.

    Returns the comparison and the output folder. Raises :class:`UserError` for anything
    the user can fix (see :func:`find_run_dirs`, :func:`load_run`, :func:`resolve_out_dir`).
    """
    runs = load_runs(paths)
    target = resolve_out_dir(paths, out)
    comparison = build_comparison(runs, allow_mixed_data=allow_mixed_data)
    write_outputs(comparison, target)
    return comparison, target
