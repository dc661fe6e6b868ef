"""Compare finished runs: mean ± sd over seeds per attention variant, as tables and figures.

``python scripts/compare.py multirun/<time>`` reads every run folder (one holding a
``metrics.json``) below the given sweep folders and/or the given run folders, groups the
runs by attention variant (and, where a variant's runs differ in a setting besides the seed,
by that setting: ``additive model.hidden_size=48``; see :mod:`.aggregate`) and writes, into
the output folder:

* ``comparison.md`` -- the main table (test BLEU, chrF, exact match, AER, attention entropy,
  parameters, training time, training target tokens/s, test sentences decoded per second,
  steps to best; mean ± sd over seeds) and a BLEU-by-source-length
  table (mean over seeds);
* ``comparison.csv`` -- the same numbers, one row per variant (its ``settings``, ``<metric>_mean``,
  ``<metric>_sd``, ``<metric>_n``, and ``bleu_len_<bucket>_mean``/``_sd``/``_n``);
* ``comparison.json`` -- everything, including the run folders that went into each row;
* ``bleu_by_length.png``, ``aer.png``, ``valid_loss.png`` -- the figures; ``explain_aer.png``
  (every map's AER) and ``interventions.png`` (BLEU with the attention replaced) from the runs
  ``evaluate.py --explain`` put to the test, else placeholders that say so;
* ``tb/`` -- the figures and the markdown table for TensorBoard.

Statistics: the mean over seeds and the sample standard deviation (``n - 1``); with a single
seed the sd is unknown (``null`` in JSON, empty in CSV, ``–`` in markdown). A metric a run
does not have (AER of ``none``, or of a corpus without gold alignments) is ``null`` and is
left out of that metric's mean; ``n`` counts the runs that had it.

Runs of different datasets are refused unless ``allow_mixed_data`` is set (then it is a
warning and the datasets are listed in the report): averaging seeds across corpora, or
comparing variants trained on different data, would make the table meaningless. A dataset
is ``metrics.json``'s ``data`` name plus its corpus: the fingerprint of the corpus files
training recorded (``corpus_sha256``), or, in runs made before it was, the corpus file or
folder ``.hydra/config.yaml`` gives (``data.path`` or ``data.dir``).

The output folder is ``out``, or else the one sweep folder given; it may not be (or be
inside) a run folder. Only the files above are written there; a previous comparison's
TensorBoard event file in ``tb/`` is replaced, and no run is ever modified.

The steps, one module each: :mod:`.runs` finds run folders and loads their
``metrics.json`` (through :class:`~seq2seq.evaluation.summary.RunSummary`),
:mod:`.aggregate` groups them into variants with their statistics, :mod:`.render` makes
the tables, :mod:`.figures` the figures (through :mod:`seq2seq.viz`) and :mod:`.outputs`
writes everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seq2seq.analysis.compare.aggregate import (
    COLUMNS,
    Column,
    Comparison,
    Stat,
    Variant,
    build_comparison,
    group_runs,
    mean_sd,
)
from seq2seq.analysis.compare.figures import (
    AER_FIGURE,
    BLEU_BY_LENGTH_FIGURE,
    VALID_LOSS_FIGURE,
    make_figures,
    valid_loss_series,
)
from seq2seq.analysis.compare.outputs import (
    CSV_FILE,
    JSON_FILE,
    MARKDOWN_FILE,
    TB_FOLDER,
    resolve_out_dir,
    write_outputs,
)
from seq2seq.analysis.compare.render import format_stat, render_csv, render_markdown, to_json
from seq2seq.analysis.compare.runs import Run, find_run_dirs, load_run, load_runs, load_sweep
from seq2seq.evaluation.summary import METRICS_FILE

__all__ = [
    "AER_FIGURE",
    "BLEU_BY_LENGTH_FIGURE",
    "COLUMNS",
    "CSV_FILE",
    "JSON_FILE",
    "MARKDOWN_FILE",
    "METRICS_FILE",
    "TB_FOLDER",
    "VALID_LOSS_FIGURE",
    "Column",
    "Comparison",
    "Run",
    "Stat",
    "Variant",
    "build_comparison",
    "compare",
    "find_run_dirs",
    "format_stat",
    "group_runs",
    "load_run",
    "load_runs",
    "load_sweep",
    "make_figures",
    "mean_sd",
    "render_csv",
    "render_markdown",
    "resolve_out_dir",
    "to_json",
    "valid_loss_series",
    "write_outputs",
]


def compare(
    paths: Sequence[str | Path], out: str | Path | None = None, *, allow_mixed_data: bool = False
) -> tuple[Comparison, Path]:
    """Load the runs under ``paths``, aggregate them and write every output.

    Returns the comparison and the output folder. Raises :class:`UserError` for anything
    the user can fix (see :func:`find_run_dirs`, :func:`load_run`, :func:`resolve_out_dir`).
    """
    runs, left_out = load_sweep(paths)
    target = resolve_out_dir(paths, out)
    comparison = build_comparison(runs, allow_mixed_data=allow_mixed_data)
    comparison.warnings[:0] = left_out
    write_outputs(comparison, target)
    return comparison, target
