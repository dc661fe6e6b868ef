"""The benchmark kept as a results file (``bench.py --record results/bench.json``): bench.json's
document as the one record ``bench``, with the command as typed, the benchmark's own wall time
(``bench_wall_seconds``) and this machine. docs/performance.md renders its tables from it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seq2seq.analysis.results import Record, add_record, load_records, provenance

#: The record's key in its results file (one benchmark per file).
BENCH_KEY = "bench"


def check_results_file(results_file: Path) -> None:
    """Refuse, before anything runs, a ``results_file`` that exists and is no results file:
    the benchmark takes minutes, and its record must not be lost at the end."""
    load_records(results_file)


def bench_command(argv: Sequence[str]) -> str:
    """``python scripts/bench.py <argv>``, quoted as a shell would need it."""
    return shlex.join(["python", "scripts/bench.py", *argv])


#: The record of ``bench.py --explorer`` (results/explorer.json: docs/explorer.md's timings).
EXPLORER_KEY = "explorer"


def record_bench(
    results_file: Path,
    result: dict[str, Any],
    argv: Sequence[str],
    beside: str | None,
    key: str = BENCH_KEY,
) -> None:
    """Write ``result`` (what bench.json, or explorer.json, holds) as the record ``key`` of
    ``results_file``."""
    made = provenance(bench_command(argv), result["bench_wall_seconds"], beside)
    add_record(results_file, Record(key, made, result))
