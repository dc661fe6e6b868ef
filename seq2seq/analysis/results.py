"""Results as data: the committed files under ``results/`` that README's and docs' figures are
rendered from (:mod:`seq2seq.analysis.render`).

A results file is a list of :class:`Record` s, each what one command measured (``data``) and
how it was made (:class:`Provenance`: the command, the code's commit, the machine, the date,
the wall time, what else ran beside it). A file holds one record (the comparison sweep, the
benchmark) or several of one kind (the quick start per seed, Tatoeba per preset and seed);
:func:`add_record` replaces the record of the same ``key`` and keeps the others.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2seq.errors import UserError
from seq2seq.files import write_json
from seq2seq.records import RecordError, from_plain, to_plain

#: Where the committed results live, beside the package.
RESULTS_DIR = Path(__file__).resolve().parents[2] / "results"


@dataclass(frozen=True)
class Machine:
    """What a measurement ran on."""

    cpu: str
    cores: int  # the CPU cores the process could use
    torch: str
    python: str
    gpu: str | None = None
    cuda: str | None = None  # CUDA runtime version of the torch build
    driver: str | None = None  # the GPU driver, as nvidia-smi reports it


@dataclass(frozen=True)
class Provenance:
    """How a record was made: ``command`` as typed (from the repository root), the ``commit``
    of the code (``+dirty`` when the checkout had changes), the ``machine``, the UTC ``date``,
    the command's ``wall_seconds`` and ``beside``: what else ran on the machine meanwhile. (A
    lever measured before results were kept as data may lack its wall time: None.)"""

    command: str
    commit: str | None
    machine: Machine
    date: str
    wall_seconds: float | None
    beside: str = "nothing else"


@dataclass(frozen=True)
class Record:
    """One measurement: ``key`` names it within its file (``seed0``, ``gru_seed1``)."""

    key: str
    provenance: Provenance
    data: dict[str, Any] = field(default_factory=dict)


def code_commit(repository: Path = RESULTS_DIR.parent) -> str | None:
    """The checkout's commit, ``+dirty`` when tracked files differ from it; None outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True,
            timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=repository,
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def this_machine() -> Machine:
    """This machine as a :class:`Machine` (torch imported here: a measurement has it)."""
    import torch

    from seq2seq.analysis.bench.machine import cpu_model
    from seq2seq.machine import usable_cores

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return Machine(
        cpu=cpu_model(),
        cores=usable_cores(),
        torch=torch.__version__,
        python=platform.python_version(),
        gpu=gpu,
        cuda=torch.version.cuda if gpu else None,
        driver=_nvidia_driver() if gpu else None,
    )


def _nvidia_driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def provenance(command: str, wall_seconds: float, beside: str | None = None) -> Provenance:
    """The provenance of a measurement made now, on this machine, by this checkout; ``beside``
    defaults to ``SEQ2SEQ_BESIDE`` from the environment, else "nothing else"."""
    return Provenance(
        command=command,
        commit=code_commit(),
        machine=this_machine(),
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        wall_seconds=round(wall_seconds, 1),
        beside=beside or os.environ.get("SEQ2SEQ_BESIDE") or "nothing else",
    )


def load_records(path: str | Path) -> list[Record]:
    """The records of a results file (none when it does not exist yet)."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise UserError(f"{path} is not a readable results file ({err})") from None
    try:
        records = data.get("records") if isinstance(data, dict) else None
        if not isinstance(records, list):
            raise RecordError("records", "should be a list of records")
        return [from_plain(Record, r, f"records[{i}]") for i, r in enumerate(records)]
    except (RecordError, KeyError) as err:
        raise UserError(f"{path} is not a results file: {err}") from None


def add_record(path: str | Path, record: Record) -> None:
    """Write ``record`` into the results file at ``path``, replacing one of the same key."""
    kept = [r for r in load_records(path) if r.key != record.key]
    records = sorted([*kept, record], key=lambda r: r.key)
    write_json(path, {"records": [to_plain(r) for r in records]})
