"""What every figure shares: its fonts, and its way out (a file, or an image array).

Chinese tokens need a CJK font. :func:`register_cjk_font` adds the Noto Sans CJK
collection shipped by the ``noto-cjk-sans-otc`` package to matplotlib's font manager (the
only global change the figures make; it is idempotent), and every text object is drawn
with the family list ``["DejaVu Sans", <CJK family>]``: Latin glyphs come from DejaVu Sans
and anything it lacks falls back to the CJK font (matplotlib >= 3.6 per-glyph fallback).
``rcParams`` change only inside :func:`figure_context` blocks. Nothing is downloaded.

A figure is rendered through :class:`~matplotlib.backends.backend_agg.FigureCanvasAgg`:
:func:`save_figure` writes it in the format its file name asks for, :func:`figure_to_image_array`
returns its pixels.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import fontManager

from seq2seq.errors import UserError
from seq2seq.files import atomic_write_bytes
from seq2seq.fonts import CJK_PREFERRED_FAMILY, cjk_font_path

LATIN_FAMILY = "DejaVu Sans"
DEFAULT_DPI = 150


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
def figure_context() -> Iterator[list[str]]:
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
    with figure_context():
        canvas.print_figure(image, dpi=dpi, format=fmt)
    atomic_write_bytes(path, image.getvalue())
    return path


def figure_to_image_array(fig: Figure) -> np.ndarray:
    """Render ``fig`` with Agg and return its pixels as a ``(H, W, 3)`` ``uint8`` RGB array.

    Suitable for ``SummaryWriter.add_image(tag, img, step, dataformats="HWC")``.
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with figure_context():
        canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    return np.ascontiguousarray(rgba[..., :3], dtype=np.uint8)
