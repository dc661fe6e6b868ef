"""The font the page draws Chinese with: the Simplified Chinese face of the package's Noto
Sans CJK collection, cut down to the characters the page can show.

The whole collection is 19 MB; the subset of a run's vocabulary and test sentences is a few
hundred KB at most, made once at start (fontTools, which matplotlib already brings), held in
memory and served as ``/cjk.otf``. Characters outside it (an unknown word typed into the box)
fall back to the system's fonts.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

from seq2seq.fonts import CJK_PREFERRED_FAMILY, cjk_font_path

#: Always in the subset: printable ASCII and the CJK punctuation a corpus uses.
BASE_CHARACTERS = "".join(map(chr, range(0x20, 0x7F))) + "，。？！、：；“”‘’（）《》…—"


def face_index(collection: TTCollection, family: str = CJK_PREFERRED_FAMILY) -> int:
    """The index of ``family`` in the collection (0 when it is not there)."""
    for index, font in enumerate(collection.fonts):
        if font["name"].getDebugName(1) == family:
            return index
    return 0


def cjk_subset(characters: Iterable[str]) -> bytes:
    """An OpenType font (bytes) with the glyphs of ``characters`` and :data:`BASE_CHARACTERS`,
    its layout features and names kept (so the browser reports it as Noto Sans CJK SC)."""
    path = cjk_font_path()
    font = TTFont(path, fontNumber=face_index(TTCollection(path, lazy=True)), lazy=True)
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=BASE_CHARACTERS + "".join(set("".join(characters))))
    subsetter.subset(font)
    buffer = io.BytesIO()
    font.save(buffer)
    return buffer.getvalue()
