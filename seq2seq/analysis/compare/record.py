"""A sweep's comparison kept as a results file (``compare.py SWEEP --record
results/compare.json``): the comparison's JSON document, with the sweep's provenance — the
command that made it (from Hydra's ``multirun.yaml``), its wall time (from Hydra's start of
the sweep to the last run's last log line) and this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from seq2seq.analysis.results import Record, add_record, provenance
from seq2seq.errors import UserError

MULTIRUN_FILE = "multirun.yaml"


def sweep_command(sweep: Path) -> str:
    """``python scripts/train.py -m <the sweep's overrides>``, from its ``multirun.yaml``."""
    try:
        hydra = yaml.safe_load((sweep / MULTIRUN_FILE).read_text(encoding="utf-8"))["hydra"]
        overrides = hydra["overrides"]["task"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as err:
        raise UserError(
            f"--record needs the sweep folder Hydra made ({sweep / MULTIRUN_FILE} cannot be "
            f"read: {err}); give the sweep folder, not its runs"
        ) from None
    return " ".join(["python scripts/train.py -m", *overrides])


def sweep_seconds(sweep: Path, runs: list[Path]) -> float:
    """From the sweep's start (Hydra writes ``multirun.yaml`` first) to the last line any of
    its runs logged (``train.log``; evaluate.py writes none)."""
    start = (sweep / MULTIRUN_FILE).stat().st_mtime
    logs = [run / "train.log" for run in runs if (run / "train.log").exists()]
    end = max((log.stat().st_mtime for log in logs), default=start)
    return end - start


def record_sweep(
    results_file: Path, sweep: Path, runs: list[Path], document: dict[str, Any], beside: str
) -> None:
    """Write ``document`` (the comparison's JSON) as the one record of ``results_file``."""
    made = provenance(sweep_command(sweep), sweep_seconds(sweep, runs), beside)
    add_record(results_file, Record("compare", made, document))
