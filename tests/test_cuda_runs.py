"""The entry points on a CUDA GPU, as a learner on a GPU notebook runs them (marked ``cuda``:
skipped where no CUDA device is visible, see tests/helpers/cuda.py): ``train.py device=cuda``
→ ``evaluate.py`` → ``translate.py --heatmap`` → ``serve.py``; a run trained on CUDA resumes
and evaluates on the CPU, and one trained on the CPU on CUDA; ``train.processes=auto`` starts
one process per GPU (over nccl from two GPUs; one GPU is a world of one, whose nccl start
tests/test_cuda.py checks); ``bench.py device=cuda --tiny`` and its ``--profile``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from seq2seq.evaluation.summary import RunSummary
from tests.helpers.explorer import start_server, translate
from tests.helpers.runs import SHARED_RUN_OVERRIDES, TINY_OVERRIDES, TOY_LEXICON, run_script

pytestmark = pytest.mark.cuda

ENGLISH = {*TOY_LEXICON.values(), "<unk>"}


def train(run_dir: Path, corpus: Path, *extra: str) -> str:
    """``train.py`` with the shared tiny runs' settings and ``extra``; returns train.log."""
    result = run_script(
        "train.py", *SHARED_RUN_OVERRIDES, f"data.dir={corpus}", "attention=additive", *extra,
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return (run_dir / "train.log").read_text(encoding="utf-8")


def resume_on(device: str, run_dir: Path, corpus: Path) -> str:
    """Resume the run in ``run_dir`` on ``device`` for 12 more steps; returns train.log."""
    log = train(
        run_dir, corpus, f"device={device}", "train.max_steps=36", "train.max_epochs=100",
        "resume=true",
    )  # fmt: skip
    assert RunSummary.load(run_dir / "metrics.json").steps == 36
    return log


def evaluate_on(device: str, run_dir: Path) -> dict:
    """``evaluate.py --device DEVICE`` on ``run_dir``; returns the evaluation it recorded."""
    result = run_script("evaluate.py", str(run_dir), "--device", device, "--beam-size", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "BLEU" in result.stdout and "exact match" in result.stdout
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    (evaluation,) = metrics["evaluations"].values()
    return evaluation


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory: pytest.TempPathFactory, toy_corpus: Path) -> Path:
    """A tiny additive run trained with ``device=cuda`` (shared: tests work on copies)."""
    run_dir = tmp_path_factory.mktemp("cuda") / "run"
    log = train(run_dir, toy_corpus, "device=cuda")
    assert "processes: world size 1, backend none, device cuda" in log
    return run_dir


def test_train_on_cuda_then_evaluate_translate_with_a_heatmap_and_serve(
    cuda_run: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(cuda_run, run_dir)
    summary = RunSummary.load(run_dir / "metrics.json")
    assert summary.steps == 24 and summary.test.aer is not None
    evaluation = evaluate_on("cuda", run_dir)
    assert evaluation["checkpoint"] == "best.pt" and evaluation["beam_size"] == 2

    heatmap = tmp_path / "love.png"
    result = run_script(
        "translate.py", str(run_dir), "我 爱 中国", "--heatmap", str(heatmap), "--device", "cuda"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = result.stdout.splitlines()
    assert set(line.split()) <= ENGLISH and heatmap.stat().st_size > 1000

    server = start_server(run_dir, extra=("--device", "cuda"))
    status, answer = translate(server.url, "我 爱 中国", beam_size=2)
    code, stderr = server.stop()
    assert status == 200 and (code, stderr.strip()) == (130, "interrupted")
    (shown,) = answer["runs"]
    assert set(shown["output"]) <= ENGLISH and shown["views"]


def test_a_run_trained_on_cuda_resumes_and_evaluates_on_the_cpu(
    cuda_run: Path, toy_corpus: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(cuda_run, run_dir)
    log = resume_on("cpu", run_dir, toy_corpus)
    assert "device cuda" in log and "resumed from" in log and log.count("device cpu") == 1
    best = RunSummary.load(run_dir / "metrics.json").best_step
    assert evaluate_on("cpu", run_dir)["step"] == best


def test_a_run_trained_on_the_cpu_resumes_and_evaluates_on_cuda(
    tiny_run, toy_corpus: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run("additive"), run_dir)
    log = resume_on("cuda", run_dir, toy_corpus)
    assert "device cpu" in log and "resumed from" in log and log.count("device cuda") == 1
    best = RunSummary.load(run_dir / "metrics.json").best_step
    assert evaluate_on("cuda", run_dir)["step"] == best


def test_auto_trains_one_process_per_gpu(toy_corpus: Path, tmp_path: Path) -> None:
    """``train.processes=auto`` on CUDA: one DDP process per visible GPU over nccl (from two
    GPUs), one process alone on a single GPU."""
    gpus = torch.cuda.device_count()
    run_dir = tmp_path / "run"
    result = run_script(
        "train.py", *TINY_OVERRIDES, f"data.dir={toy_corpus}", "device=cuda",
        "train.processes=auto", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    distributed = RunSummary.load(run_dir / "metrics.json").distributed
    assert distributed is not None and distributed.world_size == gpus
    backend = "nccl" if gpus > 1 else None
    assert distributed.backend == backend
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    assert f"world size {gpus}, backend {backend or 'none'}, device cuda" in log


def test_the_tiny_benchmark_and_profile_run_on_cuda(toy_corpus: Path, tmp_path: Path) -> None:
    data = ["data=tsv", f"data.dir={toy_corpus}", "device=cuda"]
    result = run_script("bench.py", "--tiny", *data, "--out", str(tmp_path / "bench.json"))
    assert result.returncode == 0, result.stderr[-3000:]
    bench = json.loads((tmp_path / "bench.json").read_text(encoding="utf-8"))
    assert bench["machine"]["device"] == "cuda" and bench["machine"]["gpu"]
    assert {"additive", "additive (textbook)", "transformer"} <= bench["training"].keys()
    assert all(row["tokens_per_s"] > 0 for row in bench["training"].values())
    assert bench["peak_memory_source"] == "torch.cuda.max_memory_allocated"
    assert bench["decoding"]["greedy_sentences_per_s"] > 0
    assert bench["decoding"]["beam_sentences_per_s"] > 0
    if torch.cuda.device_count() < 2:
        assert "2 processes need 2 GPUs" in bench["processes_skipped"]

    out = tmp_path / "profile.json"
    result = run_script("bench.py", "--profile", "--tiny", *data, "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert [row["name"] for row in rows] == ["additive (fused)", "additive (textbook)"]
    assert all(row["kernels_per_step"] > 0 and row["busy_share"] > 0 for row in rows)
