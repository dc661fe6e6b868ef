"""The benchmark run (seq2seq.analysis.bench.run): options, tiny overrides, and a tiny
end-to-end run through the real CLI that must write every field of bench.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from seq2seq.analysis.bench import BenchOptions, processes, tiny_overrides
from seq2seq.analysis.bench.measure import time_to_target, wall_budget
from seq2seq.model.attention import ATTENTION_TYPES
from seq2seq.training.state import TrainState
from tests.helpers.runs import run_script


def test_tiny_overrides_leave_a_user_chosen_corpus_alone(tmp_path: Path) -> None:
    mine = tiny_overrides(["data=tsv", "data.dir=x"], tmp_path)
    assert not any(o.startswith("data.train_size") for o in mine)
    assert mine[-2:] == ["data=tsv", "data.dir=x"]
    synthetic = tiny_overrides(["model.hidden_size=8"], tmp_path)
    assert f"data.dir={tmp_path}" in synthetic and synthetic[-1] == "model.hidden_size=8"


def test_options_fill_mode_defaults_under_given_values() -> None:
    tiny = BenchOptions.create(["x=1"], tiny=True, seconds=None, rounds=2)
    assert (tiny.seconds, tiny.rounds, tiny.overrides) == (1.0, 2, ("x=1",))
    assert BenchOptions.create().time_budget == BenchOptions.time_budget > tiny.time_budget


BENCH_FIELDS = {
    "machine",
    "config",
    "training",
    "reference",
    "speedup_vs_reference",
    "gemm_gflops",
    "gemm_gflops_at_threads",
    "gemm_gflops_per_core",
    "gemm_threads",
    "gemm",
    "achieved_gflops",
    "fraction_of_peak",
    "flop_count_check",
    "decoding",
    "time_to_99_s",
    "time_to_99_gflop",
    "flops_to_99",
    "flops_spent",
    "time_to_99",
    "peak_memory_mb",
    "peak_memory_source",
    "peak_rss_mb",
    "bench_wall_seconds",
    "processes",
    "processes_skipped",
}


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def test_tiny_benchmark_writes_every_field(tmp_path: Path, toy_corpus: Path) -> None:
    out = tmp_path / "bench.json"
    result = run_script(
        "bench.py",
        "--tiny",
        "data=tsv",
        f"data.dir={toy_corpus}",
        "device=cpu",
        "train.num_threads=1",  # the test machine is shared; one thread is steadier
        "--out",
        str(out),
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reference (tutorial)" in result.stdout and "GFLOP/s" in result.stdout
    assert "on one core" in result.stdout and "FlopCounterMode" in result.stdout
    bench = json.loads(out.read_text(encoding="utf-8"))
    assert set(bench) == BENCH_FIELDS

    other = ["additive/luong", "dot/luong", "multihead/luong"]  # the default is bahdanau
    assert set(bench["training"]) == {*ATTENTION_TYPES, *other}
    for entry in [*bench["training"].values(), bench["reference"]]:
        for key in ("tokens_per_s", "tokens", "batches", "seconds", "achieved_gflops"):
            assert _positive(entry[key]), (key, entry)
        fraction = entry["achieved_gflops"] / bench["gemm_gflops_at_threads"]
        assert entry["fraction_of_peak"] == pytest.approx(fraction) and fraction > 0
        assert 0 <= entry["target_padding_share"] < 1
    assert bench["reference"]["model"] == "TutorialSeq2Seq"
    ref = bench["reference"]["tokens_per_s"]
    for name, entry in bench["training"].items():
        assert bench["speedup_vs_reference"][name] == pytest.approx(entry["tokens_per_s"] / ref)
    # The reference pads to the corpus maximum; the trainer's buckets pad less.
    assert (
        bench["reference"]["target_padding_share"]
        > bench["training"]["additive"]["target_padding_share"]
    )

    for key in (
        "gemm_gflops",
        "gemm_gflops_at_threads",
        "gemm_gflops_per_core",
        "achieved_gflops",
        "fraction_of_peak",
        "peak_memory_mb",
        "bench_wall_seconds",
    ):
        assert _positive(bench[key]), key
    assert bench["achieved_gflops"] == bench["training"]["additive"]["achieved_gflops"]
    assert bench["fraction_of_peak"] == bench["training"]["additive"]["fraction_of_peak"]
    assert bench["gemm_threads"] == 1 == bench["gemm"]["threads"]  # train.num_threads=1
    assert bench["gemm_gflops"] == bench["gemm"]["gflops"]

    check = bench["flop_count_check"]
    assert set(check) == {*bench["training"], "reference"}
    for name, entry in check.items():
        assert set(entry) == {"counted", "flop_counter", "ratio"}
        assert isinstance(entry["counted"], int) and isinstance(entry["flop_counter"], int)
        assert _positive(entry["counted"]) and _positive(entry["flop_counter"]), name
        assert entry["ratio"] == pytest.approx(entry["counted"] / entry["flop_counter"])
    decoding = bench["decoding"]
    assert _positive(decoding["greedy_sentences_per_s"])
    assert _positive(decoding["beam_sentences_per_s"])
    assert decoding["beam_size"] == 5 and decoding["sentences"] == 60

    assert "time_to_99_s" in bench
    assert bench["time_to_99_s"] is None or _positive(bench["time_to_99_s"])
    assert bench["time_to_99"]["reached"] == (bench["time_to_99_s"] is not None)
    # Tiny mode's target is 0, reached at the first validation: every FLOP figure is there.
    assert bench["time_to_99"]["reached"]
    assert isinstance(bench["flops_to_99"], int) and _positive(bench["flops_to_99"])
    assert bench["flops_to_99"] == bench["time_to_99"]["flops"]
    assert bench["flops_spent"] == bench["time_to_99"]["flops_spent"] >= bench["flops_to_99"]
    assert bench["time_to_99_gflop"] == pytest.approx(
        bench["time_to_99_s"] * bench["gemm_gflops_per_core"]
    )
    assert 0 <= bench["time_to_99"]["best_exact_match"] <= 1
    curve = bench["time_to_99"]["curve"]
    assert curve and curve[-1]["step"] == bench["time_to_99"]["steps_run"]
    assert max(p["valid_exact_match"] for p in curve) == bench["time_to_99"]["best_exact_match"]

    processes = bench["processes"]  # this machine has 2 cores
    assert bench["processes_skipped"] is None
    assert set(processes) == {"1", "2", "speedup"}
    assert set(processes["1"]) == {"tokens_per_s", "steps", "wall_s"}
    assert set(processes["2"]) == {"tokens_per_s", "steps", "wall_s", "time_to_99_s", "time_to_99"}
    for entry in (processes["1"], processes["2"]):
        assert _positive(entry["tokens_per_s"]) and _positive(entry["wall_s"])
        assert isinstance(entry["steps"], int) and entry["steps"] == 8  # tiny --ddp-steps
    assert processes["2"]["time_to_99_s"] is None is processes["2"]["time_to_99"]  # off
    assert _positive(processes["speedup"])
    assert processes["speedup"] == pytest.approx(
        processes["2"]["tokens_per_s"] / processes["1"]["tokens_per_s"]
    )
    assert "processes (DDP, 8 steps): 1 →" in result.stdout

    machine = bench["machine"]
    assert machine["cpu"] and machine["torch"] == torch.__version__
    assert machine["device"] == "cpu" and machine["torch_threads"] == 1


def test_time_to_target_not_reached_still_counts_the_flops_spent(
    tmp_path: Path, toy_corpus: Path
) -> None:
    """Two steps (``train.max_steps``) leave the model far from exact match 1."""
    overrides = [
        "data=tsv",
        f"data.dir={toy_corpus}",
        "device=cpu",
        "train.num_threads=1",
        "model.embed_size=8",
        "model.hidden_size=8",
        "train.batch_size=8",
        "train.max_steps=2",
    ]
    result, _ = time_to_target(overrides, tmp_path, target=1.0, budget_s=600.0)
    assert not result["reached"] and result["seconds"] is None and result["flops"] is None
    assert result["steps_run"] == 2
    assert isinstance(result["flops_spent"], int) and result["flops_spent"] > 0


def test_wall_budget_holds_once_its_time_has_passed() -> None:
    assert wall_budget(0.0)(TrainState())
    assert not wall_budget(3600.0)(TrainState())


def test_processes_are_skipped_with_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    reason = processes.unavailable(torch.device("cpu"))
    assert reason is not None and "1 CPU core" in reason
    assert processes.format_processes(None, reason) == [f"processes: skipped ({reason})"]


def test_two_process_time_to_target_stops_at_the_budget(
    tmp_path: Path, toy_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the budget the launcher gets SIGTERM; the result says not reached, no error."""
    monkeypatch.setattr(processes, "START_ALLOWANCE_S", 0.0)
    overrides = [
        "data=tsv",
        f"data.dir={toy_corpus}",
        "device=cpu",
        "model.embed_size=8",
        "model.hidden_size=8",
        "train.batch_size=8",
        "train.eval_every=2",
        "train.max_steps=100000",
    ]
    result = processes.time_to_target(2, overrides, 1.0, 15.0, tmp_path / "run")
    assert not result["reached"] and result["seconds"] is None and result["step"] is None
    assert 15.0 <= result["wall_seconds_used"] < 15.0 + processes.STOP_GRACE_S
    assert 0 <= result["best_exact_match"] <= 1
    assert (tmp_path / "run" / "checkpoints" / "last.pt").exists()  # stopped, not killed
