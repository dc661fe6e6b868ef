"""Where a comparison goes and writing it there: tables, figures and TensorBoard.

Every text file and figure is written atomically (:mod:`seq2seq.files`), so an interrupted
comparison never leaves half a table behind, and a place that cannot be written is one line;
no run folder is ever written to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from seq2seq.analysis.compare.aggregate import Comparison
from seq2seq.analysis.compare.figures import make_figures
from seq2seq.analysis.compare.render import render_csv, render_markdown, to_json
from seq2seq.analysis.compare.runs import is_run_dir
from seq2seq.errors import UserError
from seq2seq.files import atomic_write_text, write_json, writing
from seq2seq.training.tblog import RunLogger
from seq2seq.viz.figures import save_figure

MARKDOWN_FILE = "comparison.md"
CSV_FILE = "comparison.csv"
JSON_FILE = "comparison.json"
TB_FOLDER = "tb"
TB_PREFIX = "comparison"


def resolve_out_dir(paths: Sequence[str | Path], out: str | Path | None) -> Path:
    """Where the outputs go: ``out``, or the single sweep folder given.

    Raises :class:`UserError` when ``out`` is needed but missing, or when the output
    folder is a run folder or a file (nothing of a run is ever overwritten).
    """
    if out is not None:
        target = Path(out)
    elif len(paths) == 1 and Path(paths[0]).is_dir() and not is_run_dir(Path(paths[0])):
        target = Path(paths[0])
    else:
        raise UserError(
            "--out DIR is required unless exactly one sweep folder is given "
            "(e.g. --out comparisons/attention)"
        )
    if target.exists() and not target.is_dir():
        raise UserError(f"--out {target} is a file; give a folder")
    for folder in (target, *target.resolve().parents):
        if is_run_dir(folder):
            raise UserError(
                f"{target} is inside the run folder {folder}; write the comparison elsewhere "
                "with --out"
            )
    return target


def _remove_previous_event_file(out: Path) -> None:
    """Delete the TensorBoard event file a previous comparison into ``out`` wrote."""
    try:
        previous = json.loads((out / JSON_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    name = previous.get("tensorboard_event_file") if isinstance(previous, dict) else None
    if isinstance(name, str) and name.startswith("events.out.tfevents.") and "/" not in name:
        (out / TB_FOLDER / name).unlink(missing_ok=True)


def write_tensorboard(out: Path, figures: Mapping[str, Figure], markdown: str) -> str | None:
    """Figures and the table into ``out/tb``; returns the new event file's name.

    A previous comparison's event file there is removed, and the writer purges from step 0,
    so TensorBoard shows only this comparison.
    """
    tb_dir = out / TB_FOLDER
    _remove_previous_event_file(out)
    before = set(tb_dir.iterdir()) if tb_dir.is_dir() else set()
    logger = RunLogger(tb_dir, purge_step=0)
    try:
        for name, fig in figures.items():
            logger.figure(f"{TB_PREFIX}/{Path(name).stem}", fig, 0)
        logger.text(f"{TB_PREFIX}/table", markdown, 0)
    finally:
        logger.close()
    new = sorted(p.name for p in set(tb_dir.iterdir()) - before)
    return new[0] if new else None


def write_outputs(comparison: Comparison, out: Path) -> list[Path]:
    """Write every comparison output into ``out``; return the files written. A folder that
    cannot be written (read-only, full) is a one-line :class:`~seq2seq.errors.WriteError`
    at the first file, before TensorBoard's writer starts."""
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    markdown = render_markdown(comparison)
    document = to_json(comparison)
    figures = make_figures(document)
    written = [save_figure(fig, out / name) for name, fig in figures.items()]
    event_file = write_tensorboard(out, figures, markdown)
    atomic_write_text(out / MARKDOWN_FILE, markdown)
    atomic_write_text(out / CSV_FILE, render_csv(comparison))
    write_json(out / JSON_FILE, document | {"tensorboard_event_file": event_file})
    written += [out / MARKDOWN_FILE, out / CSV_FILE, out / JSON_FILE, out / TB_FOLDER]
    return written
