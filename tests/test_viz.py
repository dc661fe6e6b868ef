"""Tests for seq2seq.viz: CJK font registration, attention heat maps, line charts, files in
the format their name asks for."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.font_manager import fontManager
from matplotlib.transforms import Bbox

from seq2seq.errors import UserError
from seq2seq.viz.charts import plot_bars, plot_grouped_bars, plot_lines, plot_message
from seq2seq.viz.figures import (
    figure_to_image_array,
    font_families,
    register_cjk_font,
    save_figure,
)
from seq2seq.viz.heatmap import SOURCE_LABEL, TARGET_LABEL, plot_attention, token_labels

SRC = ["我", "爱", "中国"]
TGT = ["I", "love", "China", "<eos>"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def random_attention(*shape: int, seed: int = 0) -> np.ndarray:
    """Row-stochastic weights of ``shape`` (last axis sums to 1)."""
    w = np.random.default_rng(seed).random(shape) ** 3
    return w / w.sum(axis=-1, keepdims=True)


def font_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def render_and_collect(make_figure) -> tuple[Figure, list[str]]:
    """Build a figure and draw it (glyph warnings happen at draw time); return warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = make_figure()
        figure_to_image_array(fig)
    return fig, font_warnings(caught)


def assert_png(path: Path) -> None:
    assert path.is_file()
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_register_cjk_font_is_idempotent() -> None:
    family = register_cjk_font()
    assert "CJK" in family
    entries = len(fontManager.ttflist)
    assert register_cjk_font() == family
    assert len(fontManager.ttflist) == entries
    assert font_families() == ["DejaVu Sans", family]


def test_chinese_tokens_render_without_missing_glyphs() -> None:
    w = random_attention(4, 4)
    _, missing = render_and_collect(lambda: plot_attention(w, SRC, TGT, title="我 爱 中国"))
    assert missing == []


def test_mixed_latin_and_cjk_labels_render_without_missing_glyphs() -> None:
    src = ["我", "在", "3月", "去", "了", "New", "York", "的", "<unk>", "。"]
    tgt = ["In", "March", ",", "I", "went", "to", "New", "York", "’s", "<unk>", "."]
    w = random_attention(2, len(tgt) + 1, len(src) + 1)
    _, missing = render_and_collect(
        lambda: plot_attention(
            w,
            src,
            tgt,
            head_labels=["头 1 (head 1)", "头 2 (head 2)"],
            show_values=True,
            title="混合 mixed: 我在3月去了New York",
        )
    )
    assert missing == []


def test_drawing_outside_the_figure_context_has_no_missing_glyphs() -> None:
    fig = plot_attention(random_attention(4, 4), SRC, TGT)
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        _, missing = render_and_collect(lambda: fig)
    assert missing == []


def test_one_head_figure_saves_png(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "one.png"  # parents are created
    fig = plot_attention(random_attention(4, 4), SRC, TGT, show_values=True, path=path)
    assert isinstance(fig, Figure)
    assert_png(path)
    assert len(fig.axes) == 2  # the heat map and its colour bar


def test_four_head_figure_saves_png_with_one_colour_bar(tmp_path: Path) -> None:
    path = tmp_path / "four.png"
    weights = random_attention(4, 4, 4)
    fig = plot_attention(weights, SRC, TGT, head_labels=list("abcd"), path=path)
    assert_png(path)
    assert len(fig.axes) == 5  # four heads + one shared colour bar
    titles = [ax.get_title() for ax in fig.axes[:4]]
    assert titles == ["a", "b", "c", "d"]


def test_three_heads_hide_the_spare_panel(tmp_path: Path) -> None:
    fig = plot_attention(random_attention(3, 4, 4), SRC, TGT, path=tmp_path / "three.png")
    visible = [ax for ax in fig.axes if ax.axison]
    assert len(visible) == 4  # 3 heads + colour bar; the 4th grid cell is hidden


def test_eos_labels_may_be_given_or_omitted() -> None:
    w = random_attention(4, 4)
    for src, tgt in [(SRC, TGT), ([*SRC, "<eos>"], TGT[:-1]), (SRC, TGT[:-1])]:
        fig = plot_attention(w, src, tgt)
        ax = fig.axes[0]
        assert token_labels(ax, SOURCE_LABEL) == [*SRC, "<eos>"]
        assert token_labels(ax, TARGET_LABEL) == TGT


LONG_SRC = [
    "他",
    "爱",
    "的",
    "护士",
    "明晚",
    "会",
    "在",
    "超市",
    "需要",
    "这",
    "本",
    "新",
    "的",
    "杂志",
    "，",
    "这",
    "个",
    "老",
    "的",
    "医生",
    "昨天",
    "在",
    "中国",
]
LONG_TGT = [
    "the",
    "nurse",
    "whom",
    "he",
    "loves",
    "will",
    "need",
    "this",
    "new",
    "magazine",
    "at",
    "the",
    "supermarket",
]


@pytest.mark.parametrize(
    ("heads", "src", "tgt", "title"),
    [
        (1, SRC, TGT[:-1], None),
        (3, SRC, TGT[:-1], "我 爱 中国"),
        (4, LONG_SRC, LONG_TGT, "a long sentence"),
        (2, ["extraordinarily-long-token", "b"], ["x", "an-even-longer-target-token"], None),
    ],
)
def test_the_heat_map_layout_keeps_every_text_inside_the_figure_and_off_the_cells(
    heads: int, src: list[str], tgt: list[str], title: str | None
) -> None:
    """The layout is computed from the labels' measured sizes (no layout engine): every label,
    title and the colour bar lie inside the figure, source tokens above the first row, target
    tokens left of the first column, panel titles above the tokens, nothing over any cells."""
    weights = random_attention(heads, len(tgt) + 1, len(src) + 1)
    fig = plot_attention(weights, src, tgt, title=title, show_values=heads == 3)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    panels, bar = fig.axes[:heads], fig.axes[heads]
    cells = [ax.get_window_extent(renderer) for ax in panels]

    def box(artist) -> Bbox:
        return artist.get_window_extent(renderer)

    def inside(extent: Bbox) -> bool:
        frame = fig.bbox.padded(0.5)
        return (
            frame.x0 <= extent.x0
            and extent.x1 <= frame.x1
            and frame.y0 <= extent.y0 <= extent.y1 <= frame.y1
        )

    labels = [t for ax in panels for t in ax.texts if t.get_gid() in (SOURCE_LABEL, TARGET_LABEL)]
    titles = [ax.title for ax in panels if ax.get_title()] + ([fig._suptitle] if title else [])
    words = [*labels, *titles, bar.yaxis.label, *bar.get_yticklabels()]
    rows, cols = -(-heads // math.ceil(math.sqrt(heads))), math.ceil(math.sqrt(heads))
    # The first row's panels carry the source tokens, the first column's the target tokens.
    assert len(labels) == (len(src) + 1) * min(cols, heads) + (len(tgt) + 1) * rows
    for text in words:
        assert inside(box(text)), f"{text.get_text()!r} reaches outside the figure"
        assert not any(box(text).overlaps(c) for c in cells), f"{text.get_text()!r} on the cells"
    for text in labels:
        if text.get_gid() == SOURCE_LABEL:
            assert box(text).y0 >= cells[0].y1 - 0.5
            assert not panels[0].get_title() or box(panels[0].title).y0 >= box(text).y1 - 1.0
        else:
            assert box(text).x1 <= cells[0].x0 + 0.5
    assert inside(box(bar)) and box(bar).x0 > max(c.x1 for c in cells)


@pytest.mark.parametrize(
    ("weights", "src", "tgt", "match"),
    [
        (np.zeros((4, 6)), SRC, TGT, "source"),
        (np.zeros((6, 4)), SRC, TGT, "target"),
        (np.zeros((2, 5, 4)), SRC, TGT, "target"),
        (np.zeros(4), SRC, TGT, "shape"),
        (np.zeros((1, 2, 4, 4)), SRC, TGT, "shape"),
        (np.zeros((0, 4)), SRC, TGT, "shape"),
    ],
)
def test_shape_mismatch_raises(weights: np.ndarray, src: list[str], tgt: list[str], match: str):
    with pytest.raises(ValueError, match=match):
        plot_attention(weights, src, tgt)


def test_head_label_count_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="head labels"):
        plot_attention(random_attention(2, 4, 4), SRC, TGT, head_labels=["only one"])


def test_figure_to_image_array_is_uint8_rgb() -> None:
    fig = plot_attention(random_attention(4, 4), SRC, TGT)
    image = figure_to_image_array(fig)
    assert image.dtype == np.uint8
    assert image.ndim == 3
    assert image.shape[2] == 3
    width, height = fig.get_size_inches() * fig.dpi
    assert abs(image.shape[0] - height) < 1 and abs(image.shape[1] - width) < 1  # whole pixels
    assert image.min() < 100 < image.max()  # not blank


def test_value_text_is_readable_on_dark_and_light_cells() -> None:
    w = np.array([[1.0, 0.0], [0.0, 1.0]])
    fig = plot_attention(w, ["甲"], ["a"], show_values=True)
    colours = {t.get_text(): t.get_color() for t in fig.axes[0].texts if t.get_gid() is None}
    assert colours == {"1.00": "black", "0.00": "white"}  # viridis: yellow high, purple low


def test_plot_lines_categorical_with_error_bars(tmp_path: Path) -> None:
    path = tmp_path / "bleu_by_length.png"
    series = {
        "none": [("1-10", 12.0), ("41+", 1.0)],
        "bahdanau": [("1-10", (25.0, 1.5)), ("11-20", (20.0, 2.0)), ("41+", (9.0, 1.0))],
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = plot_lines(
            series, xlabel="源句长度 source length", ylabel="BLEU", title="BLEU", path=path
        )
    assert font_warnings(caught) == []
    assert_png(path)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1-10", "11-20", "41+"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["none", "bahdanau"]
    assert ax.get_xlabel() == "源句长度 source length"


def test_plot_lines_explicit_category_order_and_numeric_steps(tmp_path: Path) -> None:
    fig = plot_lines({"a": [("11-20", 1.0), ("1-10", 2.0)]}, categories=["1-10", "11-20"])
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [0, 1]
    assert list(line.get_ydata()) == [2.0, 1.0]

    steps = {"luong": [(100, 4.0), (200, 3.5), (300, 3.2)], "none": [(100, 4.5), (300, 4.0)]}
    fig = plot_lines(steps, xlabel="step", ylabel="val loss", logy=True, path=tmp_path / "l.png")
    assert fig.axes[0].get_yscale() == "log"
    assert_png(tmp_path / "l.png")


def test_plot_lines_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        plot_lines({})
    with pytest.raises(ValueError, match="mix"):
        plot_lines({"a": [("1-10", 1.0), (20, 2.0)]})
    with pytest.raises(ValueError):
        plot_lines({"a": [(1, 2.0, 3.0)]})
    with pytest.raises(ValueError, match="categories"):
        plot_lines({"a": [("x", 1.0)]}, categories=["y"])


def test_save_figure_creates_parents(tmp_path: Path) -> None:
    fig = plot_lines({"a": [(0, 1.0), (1, 2.0)]})
    out = save_figure(fig, tmp_path / "a" / "b.png")
    assert_png(out)


def test_global_rc_params_are_left_alone(tmp_path: Path) -> None:
    before = list(matplotlib.rcParams["font.family"])
    plot_attention(random_attention(4, 4), SRC, TGT, path=tmp_path / "x.png")
    plot_lines({"a": [(0, 1.0)]}, path=tmp_path / "y.png")
    assert list(matplotlib.rcParams["font.family"]) == before


def test_plot_bars_writes_means_and_dots_on_some_bars(tmp_path: Path) -> None:
    fig = plot_bars(
        {"additive": (0.41, 0.02), "multihead": (0.35, 0.0)},
        dots={"multihead": (0.2, 0.01)},
        labels=("head average", "best head"),
        ylabel="AER",
        ylim=(0.0, 1.05),
    )
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["additive", "multihead"]
    assert [p.get_height() for p in ax.patches] == [0.41, 0.35]
    assert {t.get_text() for t in ax.texts} >= {"0.410", "0.350"}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["head average", "best head"]
    assert ax.get_ylim() == (0.0, 1.05)
    assert_png(save_figure(fig, tmp_path / "bars.png"))
    with pytest.raises(ValueError):
        plot_bars({})


def test_grouped_bars_keep_each_bar_name_at_one_offset_in_every_group(tmp_path: Path) -> None:
    fig = plot_grouped_bars(
        {"none": {"b": (0.6, 0.1)}, "additive": {"a": (0.1, 0.0), "b": (0.2, 0.05)}},
        ylabel="AER",
    )
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "additive"]
    # the names in the groups' merged order: additive puts a before b
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    centres = [(p.get_x() + p.get_width() / 2, p.get_height()) for p in ax.patches]
    a_additive, b_none, b_additive = centres  # drawn name by name: a's bars, then b's
    assert b_additive[0] - 1 == pytest.approx(b_none[0])  # b at the same offset in each group
    assert a_additive[0] < b_additive[0] and a_additive[1] == 0.1
    assert_png(save_figure(fig, tmp_path / "grouped.png"))
    with pytest.raises(ValueError):
        plot_grouped_bars({"none": {}})


def test_plot_message_says_why_there_is_nothing(tmp_path: Path) -> None:
    fig = plot_message("no AER: no gold alignments", title="AER")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["no AER: no gold alignments"]
    assert ax.get_title() == "AER" and not ax.axison
    assert_png(save_figure(fig, tmp_path / "m.png"))


@pytest.mark.parametrize(
    ("name", "magic"),
    [("map.pdf", b"%PDF"), ("map.svg", b"<?xml"), ("map.PNG", PNG_MAGIC), ("map", PNG_MAGIC),
     ("map.jpg", b"\xff\xd8\xff")],
)  # fmt: skip
def test_the_suffix_chooses_the_image_format(tmp_path: Path, name: str, magic: bytes) -> None:
    fig = plot_attention(random_attention(4, 4), SRC, TGT)
    save_figure(fig, tmp_path / name)
    assert (tmp_path / name).read_bytes().startswith(magic)


@pytest.mark.parametrize("name", ["map.docx", "map.pgf", "map.rgba", "map.png.bak"])
def test_an_unknown_image_suffix_is_one_line_and_writes_nothing(tmp_path: Path, name) -> None:
    fig = plot_lines({"a": [(0, 1.0), (1, 2.0)]})
    with pytest.raises(UserError) as caught:
        save_figure(fig, tmp_path / name)
    suffix = Path(name).suffix
    assert str(caught.value).startswith(
        f"cannot save a figure as {tmp_path / name}: unknown image format '{suffix}'; "
        "end the name in .png, .pdf, .svg"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_figure_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "map.png").mkdir()
    fig = plot_lines({"a": [(0, 1.0), (1, 2.0)]})
    with pytest.raises(UserError, match=r"map\.png: it is a folder; give a file name"):
        save_figure(fig, tmp_path / "map.png")
