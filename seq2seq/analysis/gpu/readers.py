"""What each stage of the GPU check measured, read back from the files it wrote: the pytest
report, a run folder (``metrics.json``, else ``last.pt``, and ``train.log``), ``profile.json``,
``bench.json``, a sweep folder. A stage stopped at its cap is read as far as it came: a run
without ``metrics.json`` gives its steps and validations from ``last.pt`` (see
:func:`seq2seq.analysis.bench.processes.read_run`) and no test scores."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from seq2seq.analysis.bench.processes import read_run
from seq2seq.choices import Recurrence
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary
from seq2seq.machine import usable_cores

#: The valid exact match at which a run counts as trained (README's quick start: 0.99).
TARGET = 0.99
#: A validation's line in train.log, with the seconds it took.
VALIDATION = re.compile(
    r"step (\d+)  valid loss \S+  BLEU \S+  exact match \S+  \((\d+(?:\.\d+)?)s\)"
)
#: A test's outcome as ``pytest -v`` prints it (under pytest-xdist: ``[gw0] [ 50%] PASSED …``).
RESULT = re.compile(r"\b(PASSED|FAILED|ERROR|SKIPPED) (tests/\S+::\S+)")
#: The processes' line in train.log (``seq2seq.training.distributed.ProcessGroup.describe``).
PROCESSES = re.compile(r"processes: (world size \d+, backend \w+, device \w+)")


def cuda_tests(report: Path, output: str = "") -> dict[str, Any]:
    """The pytest report's counts (``tests``, ``passed``, ``failed``, ``skipped``) and the
    names of the failed tests; when pytest wrote no report (stopped at its cap), what its
    verbose ``output`` said of each test that ended (``report`` None)."""
    if not report.exists():
        ended = {test: outcome for outcome, test in RESULT.findall(output)}
        return {
            "report": None,
            "ended": len(ended),
            "passed": sum(outcome == "PASSED" for outcome in ended.values()),
            "failures": sorted(t for t, o in ended.items() if o in ("FAILED", "ERROR")),
        }
    root = ElementTree.parse(report).getroot()
    cases = list(root.iter("testcase"))
    failed = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in cases
        if case.find("failure") is not None or case.find("error") is not None
    ]
    skipped = [case for case in cases if case.find("skipped") is not None]
    reasons = sorted({str(case.find("skipped").get("message")) for case in skipped})  # type: ignore[union-attr]
    return {
        "report": report.name,
        "tests": len(cases),
        "passed": len(cases) - len(failed) - len(skipped),
        "failed": len(failed),
        "skipped": len(skipped),
        "skip_reasons": reasons,
        "failures": failed,
        "seconds": float(root.get("time") or next(root.iter("testsuite")).get("time") or 0),
    }


def training_run(run_dir: Path, output: str = "") -> dict[str, Any]:
    """One ``scripts/train.py`` run: how far it came (``steps``, ``finished``), its updates'
    seconds and throughput, every validation's seconds (train.log), the first validation at
    :data:`TARGET` exact match, the test scores (finished runs), the processes and device
    (train.log), and whether it generated its corpus (``output``: what it printed)."""
    source, state, processes = read_run(run_dir, planned=1)
    log_file = run_dir / "train.log"
    log = log_file.read_text(encoding="utf-8") if log_file.exists() else ""
    validations = [(int(step), float(s)) for step, s in VALIDATION.findall(log)]
    reached = next((h for h in state.history if h.valid_exact_match >= TARGET), None)
    described = PROCESSES.search(log)
    data: dict[str, Any] = {
        "finished": source == METRICS_FILE,
        "read_from": source,
        "steps": state.step,
        "updates_seconds": round(state.train_seconds, 2),
        "validations": len(validations),
        "validations_seconds": round(sum(s for _, s in validations), 1),
        "validation_seconds_each": [s for _, s in validations],
        "processes": processes,
        "launch": described[1] if described else None,
        "corpus_generated": "generated the synthetic corpus" in output + log,
        "best_valid_exact_match": max((h.valid_exact_match for h in state.history), default=None),
        f"step_at_{TARGET}": reached.step if reached else None,
        f"updates_seconds_at_{TARGET}": reached.train_seconds if reached else None,
        "test": None,
    }
    if source == METRICS_FILE:
        summary = RunSummary.load(run_dir / METRICS_FILE)
        test = summary.test
        data["test"] = {"exact_match": test.exact_match, "bleu": test.bleu, "aer": test.aer}
        data["tokens_per_s"] = summary.train_tokens_per_second
        data["test_sentences_per_s"] = summary.decoding_sentences_per_second
    return data


def profile(path: Path) -> dict[str, Any]:
    """``profile.json``'s rows (the operator tables stay in the file)."""
    if not path.exists():
        return {"profile": None}
    result = json.loads(path.read_text(encoding="utf-8"))
    return {"profile": path.name, "rows": result["rows"]}


def bench(path: Path) -> dict[str, Any]:
    """``bench.json``'s figures: tokens/s of every row (and the tutorial reference), which
    recurrence is faster per attention (``X`` against ``X (textbook)``), decoding sentences/s,
    the run toward 99% and the peak memory."""
    if not path.exists():
        return {"bench": None}
    b = json.loads(path.read_text(encoding="utf-8"))
    training = {name: row["tokens_per_s"] for name, row in b["training"].items()}
    configured = b["config"].get("recurrence", Recurrence.fused)
    other = next(r for r in Recurrence if r != configured)
    recurrence = {}
    for name, tokens_per_s in training.items():
        if f"{name} ({other})" in training:
            paths = {configured: tokens_per_s, other: training[f"{name} ({other})"]}
            recurrence[name] = paths | {"faster": max(paths, key=lambda p: paths[p])}
    d, t = b["decoding"], b["time_to_99"]
    return {
        "bench": path.name,
        "tokens_per_s": training,
        "reference_tokens_per_s": b["reference"]["tokens_per_s"],
        "recurrence": recurrence,
        "decoding": {
            "sentences": d["sentences"],
            "greedy_sentences_per_s": d["greedy_sentences_per_s"],
            "beam_size": d["beam_size"],
            "beam_sentences_per_s": d["beam_sentences_per_s"],
            "model_valid_exact_match": d["model_exact_match"],
        },
        "time_to_99": {
            key: t[key] for key in ("reached", "seconds", "steps_run", "budget_s", "processes")
        },
        "gemm_gflops": b["gemm_gflops"],
        "peak_memory_mb": b["peak_memory_mb"],
        "bench_wall_seconds": b["bench_wall_seconds"],
    }


def sweep(sweep_dir: Path, planned: int) -> dict[str, Any]:
    """Each job of a sweep folder of ``planned`` jobs as :func:`training_run` reads it (its
    test scores and how far it came), how many finished, and how many ran at once (one per
    usable core, at most one per job: ``conf/hydra/launcher/parallel.yaml``)."""
    jobs = sorted(p.parent for p in sweep_dir.glob("*/train.log"))
    runs = {job.name: training_run(job) for job in jobs}
    return {
        "planned_jobs": planned,
        "jobs": runs,
        "finished": sum(run["finished"] for run in runs.values()),
        "jobs_at_once": min(usable_cores(), planned),
    }
