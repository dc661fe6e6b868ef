"""A finished run's files, checked without PyTorch: the commands that read a run (translate,
evaluate, serve) refuse a wrong folder in one line before the seconds of importing PyTorch,
and :meth:`TrainedRun.load <seq2seq.evaluation.inference.TrainedRun.load>` checks with the
same words."""

from __future__ import annotations

from pathlib import Path

from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE

CHECKPOINTS = "checkpoints"  # the run folder's checkpoints: best.pt, last.pt


def checkpoint_file(run_dir: str | Path, checkpoint: str = "best.pt") -> Path:
    """``run_dir/checkpoints/<checkpoint>``; :class:`UserError` when ``run_dir`` is not a
    folder or has no such file."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(
            f"{run_dir} is a file, not a run folder; pass a folder made by scripts/train.py"
        )
    if not run_dir.is_dir():
        raise UserError(
            f"run folder {run_dir} does not exist; pass a folder made by scripts/train.py"
        )
    path = run_dir / CHECKPOINTS / checkpoint
    if not path.is_file():
        raise UserError(
            f"{run_dir} has no {CHECKPOINTS}/{checkpoint}; "
            "is it a finished run folder of scripts/train.py?"
        )
    return path


def finished_run_metrics(run_dir: str | Path, checkpoint: str = "best.pt") -> Path:
    """The ``metrics.json`` of a run that finished (its test scores written), after
    :func:`checkpoint_file`'s checks; :class:`UserError` for a run stopped before its test."""
    checkpoint_file(run_dir, checkpoint)
    metrics = Path(run_dir) / METRICS_FILE
    if not metrics.is_file():
        raise UserError(
            f"{run_dir} is not a finished run: it has no {METRICS_FILE} (training stopped "
            "before its test); pass the folder of a run that finished"
        )
    return metrics
