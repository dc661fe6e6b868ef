"""Finding run folders (folders holding a ``metrics.json``) and loading their summaries."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary


@dataclass(frozen=True)
class Run:
    """One finished run: its folder, its dataset (name and corpus) and its summary."""

    path: Path
    dataset: str
    summary: RunSummary

    @property
    def attention(self) -> str:
        return self.summary.attention

    @property
    def num_heads(self) -> int:
        return self.summary.num_heads

    @property
    def decoder(self) -> str:
        return self.summary.decoder

    @property
    def seed(self) -> int:
        return self.summary.seed


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a run folder (it holds a ``metrics.json``)."""
    return (path / METRICS_FILE).is_file()


def _runs_below(folder: Path) -> list[Path]:
    """Run folders below ``folder`` (not descending into a run folder or hidden folders)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        if METRICS_FILE in files:
            found.append(Path(root))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def find_run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders named by ``paths``: run folders as given, sweep folders searched.

    A path may also be a ``metrics.json`` file (its folder is the run). Each run appears
    once even if reached through several paths. Raises :class:`UserError` for a missing
    path, a path that is some other file, or a folder without any run below it.
    """
    if not paths:
        raise UserError("give at least one sweep folder or run folder")
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UserError(f"{path} does not exist")
        if path.is_file():
            if path.name != METRICS_FILE:
                raise UserError(f"{path} is a file; give a sweep folder or a run folder")
            runs = [path.parent]
        elif is_run_dir(path):
            runs = [path]
        else:
            runs = _runs_below(path)
            if not runs:
                raise UserError(
                    f"no run folders (folders with {METRICS_FILE}) found under {path}; "
                    "has the sweep finished?"
                )
        for run in runs:
            found.setdefault(run.resolve(), None)
    return list(found)


def _corpus_location(run_dir: Path) -> str | None:
    """``data.path`` or ``data.dir`` from the run's saved Hydra config, if readable."""
    try:
        config = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    data = config.get("data") if isinstance(config, Mapping) else None
    if not isinstance(data, Mapping):
        return None
    location = data.get("path") or data.get("dir")
    return _fill_sibling_references(str(location), data) if location else None


def _fill_sibling_references(value: str, data: Mapping[str, Any]) -> str:
    """``data/synthetic/seed${.seed}-…`` (how the default ``data.dir`` is saved in
    ``.hydra/config.yaml``) with each ``${.key}`` replaced by ``data[key]``. Only these plain
    references are filled; anything else (a resolver such as ``${oc.env:…}``) stays as text."""
    return _SIBLING.sub(lambda m: str(data.get(m.group(1), m.group(0))), value)


_SIBLING = re.compile(r"\$\{\.(\w+)\}")


def load_run(run_dir: Path) -> Run:
    """Read and check ``run_dir/metrics.json``; raise :class:`UserError` naming the file.

    The dataset is the summary's ``data`` name plus, when the run's ``.hydra/config.yaml``
    gives one, the corpus file or folder: runs of one name on different corpora differ.
    """
    summary = RunSummary.load(run_dir / METRICS_FILE)
    location = _corpus_location(run_dir)
    dataset = f"{summary.data} ({location})" if location else summary.data
    return Run(path=run_dir, dataset=dataset, summary=summary)


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """All runs named by ``paths`` (see :func:`find_run_dirs`), loaded and checked."""
    return [load_run(run_dir) for run_dir in find_run_dirs(paths)]
