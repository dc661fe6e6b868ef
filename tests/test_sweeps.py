"""Sweeps through hydra-submitit-launcher's local launcher: the code path of Slurm sweeps
(``hydra/launcher=submitit_slurm``: pickled jobs, submitit's job runner) without a cluster."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.helpers.runs import TINY_OVERRIDES, run_script

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None,
    reason="hydra-submitit-launcher is not installed (pip install -e '.[cluster]')",
)


def test_two_job_sweep_through_submitit_local(toy_corpus, tmp_path) -> None:
    sweep = tmp_path / "sweep"
    overrides = [o for o in TINY_OVERRIDES if not o.startswith(("train.max_steps", "train.eval"))]
    result = run_script(
        "train.py", "-m", "hydra/launcher=submitit_local", "attention=none,additive",
        *overrides, "train.max_steps=12", "train.eval_every=12",
        f"data.dir={toy_corpus}", "train.num_threads=1", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for attention in ("none", "additive"):
        run = sweep / f"{attention}_seed0"
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        assert (metrics["attention"], metrics["steps"]) == (attention, 12)
        assert (run / "train.log").is_file() and (run / "checkpoints/best.pt").is_file()
    assert (sweep / ".submitit").is_dir()  # the jobs ran through submitit, not in-process
