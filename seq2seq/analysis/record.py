"""A training command run and kept as a record of a results file (``scripts/record.py``): its
wall time and what its run folder says it did."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from seq2seq.analysis.results import Record, add_record, provenance
from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary

#: How training names its run folder in its log (seq2seq.training.run).
RUN_FOLDER = re.compile(r"run folder: (\S.*)$", re.M)
#: A validation's line in train.log, with its seconds (seq2seq.training.trainer).
VALIDATION = re.compile(r"step \d+ +valid loss .*\((\d+(?:\.\d+)?)s\)")


def run_teed(command: list[str]) -> tuple[int, str, float]:
    """Run ``command``, its output passed through and kept; (exit code, output, seconds)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert process.stdout is not None
    kept = []
    for line in process.stdout:
        sys.stderr.write(line)
        kept.append(line)
    code = process.wait()
    return code, "".join(kept), time.perf_counter() - started


def run_record(run_dir: Path) -> dict[str, Any]:
    """What a finished run folder says it did: test scores, updates, validations, speed."""
    summary = RunSummary.load(run_dir / METRICS_FILE)
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    validations = [float(s) for s in VALIDATION.findall(log)]
    test = summary.test
    return {
        "run_dir": str(run_dir),
        "test": {
            "bleu": test.bleu,
            "chrf": test.chrf,
            "exact_match": test.exact_match,
            "aer": test.aer,
        },
        "steps": summary.steps,
        "best_step": summary.best_step,
        "train_seconds": summary.train_seconds,
        "validations": len(validations),
        "validation_seconds": round(sum(validations), 1),
        "processes": summary.distributed.world_size if summary.distributed else 1,
        "train_tokens_per_second": summary.train_tokens_per_second,
    }


def record_run(results_file: Path, key: str, command: list[str], beside: str | None) -> None:
    """Run ``command`` and write its record ``key`` into ``results_file``."""
    code, output, seconds = run_teed(command)
    if code != 0:
        raise UserError(f"{shlex.join(command)} failed (exit {code}); nothing was recorded")
    named = RUN_FOLDER.findall(output)
    if not named:
        raise UserError(
            f"{shlex.join(command)} named no run folder (no 'run folder:' line); record a "
            "training command"
        )
    data = run_record(Path(named[-1].strip()))
    add_record(results_file, Record(key, provenance(shlex.join(command), seconds, beside), data))
