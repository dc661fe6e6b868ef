"""Parallel corpora on disk: one pair per line, ``zh<TAB>en[<TAB>alignment]``, plain or
compressed (``.xz``, ``.gz``: read directly, same line-numbered errors).

An alignment is written in Pharaoh format: space-separated links, 0-based (source index
``i``, target index ``j``): ``i-j`` is a *sure* link, ``i?j`` a *possible* one (a link a
linguist would accept but not require, e.g. English "the" to its noun); unaligned tokens
are left out. A file with only ``i-j`` links reads as all sure. Och & Ney's AER scores
attention against both sets (sure S, possible P = S plus the ``i?j`` links).

Which pairs have a gold alignment is decided per file: an alignment column that is empty
(or absent) on every line — e.g. the trailing TAB of a two-column corpus — means the file has
no alignments (``Pair.alignment`` is ``None`` throughout, AER is n/a). In a file that has
alignments, an empty column is a pair whose words have no links (``()``), and a line without
the column a pair whose alignment is unknown (``None``; AER then needs every pair aligned).

What the text is: UTF-8 (other bytes are a ``FILE:LINE`` error); a line ends at ``\\n`` or
``\\r\\n`` only — a carriage return inside a line is a ``FILE:LINE`` error, and the other
characters :meth:`str.splitlines` would break at (U+2028, U+0085, form feed, ...) are text:
whitespace between words. Byte-order marks (U+FEFF, at the start of a file or where files
with one were concatenated) are not part of any word and are dropped. Translate's stdin is
read by the same rules (:func:`decode_utf8`, :func:`text_lines`).

A corpus holds each distinct word (:func:`sys.intern`) and each distinct link once, so the
default corpus' 64,000 pairs take 116 MiB of a process' memory instead of 464.
"""

from __future__ import annotations

import gzip
import lzma
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from seq2seq.errors import UserError
from seq2seq.files import atomic_write_text

Alignment = tuple[tuple[int, int], ...]
SPLITS = ("train", "valid", "test")


class RawTarget(NamedTuple):
    """The target sentence as the corpus file wrote it, and how :func:`tokenize_tgt` changed
    it: real-data BLEU scores detokenized output against this text (sacrebleu's 13a), so
    the reference is the original sentence, not re-joined tokens."""

    text: str
    lowercased: bool = False
    split_punct: bool = False


@dataclass(frozen=True)
class Pair:
    """One sentence pair, already tokenized.

    ``alignment`` holds the gold *sure* ``(src_index, tgt_index)`` links, or ``None`` when
    unknown; ``possible`` the links that are possible only (``i?j``), never also sure.
    ``tgt_raw`` is the untokenized target (kept for real corpora, see
    :attr:`TsvFormat.keep_raw`); it is provenance, not part of the pair's identity, so it
    takes no part in equality.
    """

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    alignment: Alignment | None = None
    possible: Alignment = ()
    tgt_raw: RawTarget | None = field(default=None, compare=False)

    @property
    def possible_links(self) -> Alignment:
        """The possible set P of AER: sure and possible-only links, sorted (P ⊇ S)."""
        return tuple(sorted({*(self.alignment or ()), *self.possible}))


class GoldLinks(NamedTuple):
    """A parsed alignment: sure links (``i-j``) and possible-only links (``i?j``)."""

    sure: Alignment
    possible: Alignment = ()


@dataclass(frozen=True)
class TsvFormat:
    """How to read a TSV corpus.

    Columns are 0-based. ``alignment_column=None`` ignores alignments; extra columns
    (e.g. Tatoeba's attribution) are allowed. ``char_level_src`` splits unsegmented
    Chinese into characters instead of on spaces. ``keep_raw`` keeps each untokenized
    target (:class:`RawTarget`) for paper-style BLEU; the synthetic corpus, whose
    references are token sequences by construction, goes without.
    """

    src_column: int = 0
    tgt_column: int = 1
    alignment_column: int | None = 2
    char_level_src: bool = False
    lowercase_tgt: bool = False
    split_tgt_punct: bool = False
    keep_raw: bool = False


def format_alignment(
    alignment: Iterable[tuple[int, int]], possible: Iterable[tuple[int, int]] = ()
) -> str:
    """``[(0, 0), (2, 1)]``, ``[(1, 1)]`` -> ``"0-0 2-1 1?1"``: the sure links in their
    order, then the possible ones not already sure."""
    sure = list(alignment)
    known = set(sure)
    links = [f"{i}-{j}" for i, j in sure]
    links += [f"{i}?{j}" for i, j in possible if (i, j) not in known]
    return " ".join(links)


_LINK = re.compile(r"([0-9]+)([-?])([0-9]+)")


def parse_alignment(text: str, src_len: int, tgt_len: int) -> GoldLinks:
    """Parse Pharaoh links (``i-j`` sure, ``i?j`` possible) and check every index is inside
    the sentence pair; a link given as both counts as sure.

    Raises ``ValueError`` with a short reason (the caller adds file and line).
    """
    sure: list[tuple[int, int]] = []
    possible: list[tuple[int, int]] = []
    for link in text.split():
        match = _LINK.fullmatch(link)
        if match is None:
            raise ValueError(
                f"bad alignment link {link!r} (expected i-j or i?j with 0-based integers)"
            )
        i, j = int(match[1]), int(match[3])
        if i >= src_len or j >= tgt_len:
            raise ValueError(
                f"alignment link {link!r} is out of range for {src_len} source "
                f"and {tgt_len} target tokens"
            )
        (sure if match[2] == "-" else possible).append((i, j))
    sure_set = set(sure)
    return GoldLinks(tuple(sure), tuple(link for link in possible if link not in sure_set))


def tokenize_src(text: str, char_level: bool) -> tuple[str, ...]:
    """Split Chinese on spaces, or into characters (spaces dropped) when ``char_level``."""
    if char_level:
        return tuple(map(sys.intern, "".join(text.split())))
    return tuple(map(sys.intern, text.split()))


def join_chinese(tokens: Sequence[str], char_level: bool) -> str:
    """Chinese tokens joined as a corpus writes them: without spaces when the corpus is read
    per character, with them when it is segmented (the inverse of :func:`tokenize_src`)."""
    return ("" if char_level else " ").join(tokens)


_WORD_OR_PUNCT = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def tokenize_tgt(text: str, lowercase: bool = False, split_punct: bool = False) -> tuple[str, ...]:
    """Split English on spaces; optionally lowercase, detach punctuation (``Hi!`` -> ``Hi !``)."""
    if lowercase:
        text = text.lower()
    if split_punct:
        return tuple(map(sys.intern, _WORD_OR_PUNCT.findall(text)))
    return tuple(map(sys.intern, text.split()))


BYTE_ORDER_MARK = "\ufeff"


def decode_utf8(data: bytes, source: str | Path, advice: str = "re-save the file as UTF-8") -> str:
    """``data`` as UTF-8 text, byte-order marks dropped; bytes that are not UTF-8 are a
    :class:`UserError` naming ``source`` and the line (``FILE:LINE: not valid UTF-8``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_no = data[: err.start].count(b"\n") + 1
        raise UserError(f"{source}:{line_no}: not valid UTF-8; {advice}") from None
    return text.replace(BYTE_ORDER_MARK, "")


def text_lines(text: str, source: str | Path) -> list[str]:
    """The lines of ``text``, without their ends: only ``\\n`` and ``\\r\\n`` end a line
    (line numbers count them); a carriage return anywhere else is a :class:`UserError`
    naming ``source`` and the line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the end of the last line, not an empty line after it
    for line_no, line in enumerate(lines, start=1):
        line = lines[line_no - 1] = line.removesuffix("\r")
        if "\r" in line:
            raise UserError(
                f"{source}:{line_no}: a carriage return (\\r) inside the line; lines end with "
                "\\n or \\r\\n: convert old Mac line endings (e.g. tr '\\r' '\\n')"
            )
    return lines


def read_text(path: str | Path) -> str:
    """A UTF-8 text file, decompressed first when its name ends in ``.xz`` or ``.gz``, with
    byte-order marks dropped.

    Raises :class:`UserError` for a missing file, a damaged archive, or non-UTF-8 bytes
    (naming the line, counted in the decompressed text).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"corpus file {path} does not exist; check data.dir or data.path")
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix.lower())
    if opener is None:
        data = path.read_bytes()
    else:
        try:
            with opener(path, "rb") as stream:
                data = stream.read()
        except (lzma.LZMAError, OSError, EOFError) as err:
            kind = path.suffix.lower()[1:]
            raise UserError(
                f"{path}: not a readable {kind} file ({err}); re-download or recompress it"
            ) from None
    return decode_utf8(data, path)


def read_tsv(path: str | Path, fmt: TsvFormat = TsvFormat()) -> list[Pair]:
    """Read a parallel corpus (plain, ``.xz`` or ``.gz``); blank lines are skipped.

    Raises :class:`UserError` naming the file and line for a missing file, non-UTF-8
    bytes, a carriage return inside a line, a missing column, an empty sentence or a
    malformed alignment. An alignment column empty on every line means no alignments (see
    the module's docstring).
    """
    path = Path(path)
    text = read_text(path)
    needed = max(fmt.src_column, fmt.tgt_column)
    pairs = []
    links_seen: dict[tuple[int, int], tuple[int, int]] = {}  # one tuple per distinct link
    any_links = False  # does any line's alignment column hold something?
    for line_no, line in enumerate(text_lines(text, path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= needed:
            raise UserError(
                f"{path}:{line_no}: expected at least {needed + 1} tab-separated columns, "
                f"found {len(fields)}; separate source and target with a TAB"
            )
        src = tokenize_src(fields[fmt.src_column], fmt.char_level_src)
        tgt = tokenize_tgt(fields[fmt.tgt_column], fmt.lowercase_tgt, fmt.split_tgt_punct)
        if not src or not tgt:
            raise UserError(f"{path}:{line_no}: empty source or target sentence")
        raw = None
        if fmt.keep_raw:
            raw = RawTarget(fields[fmt.tgt_column].strip(), fmt.lowercase_tgt, fmt.split_tgt_punct)
        sure, possible = None, ()
        if fmt.alignment_column is not None and len(fields) > fmt.alignment_column:
            links = fields[fmt.alignment_column]
            any_links = any_links or bool(links.strip())
            try:
                sure, possible = parse_alignment(links, len(src), len(tgt))
            except ValueError as err:
                raise UserError(f"{path}:{line_no}: {err}") from None
            sure = tuple(map(links_seen.setdefault, sure, sure))
            possible = tuple(map(links_seen.setdefault, possible, possible))
        pairs.append(Pair(src, tgt, sure, possible, tgt_raw=raw))
    if not any_links:  # an alignment column empty on every line: the file has no alignments
        pairs = [replace(p, alignment=None, possible=()) for p in pairs]
    return pairs


def write_tsv(path: str | Path, pairs: Sequence[Pair]) -> None:
    """Write ``zh<TAB>en<TAB>alignment`` lines (UTF-8, ``\\n`` endings) atomically."""
    lines = []
    for pair in pairs:
        fields = [" ".join(pair.src), " ".join(pair.tgt)]
        if pair.alignment is not None:
            fields.append(format_alignment(pair.alignment, pair.possible))
        lines.append("\t".join(fields) + "\n")
    atomic_write_text(path, "".join(lines))
