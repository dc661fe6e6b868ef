"""Where the CJK font is: the Noto Sans CJK collection of the ``noto-cjk-sans-otc`` package.

One owner for the figures (:mod:`seq2seq.viz.figures`, which registers it with matplotlib) and
the attention explorer's page (:mod:`seq2seq.explorer.font`, which serves a subset of it), so
Chinese is drawn with the same face everywhere and nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

from seq2seq.errors import UserError

CJK_PACKAGE = "noto_cjk_sans_otc"
CJK_PREFERRED_FAMILY = "Noto Sans CJK SC"  # the collection's Simplified Chinese face


@functools.cache
def cjk_font_path() -> Path:
    """The ``.ttc`` (or ``.otf``) file next to the ``noto_cjk_sans_otc`` package's ``__init__``.

    Raises :class:`~seq2seq.errors.UserError` if the package or its font file is missing.
    """
    try:
        package = importlib.import_module(CJK_PACKAGE)
    except ImportError as err:
        raise UserError(
            "the CJK font package is missing: install it with `pip install noto-cjk-sans-otc`"
        ) from err
    folder = Path(package.__file__).resolve().parent
    fonts = sorted(folder.glob("*.ttc")) + sorted(folder.glob("*.otf"))
    if not fonts:
        raise UserError(f"no .ttc/.otf font file found in {folder}; reinstall noto-cjk-sans-otc")
    return fonts[0]
