"""What the GPU check runs: each stage's command, as a person types it from the repository
root, and the most wall time it may take; on a GPU machine at full size, or as a rehearsal
on the CPU at a tiny size (the same stages and files, so the whole path is tested without a
GPU).

The whole check must end within 8 minutes on one H100 (docs/gpu.md says what each stage gets
and why): the caps of the stages sum to :data:`BUDGET_S`, and a stage that reaches its cap is
stopped (SIGTERM: a training saves ``last.pt``) and recorded as far as it came.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

#: Wall seconds the stages may take together on the GPU machine (the device tool's command
#: gets a minute more: the wheels, the GPU's description, the records).
BUDGET_S = 450.0

#: The tests ``-m cuda`` selects: tests/test_cuda.py (in the test process) and
#: tests/test_cuda_runs.py (the entry points as subprocesses).
CUDA_TEST_FILES = ("tests/test_cuda.py", "tests/test_cuda_runs.py")


@dataclass(frozen=True)
class Stage:
    """One measurement: ``name`` keys its record in ``gpu.json``; ``argv`` starts with the
    Python that runs it; past ``cap_s`` seconds it is stopped."""

    name: str
    what: str
    argv: tuple[str, ...]
    cap_s: float
    env: tuple[tuple[str, str], ...] = ()  # set for the command (and shown with it)

    @property
    def command(self) -> str:
        """The command as typed from the repository root (``python`` for the interpreter)."""
        return " ".join([*(f"{k}={v}" for k, v in self.env), "python", *self.argv[1:]])


#: The stages in the order they run, and what each measures (``--dry-run`` lists them).
STAGES = {
    "cuda_tests": "the tests marked cuda: CPU↔CUDA parity, the entry points on CUDA",
    "quickstart": "python scripts/train.py as README's quick start has it: wall, updates, "
    "validations, test exact match",
    "profile": "one update's wall time against its kernels' busy time, fused and textbook, "
    "at two batch sizes (is the loop launch-bound?)",
    "bench": "bench.py: tokens/s of every variant on the fused and the textbook path, "
    "decoding sentences/s (greedy, beam 5)",
    "sweep": "the comparison's five variants, seed 0, as one sweep whose jobs share the GPU",
}


def rehearsal_overrides(work: Path) -> list[str]:
    """A tiny run on the CPU: what every training of a rehearsal adds (its corpus in
    ``work``; the same for every stage, so it is generated once)."""
    return [
        "device=cpu",
        "train.num_threads=1",
        "train.processes=1",
        "model.embed_size=16",
        "model.hidden_size=16",
        "train.batch_size=16",
        "train.eval_batch_size=64",
        "train.max_steps=10",
        "train.eval_every=5",
        "train.log_every=5",
        f"data.dir={work / 'corpus'}",
        "data.train_size=200",
        "data.valid_size=24",
        "data.test_size=24",
        "data.max_len=10",
        "data.samples=[]",
    ]


def plan(out: Path, work: Path, *, rehearse: bool) -> list[Stage]:
    """Every stage: on the GPU at full size (``python scripts/train.py`` as a user types
    it, ``device=auto`` taking the GPU), or with ``rehearse`` tiny on the CPU.

    ``out`` receives the files that come back (the pytest report, bench.json,
    profile.json); ``work`` holds the run folders."""
    python = sys.executable
    tiny = rehearsal_overrides(work) if rehearse else []
    bench = ["--tiny", "device=cpu", "train.num_threads=1"] if rehearse else ["device=cuda"]
    pytest = [python, "-m", "pytest", "-p", "xdist.plugin", "-p", "pytest_timeout"]
    # test by test over four workers (the slow entry-point tests side by side), each result
    # printed as it comes (read from the log if the stage is stopped before its report;
    # --verbosity, not -v: pyproject's addopts hold -q)
    tests = [*pytest, "-m", "cuda", *CUDA_TEST_FILES, "-n", "4", "--dist", "load"]
    tests += ["--verbosity=1"]
    tests += ["-p", "no:cacheprovider"]
    profile = ["--profile", *bench, "--batch-sizes", "8,16" if rehearse else "64,256"]
    # 12 rows of 2 s each; the run toward 99% (the quick start's training) 20 s from its first
    # update, then its best model decodes
    sized = [] if rehearse else ["--seconds", "2", "--rounds", "1", "--time-budget", "20"]
    sweep = [python, "scripts/train.py", "-m", "+experiment=compare", "seed=0"]
    return [
        Stage(
            "cuda_tests",
            STAGES["cuda_tests"],
            (*tests, f"--junitxml={out / 'cuda_tests.xml'}"),
            100.0,
            # only the plugins the suite uses: the GPU image's others (coverage, benchmark,
            # mock) need not suit the pytest carried beside them
            env=(("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"),),
        ),
        Stage(
            "quickstart",
            STAGES["quickstart"],
            (python, "scripts/train.py", *tiny, f"hydra.run.dir={work / 'quickstart'}"),
            140.0,
        ),
        Stage(
            "profile",
            STAGES["profile"],
            (python, "scripts/bench.py", *profile, "--out", str(out / "profile.json")),
            30.0,
        ),
        Stage(
            "bench",
            STAGES["bench"],
            (python, "scripts/bench.py", *bench, *sized, "--out", str(out / "bench.json")),
            110.0,
        ),
        Stage(
            "sweep",
            STAGES["sweep"],
            (*sweep, *tiny, f"hydra.sweep.dir={work / 'sweep'}"),
            70.0,
        ),
    ]
