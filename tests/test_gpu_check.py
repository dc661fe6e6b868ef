"""The GPU check on a CPU machine (seq2seq.analysis.gpu, scripts/gpu_check.sh): the shell
script parses and its dry run lists every stage without running one; a rehearsal runs every
stage tiny on the CPU and records each in gpu.json with the machine it ran on; a stage past
its cap is stopped and read as far as it came; the pytest report is read as it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from seq2seq.analysis.gpu import STAGES, chosen_stages
from seq2seq.analysis.gpu.plan import Stage, rehearsal_overrides
from seq2seq.analysis.gpu.readers import cuda_tests, training_run
from seq2seq.analysis.gpu.run import caps, run_stage
from seq2seq.analysis.results import load_records
from tests.helpers.cuda import NO_CUDA
from tests.helpers.runs import REPO, script_env

SCRIPT = REPO / "scripts" / "gpu_check.sh"


def shell(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True,
        timeout=timeout, env=script_env({"PYTHON": sys.executable}), stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_script_parses_and_its_dry_run_lists_every_stage_and_runs_none() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
    result = shell("--dry-run")
    assert result.returncode == 0, result.stderr
    assert "wheel(s) from .whl/" in result.stdout
    for name in STAGES:
        assert f"  {name} (cap " in result.stdout
    assert "    python scripts/train.py hydra.run.dir=WORK/quickstart\n" in result.stdout
    assert "python scripts/train.py -m +experiment=compare seed=0 " in result.stdout
    assert "bench.py device=cuda" in result.stdout and "--profile device=cuda" in result.stdout
    assert not (REPO / "OUT").exists() and not (REPO / "WORK").exists()


def test_a_rehearsal_runs_every_stage_and_records_each_with_its_machine(tmp_path: Path) -> None:
    out, work = tmp_path / "out", tmp_path / "work"
    result = shell("--rehearse", "--out", str(out), "--work", str(work), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    records = {record.key: record for record in load_records(out / "gpu.json")}
    assert list(records) == sorted(STAGES)
    for record in records.values():
        assert record.data["exit_code"] == 0 and not record.data["stopped_at_cap"], record
        machine = record.provenance.machine
        assert machine.cores >= 1 and machine.torch and machine.gpu is None
        assert record.provenance.command.startswith(("python ", "PYTEST_"))
        assert "$OUT" in record.provenance.command or "$WORK" in record.provenance.command
        assert record.provenance.wall_seconds > 0

    tests = records["cuda_tests"].data  # no GPU here: every one of them skipped, and said why
    assert tests["tests"] == tests["skipped"] > 20 and tests["skip_reasons"] == [NO_CUDA]
    quick = records["quickstart"].data
    assert quick["finished"] and quick["steps"] == 10 and quick["validations"] == 2
    assert quick["launch"] == "world size 1, backend none, device cpu"
    assert quick["corpus_generated"] and quick["test"]["exact_match"] is not None
    rows = records["profile"].data["rows"]
    assert [(r["name"], r["batch_size"]) for r in rows][:2] == [
        ("additive (fused)", 8),
        ("additive (fused)", 16),
    ]
    bench = records["bench"].data
    assert set(bench["recurrence"]) == {"additive", "dot", "multihead"}
    assert all(set(p) == {"fused", "textbook", "faster"} for p in bench["recurrence"].values())
    assert bench["decoding"]["beam_size"] == 5 and bench["tokens_per_s"]["transformer"] > 0
    sweep = records["sweep"].data
    assert sweep["finished"] == sweep["planned_jobs"] == 5 and sweep["jobs_at_once"] >= 1
    variants = ("none", "additive", "dot", "multihead", "transformer")
    assert set(sweep["jobs"]) == {f"{variant}_seed0" for variant in variants}
    assert not any(job["corpus_generated"] for job in sweep["jobs"].values())  # made once

    # what comes back from the device machine: at most 8 plain files, device-safe names
    returned = sorted(path.name for path in out.iterdir())
    assert returned == sorted(
        ["gpu.json", "gpu_check.log", "cuda_tests.xml", "profile.json", "bench.json",
         "quickstart_train.log"]
    )  # fmt: skip
    log = (out / "gpu_check.log").read_text(encoding="utf-8")
    assert all(f"===== {name}: " in log for name in STAGES)


def test_a_stage_past_its_cap_is_stopped_and_read_as_far_as_it_came(tmp_path: Path) -> None:
    """SIGTERM at the cap: the training finishes its update and saves last.pt, from which the
    steps and validations are read; no test scores."""
    run_dir = tmp_path / "run"
    endless = (
        sys.executable, "scripts/train.py", *rehearsal_overrides(tmp_path),
        "train.max_steps=1000000", "train.max_epochs=1000000", "train.patience=0",
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    outcome = run_stage(Stage("quickstart", "endless", endless, 0), 20.0, tmp_path / "log")
    assert outcome.stopped_at_cap and outcome.wall_seconds >= 20.0
    assert outcome.exit_code == 128 + 15, outcome.output[-3000:]  # the run's own stop
    run = training_run(run_dir, outcome.output)
    assert run["read_from"] == "last.pt" and not run["finished"] and run["test"] is None
    assert run["steps"] > 0 and run["validations"] >= 1


def test_the_caps_share_the_budget_among_the_stages_chosen() -> None:
    stages = [Stage("a", "", (), 100.0), Stage("b", "", (), 50.0)]
    assert caps(stages, 300.0) == {"a": 200.0, "b": 100.0}
    assert chosen_stages("sweep, cuda_tests") == ["cuda_tests", "sweep"]  # in their order
    assert chosen_stages(None) == list(STAGES)


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">
<testsuite name="pytest" errors="0" failures="1" skipped="1" tests="3" time="12.5">
<testcase classname="tests.test_cuda" name="test_a" time="1"/>
<testcase classname="tests.test_cuda" name="test_b" time="1">
  <failure message="x">x</failure></testcase>
<testcase classname="tests.test_cuda_runs" name="test_c" time="0">
  <skipped message="why"/></testcase>
</testsuite></testsuites>"""


#: What ``pytest --verbosity=1`` under pytest-xdist printed before it was stopped.
STOPPED = """[gw1] [ 10%] PASSED tests/test_cuda.py::test_a[additive-bahdanau-fused]
[gw0] [ 20%] FAILED tests/test_cuda_runs.py::test_b
[gw2] [ 30%] PASSED tests/test_cuda.py::test_c
"""


def test_the_pytest_report_is_read_as_it_is_or_its_log_when_stopped(tmp_path: Path) -> None:
    report = tmp_path / "cuda_tests.xml"
    assert cuda_tests(report, STOPPED) == {  # stopped before it wrote the report
        "report": None,
        "ended": 3,
        "passed": 2,
        "failures": ["tests/test_cuda_runs.py::test_b"],
    }
    report.write_text(JUNIT, encoding="utf-8")
    read = cuda_tests(report)
    assert (read["tests"], read["passed"], read["failed"], read["skipped"]) == (3, 1, 1, 1)
    assert read["failures"] == ["tests.test_cuda::test_b"] and read["skip_reasons"] == ["why"]
    assert read["seconds"] == pytest.approx(12.5)
