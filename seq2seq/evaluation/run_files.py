"""A finished run's files, checked without PyTorch: the commands that read a run (translate,
evaluate, serve) refuse a wrong folder in one line before the seconds of importing PyTorch,
and :meth:`TrainedRun.load <seq2seq.evaluation.inference.TrainedRun.load>` checks with the
same words, and that the checkpoint is the run's own (:func:`check_same_model`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE
from seq2seq.files import parse_json

CHECKPOINTS = "checkpoints"  # the run folder's checkpoints: best.pt, last.pt
HYDRA_CONFIG = ".hydra/config.yaml"  # the config Hydra composed for the run
#: The config keys that say which model a run trained (compared by :func:`check_same_model`).
MODEL_IDENTITY = ("model.kind", "attention.type", "model.decoder", "attention.num_heads")


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


def check_same_model(
    run_dir: str | Path, checkpoint: Path, described: Mapping[str, Mapping[str, object]]
) -> None:
    """Refuse a checkpoint that is not the run's own: ``described`` maps a run file
    (:data:`HYDRA_CONFIG`, ``metrics.json``) to what it records about the model if the
    checkpoint is the run's (dotted keys: ``{"model.kind": "rnn"}``). A file or key that is not
    there, or a file that does not parse, says nothing; the first value that differs is one
    line naming both files (e.g. a Transformer's ``best.pt`` copied into a GRU run)."""
    for name, expected in described.items():
        recorded = _read(Path(run_dir) / name)
        for key, value in expected.items():
            found = value_at(recorded, key)
            if found is not None and value is not None and found != value:
                raise UserError(
                    f"checkpoint {checkpoint} and {Path(run_dir) / name} disagree about the model: "
                    f"{key}={value} in the checkpoint, {found} in {name}; the checkpoint comes "
                    "from another run: put this run's own back, or use it in the folder it came "
                    "from"
                )


def _read(path: Path) -> object:
    """A run file's content (JSON or YAML by its suffix), or None where it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
        return yaml.safe_load(text) if path.suffix == ".yaml" else parse_json(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return None


def value_at(data: object, key: str) -> object:
    """``data["model"]["kind"]`` for ``model.kind``; None where any part is missing."""
    for part in key.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data
