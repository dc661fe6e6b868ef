"""Figures: attention heat maps, line and bar charts, and placeholder figures.

Everything here uses matplotlib's object-oriented API (:class:`~matplotlib.figure.Figure`
rendered through :class:`~matplotlib.backends.backend_agg.FigureCanvasAgg`), never
``pyplot``: no global figure registry, no backend selection, nothing to close.

Chinese tokens need a CJK font. :func:`register_cjk_font` adds the Noto Sans CJK
collection shipped by the ``noto-cjk-sans-otc`` package to matplotlib's font manager (the
only global change this module makes; it is idempotent), and every text object is drawn
with the family list ``["DejaVu Sans", <CJK family>]``: Latin glyphs come from DejaVu Sans
and anything it lacks falls back to the CJK font (matplotlib >= 3.6 per-glyph fallback).
``rcParams`` change only inside :func:`matplotlib.rc_context` blocks. Nothing is downloaded.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, fontManager
from matplotlib.transforms import ScaledTranslation

from seq2seq.errors import UserError
from seq2seq.files import atomic_write_bytes
from seq2seq.fonts import CJK_PREFERRED_FAMILY, cjk_font_path

LATIN_FAMILY = "DejaVu Sans"
EOS = "<eos>"
DEFAULT_DPI = 150
ATTENTION_CMAP = "viridis"
CHART_SIZE = (6.4, 4.0)  # inches

XValue = float | str
#: A point is ``(x, y)`` or ``(x, (mean, sd))``; the latter draws an error bar of ±sd.
Point = tuple[XValue, float] | tuple[XValue, tuple[float, float]]


# --------------------------------------------------------------------------- fonts


@functools.cache
def register_cjk_font() -> str:
    """Register the bundled Noto Sans CJK collection with matplotlib; return its family.

    The ``.ttc`` file is looked up next to the ``noto_cjk_sans_otc`` package's
    ``__init__``. The result is cached, so repeated calls neither re-read the file nor add
    duplicate font-manager entries. Returns ``"Noto Sans CJK SC"`` (Simplified Chinese
    glyph shapes) when the collection provides it, else the first family it provides.

    Raises :class:`~seq2seq.errors.UserError` if the package or its font file is missing.
    """
    path = cjk_font_path()

    def families() -> list[str]:
        return [f.name for f in fontManager.ttflist if Path(f.fname).resolve() == path]

    if not families():
        fontManager.addfont(str(path))
    names = families()
    if not names:
        raise UserError(f"matplotlib could not read the CJK font {path}")
    return CJK_PREFERRED_FAMILY if CJK_PREFERRED_FAMILY in names else names[0]


def font_families() -> list[str]:
    """Family list for text that may mix Latin and CJK: ``["DejaVu Sans", <CJK family>]``."""
    return [LATIN_FAMILY, register_cjk_font()]


@contextmanager
def _figure_context() -> Iterator[list[str]]:
    """``rc_context`` that makes the Latin+CJK font list the default; yields that list."""
    families = font_families()
    with rc_context({"font.family": families, "axes.unicode_minus": False}):
        yield families


# --------------------------------------------------------------------------- output


#: Formats matplotlib writes that are not image files (raw pixel buffers) or need more than
#: this project installs (pgf: LaTeX).
NOT_IMAGE_FORMATS = ("pgf", "raw", "rgba")
#: The formats named first when a suffix is refused.
COMMON_FORMATS = ("png", "pdf", "svg")


def image_formats() -> list[str]:
    """The file formats :func:`save_figure` writes (by suffix): png, pdf, svg, jpg, ..."""
    others = set(FigureCanvasAgg.get_supported_filetypes()) - set(NOT_IMAGE_FORMATS)
    return [*COMMON_FORMATS, *sorted(others - set(COMMON_FORMATS))]


def image_format(path: str | Path) -> str:
    """The format ``path``'s suffix asks for (``map.pdf`` -> ``pdf``; no suffix: ``png``);
    an unknown suffix is a one-line :class:`UserError` listing the known ones."""
    suffix = Path(path).suffix
    if not suffix:
        return "png"
    formats = image_formats()
    if suffix[1:].lower() not in formats:
        raise UserError(
            f"cannot save a figure as {path}: unknown image format '{suffix}'; end the name in "
            + ", ".join(f".{name}" for name in formats)
        )
    return suffix[1:].lower()


def save_figure(fig: Figure, path: str | Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """Render ``fig`` at ``path`` in the format its suffix names (PNG without one; see
    :func:`image_format`), written atomically (parent folders are created; a write that
    fails is a one-line :class:`~seq2seq.errors.WriteError`); return the path."""
    path = Path(path)
    fmt = image_format(path)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    image = io.BytesIO()
    with _figure_context():
        canvas.print_figure(image, dpi=dpi, format=fmt)
    atomic_write_bytes(path, image.getvalue())
    return path


def figure_to_image_array(fig: Figure) -> np.ndarray:
    """Render ``fig`` with Agg and return its pixels as a ``(H, W, 3)`` ``uint8`` RGB array.

    Suitable for ``SummaryWriter.add_image(tag, img, step, dataformats="HWC")``.
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with _figure_context():
        canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    return np.ascontiguousarray(rgba[..., :3], dtype=np.uint8)


def _new_axes(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A constrained-layout figure on an Agg canvas with one axes (call in _figure_context)."""
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
    with _figure_context() as families:
        fig, ax = _new_axes(CHART_SIZE)
        ax.set_axis_off()
        ax.set_title(title, fontfamily=families)
        ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontfamily=families)
    return fig


# --------------------------------------------------------------------------- attention


def _labels_for(tokens: Sequence[str], size: int, axis: str) -> list[str]:
    """Tick labels for an attention axis of ``size`` positions.

    ``tokens`` may include the trailing ``<eos>`` (``len == size``) or leave it out
    (``len == size - 1`` and not already ending in ``<eos>``; ``<eos>`` is appended).
    """
    labels = [str(t) for t in tokens]
    if len(labels) == size:
        return labels
    if len(labels) == size - 1 and (not labels or labels[-1] != EOS):
        return [*labels, EOS]
    raise ValueError(
        f"attention has {size} {axis} positions but {len(labels)} {axis} tokens were given "
        f"(expected {size}, or {size - 1} without the final {EOS})"
    )


def _text_colour(rgba: tuple[float, float, float, float]) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba``."""
    luminance = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2]
    return "black" if luminance > 0.5 else "white"


def _grid(n: int) -> tuple[int, int]:
    """``(rows, cols)`` for ``n`` panels: 1x1, 1x2, 2x2, 2x3, 3x3, ..."""
    cols = math.ceil(math.sqrt(n))
    return math.ceil(n / cols), cols


#: Inches: the gap between a tick label and its panel, between panels, around the figure.
_TICK_PAD = 3.5 / 72
_GAP = 0.2
_EDGE = 0.08
#: The colour bar: its width, its gap to the panels, and room for its ticks and label.
_BAR_WIDTH, _BAR_PAD, _BAR_TEXT = 0.15, 0.2, 0.75
_ROTATION = 60  # degrees, the source tokens along the top
#: The ``gid`` of the token labels (see :func:`token_labels`).
SOURCE_LABEL, TARGET_LABEL = "source token", "target token"


@dataclass(frozen=True)
class _AttentionLayout:
    """Where everything of an attention figure goes, in inches, measured from the labels' own
    extents (no layout engine: constrained layout cost most of a heat map's drawing time).

    Panels share their axes: the source tokens label the first row's panels only, the target
    tokens the first column's, and each label is measured once.
    """

    left: float  # left edge of the first column
    labels_above: float  # how far the source tokens reach above the first row
    top: float  # from the figure's top edge down to the first row's top
    panel: tuple[float, float]  # (width, height) of one panel's cells
    step: tuple[float, float]  # (x, y) from one panel's origin to the next
    size: tuple[float, float]  # the figure

    @classmethod
    def measure(
        cls,
        fig: Figure,
        grid: tuple[int, int],
        cells: tuple[int, int, float],  # (T_t, T_s, inches per cell)
        labels: tuple[list[str], list[str]],  # (source, target)
        fonts: tuple[FontProperties, FontProperties],  # (ticks, panel titles)
        titles: tuple[bool, bool],  # (panel titles, a figure title)
    ) -> _AttentionLayout:
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]

        def extent(text: str, font: FontProperties) -> tuple[float, float]:
            width, height, _ = renderer.get_text_width_height_descent(text, font, ismath=False)
            return width / fig.dpi, height / fig.dpi

        rows, cols = grid
        t_t, t_s, cell = cells
        tick, title_font = fonts
        line = extent("lp", tick)[1]  # matplotlib gives every line at least this height
        src = [extent(label, tick) for label in labels[0]]
        angle = math.radians(_ROTATION)
        lean = max(w * math.sin(angle) + max(h, line) * math.cos(angle) for w, h in src)
        above = _TICK_PAD + lean
        beyond = src[-1][0] * math.cos(angle) - cell / 2  # the last label, past the panel
        left = _EDGE + _TICK_PAD + max(extent(label, tick)[0] for label in labels[1])
        title = extent("head", title_font)[1] + _TICK_PAD if titles[0] else 0.0
        top = _EDGE + (extent("Ag", title_font)[1] * 1.4 if titles[1] else 0.0) + above + title
        panel = (t_s * cell, t_t * cell)
        step = (panel[0] + _GAP, panel[1] + _GAP + title)
        panels_right = left + cols * step[0] - _GAP
        right = max(_BAR_PAD + _BAR_WIDTH + _BAR_TEXT, beyond + _EDGE)
        height = top + rows * step[1] - _GAP - title + _EDGE
        return cls(left, above, top, panel, step, (panels_right + right, height))

    def panel_box(self, row: int, col: int) -> list[float]:
        """``[left, bottom, width, height]`` of panel ``(row, col)``, in figure fractions."""
        x = self.left + col * self.step[0]
        y = self.size[1] - self.top - row * self.step[1] - self.panel[1]
        return self._fractions(x, y, *self.panel)

    def bar_box(self, rows: int) -> list[float]:
        """The colour bar beside the panels: 80% of their height, centred on them."""
        span = (rows - 1) * self.step[1] + self.panel[1]
        x = self.size[0] - _BAR_WIDTH - _BAR_TEXT
        y = self.size[1] - self.top - span + 0.1 * span
        return self._fractions(x, y, _BAR_WIDTH, 0.8 * span)

    def _fractions(self, x: float, y: float, width: float, height: float) -> list[float]:
        fig_w, fig_h = self.size
        return [x / fig_w, y / fig_h, width / fig_w, height / fig_h]


def _token_labels(ax: Axes, tokens: list[str], gid: str, font: FontProperties) -> None:
    """The tokens along a panel's top (``gid`` :data:`SOURCE_LABEL`, rotated) or left side
    (:data:`TARGET_LABEL`), one text per cell, placed by hand: matplotlib's tick machinery
    made each heat map several times slower to draw."""
    fig = ax.get_figure()
    assert fig is not None
    if gid == SOURCE_LABEL:
        lift = ScaledTranslation(0.0, _TICK_PAD, fig.dpi_scale_trans)
        place = {"rotation": _ROTATION, "ha": "left", "va": "bottom", "rotation_mode": "anchor"}
        for i, token in enumerate(tokens):
            top = ax.get_xaxis_transform() + lift
            ax.text(i, 1.0, token, transform=top, fontproperties=font, **place, gid=gid)
    else:
        shift = ScaledTranslation(-_TICK_PAD, 0.0, fig.dpi_scale_trans)
        place = {"ha": "right", "va": "center"}
        for j, token in enumerate(tokens):
            side = ax.get_yaxis_transform() + shift
            ax.text(0.0, j, token, transform=side, fontproperties=font, **place, gid=gid)


def token_labels(ax: Axes, gid: str) -> list[str]:
    """The token labels :func:`plot_attention` wrote on panel ``ax``: ``gid`` is
    :data:`SOURCE_LABEL` (the first row's) or :data:`TARGET_LABEL` (the first column's)."""
    return [text.get_text() for text in ax.texts if text.get_gid() == gid]


def plot_attention(
    weights: np.ndarray,
    src_tokens: Sequence[str],
    tgt_tokens: Sequence[str],
    *,
    head_labels: Sequence[str] | None = None,
    show_values: bool = False,
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Heat map of attention weights, one panel per head, one shared colour bar.

    ``weights`` has shape ``(T_t, T_s)`` (one head) or ``(H, T_t, T_s)``. Source tokens
    label the columns (along the top of the first row of panels), target tokens the rows (top
    to bottom, left of the first column). Either token list may include its final ``<eos>``
    or omit it (it is then added as a label). The colour scale is fixed to ``[0, 1]`` so
    panels and figures are comparable. ``head_labels`` (one per head) title the panels; by
    default they are ``"head 1"``, ... when ``H > 1``. ``show_values`` writes each weight in
    its cell, black or white depending on the cell colour. ``title`` goes above all panels.
    If ``path`` is given the figure is written there (see :func:`save_figure`: the format its
    suffix names, parent folders created).

    Raises ``ValueError`` if the shape does not match the token counts or ``head_labels``.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 2:
        w = w[None]
    if w.ndim != 3 or 0 in w.shape:
        raise ValueError(
            f"attention weights must have shape (T_t, T_s) or (heads, T_t, T_s) with no empty "
            f"axis, got {np.shape(weights)}"
        )
    n_heads, t_t, t_s = w.shape
    x_labels = _labels_for(src_tokens, t_s, "source")
    y_labels = _labels_for(tgt_tokens, t_t, "target")
    if head_labels is None:
        panel_titles = [f"head {h + 1}" for h in range(n_heads)] if n_heads > 1 else [""]
    else:
        panel_titles = [str(label) for label in head_labels]
        if len(panel_titles) != n_heads:
            raise ValueError(f"got {len(panel_titles)} head labels for {n_heads} heads")

    rows, cols = _grid(n_heads)
    longest = max(t_s, t_t)
    cell = min(0.45, max(0.18, 9.0 / (longest * cols)))  # inches per cell, panel <= ~9 in
    tick_size = 10 if longest <= 20 else 8 if longest <= 35 else 6
    norm = Normalize(vmin=0.0, vmax=1.0)

    with _figure_context() as families:
        fonts = (FontProperties(family=families, size=tick_size), FontProperties(family=families))
        fig = Figure()
        FigureCanvasAgg(fig)
        layout = _AttentionLayout.measure(
            fig,
            (rows, cols),
            (t_t, t_s, cell),
            (x_labels, y_labels),
            fonts,
            (any(panel_titles), bool(title)),
        )
        fig.set_size_inches(layout.size)
        image = None
        for h in range(n_heads):
            row, col = divmod(h, cols)
            ax = fig.add_axes(layout.panel_box(row, col))
            image = ax.imshow(w[h], cmap=ATTENTION_CMAP, norm=norm, aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                _token_labels(ax, x_labels, SOURCE_LABEL, fonts[0])
            if col == 0:
                _token_labels(ax, y_labels, TARGET_LABEL, fonts[0])
            if panel_titles[h]:
                # Above the first row's tick labels; a fixed y keeps matplotlib from measuring
                # every label again to place it.
                lift = layout.labels_above if row == 0 else 0.0
                y = 1.0 + (lift + _TICK_PAD) / layout.panel[1]
                ax.set_title(panel_titles[h], fontproperties=fonts[1], y=y, pad=0.0)
            if show_values:
                cmap = image.get_cmap()
                font = {"fontfamily": families, "fontsize": max(5, tick_size - 2)}
                for (j, i), value in np.ndenumerate(w[h]):
                    colour = _text_colour(cmap(norm(value)))
                    ax.text(i, j, f"{value:.2f}", ha="center", va="center", color=colour, **font)
        bar = fig.add_axes(layout.bar_box(rows))
        fig.colorbar(image, cax=bar, label="attention weight")
        if title:
            fig.suptitle(title, fontfamily=families, y=1.0 - _EDGE / layout.size[1], va="top")
    if path is not None:
        save_figure(fig, path)
    return fig


# --------------------------------------------------------------------------- line charts


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

    with _figure_context() as families:
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
    with _figure_context() as families:
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
