"""The attention heat map: one panel per head, the tokens on both axes, one colour bar.

:func:`plot_attention` takes weights ``(T_t, T_s)`` or ``(H, T_t, T_s)`` with the source and
target tokens, and lays the figure out by hand from the labels' own extents
(:class:`_AttentionLayout`); :func:`token_labels` reads the labels back. Text is drawn with
the Latin + CJK fonts of :func:`~seq2seq.viz.figures.figure_context`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.transforms import ScaledTranslation

from seq2seq.viz.figures import figure_context, save_figure

EOS = "<eos>"
ATTENTION_CMAP = "viridis"


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

    with figure_context() as families:
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
