"""Running the GPU check: each stage of :mod:`.plan` in turn as a subprocess of its own
process group, stopped past its cap (SIGTERM to the group: a training finishes its update
and saves ``last.pt``; then SIGKILL after :data:`GRACE_S`), read back (:mod:`.readers`) and
recorded at once in ``OUT/gpu.json`` (:mod:`seq2seq.analysis.results`), so a stage that
fails or is stopped costs the others nothing. Everything a stage prints goes to
``OUT/gpu_check.log``; the quick start's ``train.log`` is copied beside it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from seq2seq.analysis.gpu import readers
from seq2seq.analysis.gpu.plan import BUDGET_S, STAGES, Stage, plan
from seq2seq.analysis.results import RESULTS_DIR, Record, add_record, provenance
from seq2seq.errors import UserError

#: Seconds a stage has, after SIGTERM at its cap, to stop by itself.
GRACE_S = 20.0
#: The least a stage is started with; with less of the budget left it is recorded as skipped.
MIN_CAP_S = 10.0
REPO = RESULTS_DIR.parent
RESULTS_FILE = "gpu.json"
LOG_FILE = "gpu_check.log"
#: Jobs of the comparison sweep for one seed (conf/experiment/compare.yaml: five variants).
SWEEP_JOBS = 5


@dataclass(frozen=True)
class Outcome:
    """How a stage's command ended: its exit code (None: killed), whether it reached its cap,
    its wall seconds and what it printed."""

    exit_code: int | None
    stopped_at_cap: bool
    wall_seconds: float
    output: str


def chosen_stages(names: str | None) -> list[str]:
    """``--stages a,b`` as stage names in the order they run (all of them for None)."""
    if names is None:
        return list(STAGES)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in STAGES]
    if unknown or not wanted:
        what = f"{', '.join(unknown)} is not a stage of the GPU check" if unknown else "no stage"
        raise UserError(f"--stages {names}: {what}; choose from {', '.join(STAGES)}")
    return [n for n in STAGES if n in wanted]


def caps(stages: Sequence[Stage], budget_s: float) -> dict[str, float]:
    """Each stage's planned cap, scaled so that the caps share ``budget_s`` (a subset of the
    stages run again gets the whole budget between them). A stage that ends early leaves its
    time to the next one (:func:`run_checks`)."""
    planned = sum(stage.cap_s for stage in stages)
    return {stage.name: stage.cap_s * budget_s / planned for stage in stages}


def run_stage(stage: Stage, cap_s: float, log: Path) -> Outcome:
    """Run ``stage`` from the repository root with its output in ``log``; past ``cap_s``
    its process group gets SIGTERM, and SIGKILL :data:`GRACE_S` later (what remains of the
    group, e.g. a sweep's workers, is killed when it ends either way)."""
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen(
            stage.argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=sink,
            stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **dict(stage.env)},
        )  # fmt: skip
        stopped = False
        try:
            process.wait(timeout=cap_s)
        except subprocess.TimeoutExpired:
            stopped = True
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        _signal_group(process.pid, signal.SIGKILL)
    wall = time.perf_counter() - started
    return Outcome(process.returncode, stopped, wall, log.read_text(encoding="utf-8"))


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group has ended
        os.killpg(group, signum)


def read_stage(name: str, out: Path, work: Path, output: str) -> dict[str, Any]:
    """What stage ``name`` measured (see :mod:`.readers`)."""
    if name == "cuda_tests":
        return readers.cuda_tests(out / "cuda_tests.xml", output)
    if name == "quickstart":
        return readers.training_run(work / "quickstart", output)
    if name == "profile":
        return readers.profile(out / "profile.json")
    if name == "bench":
        return readers.bench(out / "bench.json")
    return readers.sweep(work / "sweep", SWEEP_JOBS)


def run_checks(
    out: Path,
    work: Path,
    *,
    stages: Sequence[str],
    rehearse: bool,
    budget_s: float = BUDGET_S,
    commit: str | None = None,
    say: Callable[[str], None] = print,
) -> list[Record]:
    """Run ``stages`` (names of :data:`.plan.STAGES`) within ``budget_s``; each is recorded
    in ``out/gpu.json`` as soon as it ends (``commit`` where git cannot say: the device
    machine's copy of the checkout has no history). Returns the records written."""
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    selected = [stage for stage in plan(out, work, rehearse=rehearse) if stage.name in stages]
    limits = caps(selected, budget_s)
    deadline = time.perf_counter() + budget_s
    records = []
    with (out / LOG_FILE).open("a", encoding="utf-8") as combined:
        for index, stage in enumerate(selected):
            # what the stages before left over is this one's: the budget less the later caps
            later = sum(limits[s.name] for s in selected[index + 1 :])
            cap = deadline - time.perf_counter() - later
            command = stage.command.replace(str(out), "$OUT").replace(str(work), "$WORK")
            say(f"[gpu_check] {stage.name} (cap {cap:.0f} s): {command}")
            if cap < MIN_CAP_S:
                outcome, data = None, {"not_run": f"{cap:.0f} s of the budget left"}
            else:
                outcome = run_stage(stage, cap, work / f"{stage.name}.log")
                combined.write(f"===== {stage.name}: {command}\n{outcome.output}\n")
                combined.flush()
                data = _read(stage.name, out, work, outcome)
            wall = outcome.wall_seconds if outcome else 0.0
            made = provenance(command, wall, beside="nothing else (the stages run in turn)")
            if made.commit is None and commit:
                made = replace(made, commit=commit)
            record = Record(key=stage.name, provenance=made, data={"stage": stage.what, **data})
            add_record(out / RESULTS_FILE, record)
            records.append(record)
            say(f"[gpu_check] {stage.name}: {summary_line(record)}")
    quickstart_log = work / "quickstart" / "train.log"
    if quickstart_log.exists():
        shutil.copyfile(quickstart_log, out / "quickstart_train.log")
    return records


def _read(name: str, out: Path, work: Path, outcome: Outcome) -> dict[str, Any]:
    """The stage's record data: how its command ended and what it measured."""
    data: dict[str, Any] = {
        "exit_code": outcome.exit_code,
        "stopped_at_cap": outcome.stopped_at_cap,
    }
    try:
        return data | read_stage(name, out, work, outcome.output)
    except Exception as err:  # a reader's slip must not cost the stages after it their run
        lines = outcome.output.strip().splitlines()
        return data | {"read_error": repr(err), "last_line": lines[-1] if lines else ""}


def summary_line(record: Record) -> str:
    """One line of what a stage's record says (printed as each stage ends)."""
    d = record.data
    wall = f"{record.provenance.wall_seconds:.0f} s wall"
    if "not_run" in d:
        return f"not run ({d['not_run']})"
    ended = f"exit {d['exit_code']}" + (", stopped at its cap" if d["stopped_at_cap"] else "")
    if "read_error" in d:
        return f"{wall}, {ended}; could not be read: {d['read_error']}"
    if record.key == "cuda_tests":
        if d.get("report") is None:
            return f"{wall}, {ended}; no report; of {d['ended']} ended, {d['passed']} passed"
        return (
            f"{wall}, {ended}; {d['passed']} passed, {d['failed']} failed, {d['skipped']} "
            f"skipped {d['skip_reasons'] or ''}"
        )
    if record.key == "quickstart":
        test = d["test"]
        tested = f"test exact match {test['exact_match']:.3f}" if test else "not tested"
        return (
            f"{wall}, {ended}; {d['steps']} steps, updates {d['updates_seconds']:.0f} s, "
            f"{d['validations']} validations {d['validations_seconds']:.1f} s, {tested}"
        )
    if record.key == "profile":
        rows = d.get("rows") or []
        return f"{wall}, {ended}; " + "; ".join(
            f"{r['name']} batch {r['batch_size']}: {r['wall_ms_per_step']:.1f} ms/step"
            + ("" if r["busy_share"] is None else f", busy {100 * r['busy_share']:.0f}%")
            for r in rows
        )
    if record.key == "bench":
        if d.get("bench") is None:
            return f"{wall}, {ended}; no bench.json"
        return f"{wall}, {ended}; faster path: " + ", ".join(
            f"{name} {paths['faster']}" for name, paths in d["recurrence"].items()
        )
    return f"{wall}, {ended}; {d['finished']} of {d['planned_jobs']} jobs finished"


def describe(out: Path, work: Path, stages: Sequence[str], rehearse: bool, budget_s: float) -> str:
    """What ``--dry-run`` prints: every stage's cap, command and purpose, nothing run."""
    selected = [stage for stage in plan(out, work, rehearse=rehearse) if stage.name in stages]
    limits = caps(selected, budget_s)
    lines = [
        f"the GPU check would run {len(selected)} stage(s) within {budget_s:.0f} s, "
        f"{'tiny on the CPU (a rehearsal)' if rehearse else 'on the GPU'}, and record each in "
        f"{out / RESULTS_FILE}:"
    ]
    for stage in selected:
        lines += [
            f"  {stage.name} (cap {limits[stage.name]:.0f} s): {stage.what}",
            f"    {stage.command}",
        ]
    return "\n".join(lines)
