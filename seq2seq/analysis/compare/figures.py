"""The comparison's figures, drawn through :mod:`seq2seq.viz` from the comparison's JSON
document (:func:`~seq2seq.analysis.compare.render.to_json`): the same data a committed results
file keeps, so ``scripts/render.py`` redraws the docs' figures from ``results/compare.json``.

Every figure is always made: when there is nothing to plot (no AER without gold
alignments, no validation history) it is a placeholder that says why, so a comparison
folder always holds the same files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from seq2seq.analysis.compare.aggregate import Variant, has_attention_weights, mean_sd
from seq2seq.analysis.compare.runs import Run
from seq2seq.viz.charts import Point, plot_bars, plot_grouped_bars, plot_lines, plot_message

BLEU_BY_LENGTH_FIGURE = "bleu_by_length.png"
AER_FIGURE = "aer.png"
VALID_LOSS_FIGURE = "valid_loss.png"
EXPLAIN_AER_FIGURE = "explain_aer.png"
INTERVENTIONS_FIGURE = "interventions.png"

#: The maps ``evaluate.py --explain`` scores against the gold links, as the figure names them.
EXPLAIN_MAPS = {
    "aer_attention": "attention",
    "aer_shift_att": "Shift-Att",
    "aer_grad_x_input": "gradient × input",
    "aer_integrated_gradients": "integrated gradients",
}
#: The translations under each intervention, the model's own first.
INTERVENTIONS = {
    "bleu_own": "own attention",
    "bleu_uniform": "uniform",
    "bleu_shuffle": "shuffle",
    "bleu_argmax": "argmax",
}


def _stat_point(x: str | float, stat: dict) -> Point:
    """A JSON statistic ({mean, sd, n}) as a point: ±sd where there is one."""
    return (x, (stat["mean"], stat["sd"])) if stat["sd"] is not None else (x, stat["mean"])


def bleu_by_length_figure(document: dict[str, Any]) -> Figure:
    """Test BLEU against source-length bucket, one line per variant, ±sd over seeds."""
    series: dict[str, list[Point]] = {}
    for variant in document["variants"]:
        points = [
            _stat_point(bucket, stat)
            for bucket, stat in variant["bleu_by_length"].items()
            if stat["mean"] is not None
        ]
        if points:
            series[variant["variant"]] = points
    if not series:
        return plot_message("no run has BLEU by length", title="BLEU by source length")
    return plot_lines(
        series,
        xlabel="source sentence length (tokens: words, or characters)",
        ylabel="test BLEU",
        title="BLEU by source length (mean ± sd over seeds)",
        categories=document["buckets"],
    )


def aer_figure(document: dict[str, Any]) -> Figure:
    """AER per variant with attention (bars: head average ± sd; dots: best head)."""
    title = "Alignment error rate (lower is better)"
    bars: dict[str, tuple[float, float]] = {}
    best: dict[str, tuple[float, float]] = {}
    for variant in document["variants"]:
        aer, best_head = variant["metrics"]["aer"], variant["metrics"]["aer_best_head"]
        if not has_attention_weights(variant["attention"]) or aer["mean"] is None:
            continue
        bars[variant["variant"]] = (aer["mean"], aer["sd"] or 0.0)
        if best_head["mean"] is not None:
            best[variant["variant"]] = (best_head["mean"], best_head["sd"] or 0.0)
    if not bars:
        message = "no AER: no run with attention was scored against gold alignments"
        return plot_message(message, title=title)
    return plot_bars(
        bars,
        dots=best,
        labels=("head average", "best head"),
        ylabel="test AER (mean ± sd over seeds)",
        title=title,
        ylim=(0.0, 1.05),
        value_format=".3f",
    )


def _aligned_steps(runs: Sequence[Run]) -> list[float] | None:
    """The common validation steps of ``runs``, or ``None`` if they differ."""
    step_lists = [[h.step for h in run.summary.history] for run in runs]
    return step_lists[0] if all(s == step_lists[0] for s in step_lists) else None


def valid_loss_series(variant: Variant) -> dict[str, list[Point]]:
    """Validation-loss curves of one variant.

    When every seed validated at the same steps: one line, the mean (± sd with several
    seeds). Otherwise one line per seed, named ``<variant> seed <s>``.
    """
    steps = _aligned_steps(variant.runs)
    if steps is None:
        return {
            f"{variant.name} seed {run.seed}": [(h.step, h.valid_loss) for h in run.summary.history]
            for run in variant.runs
            if run.summary.history
        }
    if not steps:
        return {}
    points: list[Point] = []
    for k, step in enumerate(steps):
        stat = mean_sd(run.summary.history[k].valid_loss for run in variant.runs)
        assert stat.mean is not None
        points.append((step, stat.mean) if stat.sd is None else (step, (stat.mean, stat.sd)))
    return {variant.name: points}


def valid_loss_figure(document: dict[str, Any]) -> Figure:
    """Validation loss against training step, one line per variant (or per seed)."""
    series: dict[str, list[Point]] = {}
    for variant in document["variants"]:
        for name, points in variant["valid_loss"].items():
            series[name] = [(step, tuple(v) if isinstance(v, list) else v) for step, v in points]
    title = "Validation loss (mean ± sd over seeds; per seed where steps differ)"
    if not series:
        return plot_message("no run has a validation history", title=title)
    return plot_lines(series, xlabel="training step", ylabel="validation loss", title=title)


def _explain_groups(document: dict[str, Any], keys: dict[str, str]) -> dict[str, dict]:
    """variant -> {bar name -> (mean, sd)} for the ``keys`` of the explain columns a variant
    has (an explained run's), in ``keys``' order."""
    groups: dict[str, dict[str, tuple[float, float]]] = {}
    for variant in document["variants"]:
        bars = {
            name: (stat["mean"], stat["sd"] or 0.0)
            for key, name in keys.items()
            if (stat := variant["metrics"].get(key)) is not None and stat["mean"] is not None
        }
        if bars:
            groups[variant["variant"]] = bars
    return groups


def _explain_figure(
    document: dict[str, Any], keys: dict[str, str], title: str, ylabel: str, top: float
) -> Figure:
    """Grouped bars of the explain columns ``keys`` per explained variant, or a placeholder
    that says how to explain the runs."""
    groups = _explain_groups(document, keys)
    if not groups:
        message = "no run was explained: python scripts/evaluate.py RUN --explain"
        return plot_message(message, title=title)
    return plot_grouped_bars(groups, ylabel=ylabel, title=title, ylim=(0.0, top))


def explain_aer_figure(document: dict[str, Any]) -> Figure:
    """AER of every map against the gold links, per variant: the attention, Shift-Att (the
    Transformer) and the two attributions (bars ± sd over seeds)."""
    title = "Which map aligns with the truth? (AER, lower is better)"
    return _explain_figure(document, EXPLAIN_MAPS, title, "test AER (mean ± sd over seeds)", 1.05)


def interventions_figure(document: dict[str, Any]) -> Figure:
    """Free-running test BLEU with the model's own attention and with it replaced (uniform,
    shuffled, one-hot at the maximum), per variant (bars ± sd over seeds)."""
    title = "Does the model use its attention? (BLEU, attention replaced)"
    return _explain_figure(
        document, INTERVENTIONS, title, "test BLEU (mean ± sd over seeds)", 105.0
    )


def make_figures(document: dict[str, Any]) -> dict[str, Figure]:
    """File name -> figure, for every comparison figure of the comparison's JSON document."""
    return {
        BLEU_BY_LENGTH_FIGURE: bleu_by_length_figure(document),
        AER_FIGURE: aer_figure(document),
        VALID_LOSS_FIGURE: valid_loss_figure(document),
        EXPLAIN_AER_FIGURE: explain_aer_figure(document),
        INTERVENTIONS_FIGURE: interventions_figure(document),
    }
