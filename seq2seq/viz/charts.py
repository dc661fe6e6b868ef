"""Line and bar charts, and a figure that says why there is nothing to plot.

Each chart is a constrained-layout figure with one axes, drawn inside
:func:`~seq2seq.viz.figures.figure_context` (Latin and CJK labels); functions that take a
``path`` also write the figure there (:func:`~seq2seq.viz.figures.save_figure`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from seq2seq.viz.figures import figure_context, save_figure

CHART_SIZE = (6.4, 4.0)  # inches

XValue = float | str
#: A point is ``(x, y)`` or ``(x, (mean, sd))``; the latter draws an error bar of ±sd.
Point = tuple[XValue, float] | tuple[XValue, tuple[float, float]]


def _new_axes(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A constrained-layout figure on an Agg canvas with one axes (call in figure_context)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _label_axes(ax: Axes, families: list[str], labels: tuple[str, str], title: str | None) -> None:
    """Axis labels ``(x, y)``, title, a light grid and the legend (if anything is labelled)."""
    ax.set_xlabel(labels[0], fontfamily=families)
    ax.set_ylabel(labels[1], fontfamily=families)
    ax.set_title(title or "", fontfamily=families)
    ax.grid(True, alpha=0.3)
    if any(ax.get_legend_handles_labels()[1]):
        ax.legend(prop={"family": families})


def plot_message(message: str, *, title: str = "") -> Figure:
    """A figure that only says ``message``: why there is nothing to plot (files stay the same)."""
    with figure_context() as families:
        fig, ax = _new_axes(CHART_SIZE)
        ax.set_axis_off()
        ax.set_title(title, fontfamily=families)
        ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontfamily=families)
    return fig


def _split_point(point: Sequence[object], name: str) -> tuple[XValue, float, float | None]:
    """``(x, y)`` -> ``(x, y, None)``; ``(x, (mean, sd))`` -> ``(x, mean, sd)``."""
    if len(point) != 2:
        raise ValueError(f"series {name!r}: want (x, y) or (x, (mean, sd)), got {point!r}")
    x, y = point
    if isinstance(y, Sequence) and not isinstance(y, str):
        if len(y) != 2:
            raise ValueError(f"series {name!r}: an error-bar value must be (mean, sd), got {y!r}")
        return x, float(y[0]), float(y[1])
    return x, float(y), None


def _merge_categories(columns: Sequence[Sequence[str]]) -> list[str]:
    """Merge per-series category orders into one, keeping each series' order.

    A label first seen in a later series is placed right after the label preceding it in
    that series, so ``["1-10", "41+"]`` and ``["1-10", "11-20", "41+"]`` merge to
    ``["1-10", "11-20", "41+"]``.
    """
    merged: list[str] = []
    for labels in columns:
        previous: str | None = None
        for label in labels:
            if label not in merged:
                at = merged.index(previous) + 1 if previous is not None else 0
                merged.insert(at, label)
            previous = label
    return merged


def plot_lines(
    series: Mapping[str, Sequence[Point]],
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str | None = None,
    categories: Sequence[str] | None = None,
    logy: bool = False,
    markers: bool | None = None,
    figsize: tuple[float, float] = CHART_SIZE,
    path: str | Path | None = None,
) -> Figure:
    """Line chart with one line per named series; returns the Figure (also written to ``path``,
    see :func:`save_figure`).

    ``series`` maps a legend name (e.g. an attention variant) to its points, each
    ``(x, y)`` or ``(x, (mean, sd))``; the second form draws an error bar of ±sd (e.g. a
    mean and standard deviation over seeds). The x values are either all numbers (e.g.
    training steps; plotted as given) or all strings (categories such as the length buckets
    ``"1-10"``, ``"11-20"``, ...). Categories appear in the order ``categories`` gives, or
    else in the merged order of the series (a series may skip a category). ``logy`` uses a
    log y axis; ``markers`` draws point markers (default: when a series has <= 50 points).

    Example: ``plot_lines({"dot": [("1-10", (25.0, 1.2)), ("11-20", (19.8, 0.9))]})``.

    Raises ``ValueError`` for an empty mapping, malformed points, or mixed x types.
    """
    if not series:
        raise ValueError("plot_lines needs at least one series")
    parsed = {name: [_split_point(p, name) for p in points] for name, points in series.items()}
    xs = [x for points in parsed.values() for x, _, _ in points]
    categorical = any(isinstance(x, str) for x in xs)
    if categorical and not all(isinstance(x, str) for x in xs):
        raise ValueError("x values must be all numbers or all category labels, not a mix")
    if categorical:
        columns = [[str(x) for x, _, _ in points] for points in parsed.values()]
        order = list(categories) if categories is not None else _merge_categories(columns)
        missing = sorted({str(x) for x in xs} - set(order))
        if missing:
            raise ValueError(f"x labels {missing} are not in categories {order}")
        position = {label: k for k, label in enumerate(order)}

    with figure_context() as families:
        fig, ax = _new_axes(figsize)
        for name, points in parsed.items():
            if categorical:
                points = sorted(points, key=lambda p: position[str(p[0])])
                x_values = [position[str(x)] for x, _, _ in points]
            else:
                x_values = [float(x) for x, _, _ in points]
            y_values = [y for _, y, _ in points]
            show_markers = markers if markers is not None else len(points) <= 50
            style = {"marker": "o" if show_markers else None, "label": str(name)}
            if any(sd is not None for _, _, sd in points):
                errors = [sd if sd is not None else 0.0 for _, _, sd in points]
                ax.errorbar(x_values, y_values, yerr=errors, capsize=3, **style)
            else:
                ax.plot(x_values, y_values, **style)
        if categorical:
            ax.set_xticks(range(len(order)), order, fontfamily=families)
        if logy:
            ax.set_yscale("log")
        _label_axes(ax, families, (xlabel, ylabel), title)
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_bars(
    bars: Mapping[str, tuple[float, float]],
    *,
    dots: Mapping[str, tuple[float, float]] | None = None,
    labels: tuple[str, str] = ("", ""),
    ylabel: str = "",
    title: str | None = None,
    ylim: tuple[float, float] | None = None,
    value_format: str = ".3f",
) -> Figure:
    """Bar chart of ``name -> (mean, sd)``: ±sd error bars, each mean written on its bar.

    ``dots`` adds a second ``(mean, sd)`` to some of the bars, drawn as a diamond with its
    own error bar (e.g. the AER of the best head beside the head average); ``labels`` name
    the bars and the dots in the legend. Raises ``ValueError`` if ``bars`` is empty.
    """
    if not bars:
        raise ValueError("plot_bars needs at least one bar")
    names, dots = list(bars), dots or {}
    with figure_context() as families:
        fig, ax = _new_axes(CHART_SIZE)
        means, sds = zip(*(bars[n] for n in names), strict=True)
        drawn = ax.bar(range(len(names)), means, width=0.5, yerr=sds, capsize=4, label=labels[0])
        ax.bar_label(drawn, labels=[format(m, value_format) for m in means], padding=3, fontsize=8)
        at = [k for k, name in enumerate(names) if name in dots]
        if at:
            y, err = zip(*(dots[names[k]] for k in at), strict=True)
            ax.errorbar(at, y, yerr=err, fmt="D", color="tab:orange", capsize=4, label=labels[1])
        ax.set_xticks(range(len(names)), names, fontfamily=families)
        ax.set_xlim(-0.75, len(names) - 0.25)
        if ylim is not None:
            ax.set_ylim(*ylim)
        _label_axes(ax, families, ("", ylabel), title)
        ax.xaxis.grid(False)
    return fig


def plot_grouped_bars(
    groups: Mapping[str, Mapping[str, tuple[float, float]]],
    *,
    ylabel: str = "",
    title: str | None = None,
    ylim: tuple[float, float] | None = None,
) -> Figure:
    """Grouped bar chart: ``group -> {bar -> (mean, sd)}``, one cluster per group (e.g. an
    attention variant), one colour per bar name (e.g. a method) in a shared legend, ±sd
    error bars. A group may lack some bars: its cluster leaves their places empty, so one
    colour sits at the same offset in every cluster. Raises ``ValueError`` if there are no
    bars at all.
    """
    names = _merge_categories([list(bars) for bars in groups.values()])
    if not names:
        raise ValueError("plot_grouped_bars needs at least one bar")
    width = 0.8 / len(names)
    with figure_context() as families:
        fig, ax = _new_axes(CHART_SIZE)
        for k, name in enumerate(names):
            at = [g for g, bars in enumerate(groups.values()) if name in bars]
            values = [bars[name] for bars in groups.values() if name in bars]
            means, sds = zip(*values, strict=True)
            offsets = [g - 0.4 + width * (k + 0.5) for g in at]
            ax.bar(offsets, means, width=width, yerr=sds, capsize=2, label=name)
        ax.set_xticks(range(len(groups)), list(groups), fontfamily=families)
        if ylim is not None:
            ax.set_ylim(*ylim)
        _label_axes(ax, families, ("", ylabel), title)
        ax.xaxis.grid(False)
    return fig
