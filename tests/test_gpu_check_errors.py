"""scripts/gpu_check.py with bad input: one clear line, a non-zero exit, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.bad_input import Case, Outcome, Shared, check_fails_cleanly, outcomes_fixture


def out_folder(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {}


def nothing_written(paths: dict[str, Path], message: str) -> None:
    assert not (paths["tmp"] / "out").exists()


def gpu_check(*args: str) -> tuple[str, ...]:
    return ("--out", "{tmp}/out", *args)


#: With no GPU visible (CUDA_VISIBLE_DEVICES empty: so also on a GPU machine).
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}

CASES = [
    Case("gpu-check-unknown-stage", "gpu_check.py", gpu_check("--stages", "cuda_tests,warp"),
         ("--stages cuda_tests,warp: warp is not a stage of the GPU check; choose from "
          "cuda_tests, quickstart, profile, bench, sweep",),
         prepare=out_folder, check=nothing_written),
    Case("gpu-check-no-stage", "gpu_check.py", gpu_check("--stages", ","),
         ("--stages ,: no stage; choose from cuda_tests, quickstart",),
         prepare=out_folder, check=nothing_written),
    Case("gpu-check-budget", "gpu_check.py", gpu_check("--budget", "0"),
         ("--budget 0 must be a positive number of seconds",),
         prepare=out_folder, check=nothing_written),
    Case("gpu-check-no-out", "gpu_check.py", ("--rehearse",),
         ("--out DIR is missing: the folder gpu.json and the logs are written to",),
         prepare=out_folder),
    Case("gpu-check-no-gpu", "gpu_check.py", gpu_check(),
         ("no CUDA device is visible (nvidia-smi lists the GPUs): the GPU check needs one; on "
          "a CPU machine, --rehearse runs its stages tiny and --dry-run lists them",),
         prepare=out_folder, env=NO_GPU, check=nothing_written),
]  # fmt: skip


outcomes = outcomes_fixture(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_bad_input_fails_cleanly(case: Case, outcomes: dict[str, Outcome]) -> None:
    check_fails_cleanly(case, outcomes[case.id])
