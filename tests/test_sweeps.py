"""Sweeps (``-m``): every job trains in a folder of its own that names its swept values, and
compare.py groups the runs by them; through hydra-submitit-launcher's local launcher, the code
path of Slurm sweeps (``hydra/launcher=submitit_slurm``: pickled jobs, submitit's job runner)
without a cluster."""

from __future__ import annotations

import importlib.util
import json

import pytest

from seq2seq.config.compose import CONF_DIR
from seq2seq.config.schema import register_configs
from seq2seq.launch.sweep import SweepPlan
from tests.helpers.runs import TINY_OVERRIDES, run_script

SHORT = [o for o in TINY_OVERRIDES if not o.startswith(("train.max_steps", "train.eval"))]
SHORT += ["train.max_steps=12", "train.eval_every=12", "train.num_threads=1"]


@pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None,
    reason="hydra-submitit-launcher is not installed (pip install -e '.[cluster]')",
)
def test_two_job_sweep_through_submitit_local(toy_corpus, tmp_path) -> None:
    sweep = tmp_path / "sweep"
    result = run_script(
        "train.py", "-m", "hydra/launcher=submitit_local", "attention=none,additive", *SHORT,
        f"data.dir={toy_corpus}", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for attention in ("none", "additive"):
        run = sweep / f"{attention}_seed0"
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        assert (metrics["attention"], metrics["steps"]) == (attention, 12)
        assert (run / "train.log").is_file() and (run / "checkpoints/best.pt").is_file()
    assert (sweep / ".submitit").is_dir()  # the jobs ran through submitit, not in-process


def test_a_hyperparameter_sweep_trains_every_job_and_compare_groups_them(
    toy_corpus, tmp_path
) -> None:
    """A sweep over model.hidden_size and seed: four runs in four folders, and two rows in
    compare.py's table (each over both seeds)."""
    sweep = tmp_path / "sweep"
    fixed = [o for o in SHORT if not o.startswith("model.hidden_size=")]
    result = run_script(
        "train.py", "-m", "model.hidden_size=32,48", "seed=0,1", *fixed,
        f"data.dir={toy_corpus}", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    folders = sorted(str(p.parent.relative_to(sweep)) for p in sweep.rglob("metrics.json"))
    assert folders == [
        f"additive_seed{seed}/model.hidden_size={hidden}" for seed in (0, 1) for hidden in (32, 48)
    ]
    compared = run_script("compare.py", str(sweep))
    assert compared.returncode == 0, compared.stderr[-3000:]
    report = json.loads((sweep / "comparison.json").read_text(encoding="utf-8"))
    rows = [(v["variant"], v["settings"], v["seeds"]) for v in report["variants"]]
    assert rows == [
        ("additive model.hidden_size=32", {"model.hidden_size": 32}, [0, 1]),
        ("additive model.hidden_size=48", {"model.hidden_size": 48}, [0, 1]),
    ]
    assert "| additive model.hidden_size=48 | 2 |" in compared.stdout


def test_the_canonical_comparison_keeps_its_folder_names_and_checks_every_job() -> None:
    """``+experiment=compare`` sweeps the variant and the seed, which its folder names
    (``additive_seed0``): no folder is added below them; its 15 jobs all check out."""
    from hydra import compose, initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        config = compose("config", ["+experiment=compare"], return_hydra_config=True)
        plan = SweepPlan.of(config)
        assert plan is not None and len(plan.jobs) == 15
        assert plan.swept == ["variant", "seed"] and plan.unnamed(config) == []
        plan.check()
        before = list(config.hydra.overrides.hydra)
        plan.name_folders(config)
        assert list(config.hydra.overrides.hydra) == before
