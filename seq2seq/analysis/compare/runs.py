"""Finding run folders (folders holding a ``metrics.json``) and loading their summaries,
with what tells runs apart: each run's settings (its config, flattened) and its dataset.

A folder under a sweep that looks like a run — Hydra's ``.hydra`` record, a ``train.log`` or
``checkpoints`` — but has no ``metrics.json``, or one holding only ``scripts/evaluate.py``'s
evaluations, is a run whose training did not finish: it is left out, and one warning names
every such folder. A ``metrics.json`` holding a number that is not finite (NaN, ±Infinity)
is refused with the file and the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary, read_json

#: What a run folder holds before its training writes ``metrics.json``.
RUN_SIGNS = (".hydra", "train.log", "checkpoints")
NO_METRICS = "no metrics.json"
EVALUATIONS_ONLY = "its metrics.json holds only evaluate.py's evaluations"


@dataclass(frozen=True)
class Run:
    """One finished run: its folder, its dataset (name and corpus), its summary and its
    settings (``{"model.hidden_size": 48, ...}``; empty when the run recorded none)."""

    path: Path
    dataset: str
    summary: RunSummary
    settings: dict[str, Any] = field(default_factory=dict)

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


def looks_like_run(path: Path) -> bool:
    """Whether ``path`` holds what a run folder holds before its ``metrics.json``."""
    return any((path / sign).exists() for sign in RUN_SIGNS)


def _runs_below(folder: Path) -> tuple[list[Path], list[Path]]:
    """Run folders below ``folder`` and folders that look like runs without a
    ``metrics.json`` (not descending into either, nor into hidden folders)."""
    found: list[Path] = []
    unfinished: list[Path] = []
    for root, dirs, files in os.walk(folder):
        if METRICS_FILE in files:
            found.append(Path(root))
            dirs[:] = []
        elif Path(root) != folder and looks_like_run(Path(root)):
            unfinished.append(Path(root))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found), sorted(unfinished)


@dataclass(frozen=True)
class RunFolders:
    """What ``paths`` name: run folders with a ``metrics.json``, and folders that look like
    runs but have none (their training did not finish)."""

    finished: list[Path]
    unfinished: list[Path]


def scan(paths: Sequence[str | Path]) -> RunFolders:
    """Run folders named by ``paths``: run folders as given, sweep folders searched.

    A path may also be a ``metrics.json`` file (its folder is the run). Each run appears
    once even if reached through several paths. Raises :class:`UserError` for a missing
    path, a path that is some other file, or a folder without any run below it.
    """
    if not paths:
        raise UserError("give at least one sweep folder or run folder")
    found: dict[Path, None] = {}
    unfinished: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UserError(f"{path} does not exist")
        if path.is_file():
            if path.name != METRICS_FILE:
                raise UserError(f"{path} is a file; give a sweep folder or a run folder")
            runs, others = [path.parent], []
        elif is_run_dir(path):
            runs, others = [path], []
        elif looks_like_run(path):
            runs, others = [], [path]
        else:
            runs, others = _runs_below(path)
            if not runs and not others:
                raise UserError(
                    f"no run folders (folders with {METRICS_FILE}) found under {path}; "
                    "has the sweep finished?"
                )
        for run in runs:
            found.setdefault(run.resolve(), None)
        for other in others:
            unfinished.setdefault(other.resolve(), None)
    return RunFolders(list(found), list(unfinished))


def find_run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """The run folders with a ``metrics.json`` that ``paths`` name (see :func:`scan`)."""
    return scan(paths).finished


def _saved_config(run_dir: Path) -> Mapping[str, Any] | None:
    """The run's config as its ``.hydra/config.yaml`` holds it, if readable."""
    try:
        config = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    return config if isinstance(config, Mapping) else None


def _corpus_location(config: Mapping[str, Any] | None) -> str | None:
    """``data.path`` or ``data.dir`` of a run's config, if it names one."""
    data = config.get("data") if config is not None else None
    if not isinstance(data, Mapping):
        return None
    location = data.get("path") or data.get("dir")
    return _fill_sibling_references(str(location), data) if location else None


def flat_settings(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config as ``{"model.hidden_size": 48, ...}`` (a list is one value)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            flat |= flat_settings(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def dataset_name(summary: RunSummary, location: str | None) -> str:
    """The run's dataset: its ``data`` name, and its corpus: the fingerprint of the corpus
    files training recorded (it tells two corpora of one name apart wherever the run folder
    was copied), else where ``.hydra/config.yaml`` says the corpus was."""
    if summary.corpus_sha256:
        return f"{summary.data} (corpus {summary.corpus_sha256[:12]})"
    return f"{summary.data} ({location})" if location else summary.data


def _fill_sibling_references(value: str, data: Mapping[str, Any]) -> str:
    """``data/synthetic/seed${.seed}-…`` (how the default ``data.dir`` is saved in
    ``.hydra/config.yaml``) with each ``${.key}`` replaced by ``data[key]``, and a path in
    the repository (``${seq2seq_repo:data/tatoeba/…}``, how the shipped corpus is named) by
    that path as runs made before the resolver recorded it. Only these references are
    filled; anything else (a resolver such as ``${oc.env:…}``) stays as text."""
    value = _REPOSITORY_PATH.sub(lambda m: m.group(1).strip(), value)
    return _SIBLING.sub(lambda m: str(data.get(m.group(1), m.group(0))), value)


_SIBLING = re.compile(r"\$\{\.(\w+)\}")
_REPOSITORY_PATH = re.compile(r"\$\{seq2seq_repo:([^${}]*)\}")


class UnfinishedRun(UserError):
    """A run folder whose ``metrics.json`` holds only evaluations: training did not finish."""


def load_run(run_dir: Path) -> Run:
    """Read and check ``run_dir/metrics.json``; raise :class:`UserError` naming the file.

    The dataset is the summary's ``data`` name plus its corpus (:func:`dataset_name`): runs
    of one name on different corpora differ. The settings are the config ``metrics.json``
    records, else ``.hydra/config.yaml``'s (runs made before it was recorded).
    A ``metrics.json`` holding only evaluations (training stopped before its test, then
    ``evaluate.py`` ran) raises :class:`UnfinishedRun`; one with a non-finite number is
    refused (:meth:`RunSummary.from_dict`).
    """
    path = run_dir / METRICS_FILE
    data = read_json(path)
    if isinstance(data, Mapping) and "attention" not in data and "evaluations" in data:
        raise UnfinishedRun(f"training did not finish in {run_dir} ({EVALUATIONS_ONLY})")
    summary = RunSummary.from_dict(data, path)  # non-finite numbers are refused there too
    saved = _saved_config(run_dir)
    config = summary.config if summary.config is not None else saved
    dataset = dataset_name(summary, _corpus_location(saved or summary.config))
    settings = flat_settings(config) if config is not None else {}
    return Run(path=run_dir, dataset=dataset, summary=summary, settings=settings)


def load_sweep(paths: Sequence[str | Path]) -> tuple[list[Run], list[str]]:
    """The finished runs named by ``paths`` (see :func:`scan`), loaded and checked, and a
    warning naming those left out because their training did not finish.

    Raises :class:`UserError` when no run finished (saying which did not).
    """
    folders = scan(paths)
    runs: list[Run] = []
    left_out = [(folder, NO_METRICS) for folder in folders.unfinished]
    for run_dir in folders.finished:
        try:
            runs.append(load_run(run_dir))
        except UnfinishedRun:
            left_out.append((run_dir, EVALUATIONS_ONLY))
    listing = ", ".join(f"{folder} ({why})" for folder, why in sorted(left_out))
    if not runs:
        where = ", ".join(str(p) for p in paths)
        raise UserError(f"no finished runs under {where}: training did not finish in {listing}")
    if not left_out:
        return runs, []
    count = len(left_out)
    return runs, [
        f"left out {count} run folder{'s' * (count != 1)} where training did not finish: {listing}"
    ]


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """The finished runs named by ``paths`` (see :func:`load_sweep`), loaded and checked."""
    return load_sweep(paths)[0]
