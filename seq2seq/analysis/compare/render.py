"""The comparison as text: the markdown report, the CSV table and the JSON document.

Undefined values: an sd of one seed is ``–`` in markdown, empty in CSV and ``null`` in
JSON; a metric no run of a variant has is ``n/a`` in markdown (empty / ``null``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from seq2seq.analysis.compare.aggregate import (
    COLUMNS,
    EXPLAIN_COLUMNS,
    Column,
    Comparison,
    Stat,
    Variant,
    explain_details,
    settings_label,
)
from seq2seq.analysis.compare.figures import valid_loss_series

NO_SD = "–"
NOT_APPLICABLE = "n/a"


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


def _seed_count(variant: Variant) -> str:
    """``3``, or ``3 (4 runs)`` when runs share a seed (all are averaged; warned about)."""
    seeds, runs = len(variant.distinct_seeds), len(variant.runs)
    return str(seeds) if seeds == runs else f"{seeds} ({runs} runs)"


def main_table_lines(comparison: Comparison, columns: Sequence[Column] = COLUMNS) -> list[str]:
    """The markdown lines of the per-variant table of ``columns``."""
    header = ["variant", "seeds", *(column.label for column in columns)]
    rows = [
        [
            variant.name,
            _seed_count(variant),
            *(format_stat(variant.stats[c.key], c.fmt, show_sd=c.show_sd) for c in columns),
        ]
        for variant in comparison.variants
    ]
    return _markdown_table(header, rows)


def explained(comparison: Comparison) -> bool:
    """Whether any run was put to the test (``evaluate.py --explain``)."""
    return any(v.stats[c.key].n for v in comparison.variants for c in EXPLAIN_COLUMNS)


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


def _listing(items: Sequence[object]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    words = [str(item) for item in items]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def scores_line(comparison: Comparison) -> str:
    """Which scores the table compares: training's own test block of each run."""
    checkpoints = " or ".join(comparison.test_checkpoints) or "best.pt"
    beams = comparison.beam_sizes or [1]
    beam = f"beam size{'s' * (len(beams) > 1)} {_listing(beams)}"
    return (
        "Scores: each run's own test scores, as training recorded them (`test` in "
        f"metrics.json: {checkpoints} at the run's best step, {beam}), not the evaluations "
        "scripts/evaluate.py adds."
    )


def render_markdown(comparison: Comparison) -> str:
    """``comparison.md``: a summary line, which scores, the main table and its notes, and
    the BLEU-by-length table."""
    n_runs = sum(len(v.runs) for v in comparison.variants)
    lines = [
        "# Attention comparison",
        "",
        f"{n_runs} run{'s' * (n_runs != 1)} on {', '.join(comparison.datasets)}. Test set, "
        f"mean ± sd over seeds (sample sd, n−1; {NO_SD} with a single seed; "
        f"{NOT_APPLICABLE} where a variant has no such value). AER: lower is better; "
        "head-average, with the best single head for multi-head variants.",
        scores_line(comparison),
        "",
        *main_table_lines(comparison),
        "",
    ]
    if comparison.notes:
        lines += ["## Notes", "", *(f"- {note}" for note in comparison.notes), ""]
    if explained(comparison):
        lines += [
            "## Attention put to the test",
            "",
            "`scripts/evaluate.py RUN --explain` on the test split: AER against the gold links "
            "of the attention (a Transformer's reported layer), of gradient × input and "
            "integrated gradients (Captum), and of Shift-Att (Transformer); free-running BLEU "
            "with the model's own attention and with it replaced (uniform, shuffled, argmax); "
            "teacher-forced token accuracy with its own and with the gold alignment. Mean ± sd "
            "over the seeds that were explained.",
            "",
            *main_table_lines(comparison, EXPLAIN_COLUMNS),
            "",
        ]
    lines += [
        "## Test BLEU by source length",
        "",
        "Source length in tokens (words; characters where Chinese is read per character, "
        "as in Tatoeba); mean over seeds"
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
    """``variant, attention, ...`` (``settings``: what sets the variant apart besides its
    attention, as overrides) then ``<metric>_mean/_sd/_n`` and ``bleu_len_<bucket>_*``."""
    header = ["variant", "attention", "num_heads", "decoder", "settings", "n_seeds", "n_runs"]
    header.append("seeds")
    keys = [c.key for c in (*COLUMNS, *EXPLAIN_COLUMNS)]
    for key in keys + [f"bleu_len_{b}" for b in comparison.buckets]:
        header += [f"{key}_mean", f"{key}_sd", f"{key}_n"]
    return header


def render_csv(comparison: Comparison) -> str:
    """``comparison.csv``: one row per variant; empty cells for undefined values."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(csv_header(comparison))
    for v in comparison.variants:
        stats = [v.stats[c.key] for c in (*COLUMNS, *EXPLAIN_COLUMNS)]
        stats += [v.bleu_by_length[b] for b in comparison.buckets]
        row = [v.name, v.attention, v.num_heads, v.decoder, settings_label(v.settings)]
        row += [len(v.distinct_seeds), len(v.runs)]
        row.append(" ".join(map(str, v.seeds)))
        for stat in stats:
            row += [_csv_number(stat.mean), _csv_number(stat.sd), stat.n]
        writer.writerow(row)
    return out.getvalue()


def _plain_stats(value: Any) -> Any:
    """Nested dicts and lists of :class:`Stat` as plain data."""
    if isinstance(value, Stat):
        return value.as_dict()
    if isinstance(value, dict):
        return {k: _plain_stats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_stats(v) for v in value]
    return value


def to_json(comparison: Comparison) -> dict[str, Any]:
    """``comparison.json``: statistics per variant plus the runs behind them."""
    return {
        "datasets": comparison.datasets,
        "scores": {
            "source": "test",
            "test_checkpoints": comparison.test_checkpoints,
            "beam_sizes": comparison.beam_sizes,
        },
        "notes": comparison.notes,
        "buckets": comparison.buckets,
        "bucket_sizes": comparison.bucket_sizes,
        "warnings": comparison.warnings,
        "variants": [
            {
                "variant": v.name,
                "attention": v.attention,
                "num_heads": v.num_heads,
                "decoder": v.decoder,
                "settings": v.settings,
                "n_seeds": len(v.distinct_seeds),
                "n_runs": len(v.runs),
                "seeds": v.seeds,
                "runs": [str(r.path) for r in v.runs],
                "metrics": {key: stat.as_dict() for key, stat in v.stats.items()},
                "bleu_by_length": {b: s.as_dict() for b, s in v.bleu_by_length.items()},
                "valid_loss": valid_loss_series(v),
                "explain": _plain_stats(explain_details(v)),
            }
            for v in comparison.variants
        ],
    }
