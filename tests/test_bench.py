"""The benchmark run (seq2seq.analysis.bench.run): options, tiny overrides, and a tiny
end-to-end run through the real CLI that must write every field of bench.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from seq2seq.analysis.bench import BenchOptions, tiny_overrides
from seq2seq.analysis.bench.measure import wall_budget
from seq2seq.model.attention import ATTENTION_TYPES
from seq2seq.training.state import TrainState
from tests.conftest import run_script


def test_tiny_overrides_leave_a_user_chosen_corpus_alone(tmp_path: Path) -> None:
    mine = tiny_overrides(["data=tsv", "data.dir=x"], tmp_path)
    assert not any(o.startswith("data.train_size") for o in mine)
    assert mine[-2:] == ["data=tsv", "data.dir=x"]
    synthetic = tiny_overrides(["model.hidden_size=8"], tmp_path)
    assert f"data.dir={tmp_path}" in synthetic and synthetic[-1] == "model.hidden_size=8"


def test_options_fill_mode_defaults_under_given_values() -> None:
    tiny = BenchOptions.create(["x=1"], tiny=True, seconds=None, rounds=2)
    assert (tiny.seconds, tiny.rounds, tiny.overrides) == (1.0, 2, ("x=1",))
    assert BenchOptions.create().time_budget == 360.0


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
    bench = json.loads(out.read_text(encoding="utf-8"))

    other = ["additive/luong", "dot/luong", "multihead/luong"]  # the default is bahdanau
    assert set(bench["training"]) == {*ATTENTION_TYPES, *other}
    for entry in [*bench["training"].values(), bench["reference"]]:
        for key in ("tokens_per_s", "tokens", "batches", "seconds", "achieved_gflops"):
            assert _positive(entry[key]), (key, entry)
        fraction = entry["achieved_gflops"] / bench["gemm_gflops"]
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
        "achieved_gflops",
        "fraction_of_peak",
        "peak_memory_mb",
        "bench_wall_seconds",
    ):
        assert _positive(bench[key]), key
    assert bench["achieved_gflops"] == bench["training"]["additive"]["achieved_gflops"]
    decoding = bench["decoding"]
    assert _positive(decoding["greedy_sentences_per_s"])
    assert _positive(decoding["beam_sentences_per_s"])
    assert decoding["beam_size"] == 5 and decoding["sentences"] == 60

    assert "time_to_99_s" in bench
    assert bench["time_to_99_s"] is None or _positive(bench["time_to_99_s"])
    assert bench["time_to_99"]["reached"] == (bench["time_to_99_s"] is not None)
    assert 0 <= bench["time_to_99"]["best_exact_match"] <= 1
    curve = bench["time_to_99"]["curve"]
    assert curve and curve[-1]["step"] == bench["time_to_99"]["steps_run"]
    assert max(p["valid_exact_match"] for p in curve) == bench["time_to_99"]["best_exact_match"]

    machine = bench["machine"]
    assert machine["cpu"] and machine["torch"] == torch.__version__
    assert machine["device"] == "cpu" and machine["torch_threads"] == 1


def test_wall_budget_holds_once_its_time_has_passed() -> None:
    assert wall_budget(0.0)(TrainState())
    assert not wall_budget(3600.0)(TrainState())
