"""The benchmark run (seq2seq.analysis.bench.run): options, tiny overrides, a tiny end-to-end
run through the real CLI that must write every field of bench.json, and the time to target
through the real ``scripts/train.py`` (not reached; stopped by the budget on 2 processes)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
import torch

from seq2seq.analysis.bench import BenchOptions, contestant_overrides, processes, tiny_overrides
from seq2seq.analysis.bench.flops import train_flops
from seq2seq.analysis.bench.measure import batch_shape, time_to_target
from seq2seq.analysis.bench.run import format_time_to_target
from seq2seq.analysis.results import load_records
from seq2seq.config.compose import load_config
from seq2seq.model.attention import ATTENTION_TYPES
from tests.helpers.runs import run_script


def test_tiny_overrides_leave_a_user_chosen_corpus_alone(tmp_path: Path) -> None:
    mine = tiny_overrides(["data=tsv", "data.dir=x"], tmp_path)
    assert not any(o.startswith("data.train_size") for o in mine)
    assert mine[-2:] == ["data=tsv", "data.dir=x"]
    synthetic = tiny_overrides(["model.hidden_size=8"], tmp_path)
    assert f"data.dir={tmp_path}" in synthetic and synthetic[-1] == "model.hidden_size=8"


def test_tiny_overrides_train_on_one_process_unless_the_user_chose() -> None:
    assert "train.processes=1" in tiny_overrides([], Path("corpus"))
    chosen = tiny_overrides(["train.processes=2"], Path("corpus"))
    assert [o for o in chosen if o.startswith("train.processes")] == ["train.processes=2"]


def rows(*overrides: str, **options: object) -> dict[str, list[str]]:
    """The benchmark's rows and their overrides for a config of ``overrides``."""
    chosen = BenchOptions.create(overrides, **options)  # type: ignore[arg-type]
    return dict(contestant_overrides(chosen, load_config(list(overrides))))


def test_each_bahdanau_row_with_weights_is_also_measured_on_the_other_recurrence() -> None:
    default = rows()
    assert default["additive (textbook)"] == ["attention=additive", "model.recurrence=textbook"]
    assert {"dot (textbook)", "multihead (textbook)"} <= default.keys()
    assert not [row for row in default if row.startswith(("none (", "additive/luong ("))]
    # configured textbook: the fused path is the other one
    assert rows("model.recurrence=textbook")["dot (fused)"] == [
        "attention=dot",
        "model.recurrence=fused",
    ]
    # configured Luong: the Bahdanau rows are the other arrangement's
    luong = rows("model.decoder=luong")
    assert luong["additive/bahdanau (textbook)"] == [
        "attention=additive",
        "model.decoder=bahdanau",
        "model.recurrence=textbook",
    ]
    assert not [row for row in luong if row.endswith("(textbook)") and "/" not in row]
    assert not [row for row in rows(other_recurrence=False) if row.endswith(")")]


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


TIME_TO_99_FIELDS = {
    "target",
    "seconds",
    "step",
    "flops",
    "flops_spent",
    "reached",
    "best_exact_match",
    "steps_run",
    "train_seconds_used",
    "wall_seconds_used",
    "budget_s",
    "wall_limit_s",
    "stopped_by_budget",
    "eval_every",
    "attention",
    "train_processes",
    "processes",
    "read_from",
    "command",
    "model",
    "curve",
}
CURVE_FIELDS = {"step", "train_seconds", "flops", "valid_exact_match"}
DECODING_FIELDS = {
    "sentences",
    "batch_size",
    "beam_size",
    "greedy_sentences_per_s",
    "greedy_seconds",
    "greedy_mean_output_words",
    "beam_sentences_per_s",
    "beam_seconds",
    "beam_mean_output_words",
    "model_exact_match",
}


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def test_tiny_benchmark_writes_every_field(tmp_path: Path, toy_corpus: Path) -> None:
    out, results = tmp_path / "bench.json", tmp_path / "results" / "bench.json"
    arguments = [
        "--tiny",
        "data=tsv",
        f"data.dir={toy_corpus}",
        "device=cpu",
        "--out",
        str(out),
        "train.num_threads=1",  # after an option (was refused); the shared machine: one thread
        "--record",
        str(results),
        "--beside",
        "the test suite",
    ]
    result = run_script("bench.py", *arguments, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reference (tutorial)" in result.stdout and "GFLOP/s" in result.stdout
    assert "on one core" in result.stdout and "FlopCounterMode" in result.stdout
    bench = json.loads(out.read_text(encoding="utf-8"))
    assert set(bench) == BENCH_FIELDS

    other = ["additive/luong", "dot/luong", "multihead/luong"]  # the default is bahdanau
    textbook = ["additive (textbook)", "dot (textbook)", "multihead (textbook)"]
    assert set(bench["training"]) == {*ATTENTION_TYPES, *other, *textbook, "transformer"}
    assert bench["config"]["recurrence"] == "fused"
    assert "multihead (textbook)" in result.stdout
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

    assert set(decoding) == DECODING_FIELDS
    t = bench["time_to_99"]
    assert set(t) == TIME_TO_99_FIELDS
    # Tiny mode's target is 0, reached at the first validation: every FLOP figure is there.
    assert t["reached"] and t["target"] == 0.0 and not t["stopped_by_budget"]
    assert _positive(bench["time_to_99_s"]) and bench["time_to_99_s"] == t["seconds"]
    assert bench["time_to_99_gflop"] == pytest.approx(
        bench["time_to_99_s"] * bench["gemm_gflops_per_core"]
    )
    # The default launch's run, as a subprocess: tiny mode trains on one process.
    assert t["processes"] == 1 and t["train_processes"] == "1" and t["read_from"] == "metrics.json"
    assert t["command"][1].endswith("train.py") and "train.processes=1" in t["command"]
    assert {"train.stop_at_exact_match=0.0", "train.patience=0"} <= set(t["command"])
    assert t["step"] == t["eval_every"] == 5 == t["steps_run"]  # stopped at the first validation
    assert t["budget_s"] == 60.0 == t["wall_limit_s"]
    assert t["seconds"] == pytest.approx(t["train_seconds_used"], abs=0.01)  # 2 decimals kept
    assert t["train_seconds_used"] < t["wall_seconds_used"]
    assert isinstance(bench["flops_to_99"], int) and _positive(bench["flops_to_99"])
    assert bench["flops_to_99"] == t["flops"] and bench["flops_spent"] == t["flops_spent"]
    assert bench["flops_spent"] >= bench["flops_to_99"]
    # The curve: every validation, each with the FLOPs through its step.
    curve = t["curve"]
    assert curve and all(set(p) == CURVE_FIELDS for p in curve)
    assert curve[-1]["step"] == t["steps_run"] and curve[-1]["flops"] == t["flops_spent"]
    at_target = next(p for p in curve if p["valid_exact_match"] >= t["target"])
    assert (at_target["step"], at_target["flops"]) == (t["step"], t["flops"])
    assert at_target["train_seconds"] == t["seconds"]
    steps = [p["step"] for p in curve]
    assert steps == sorted(steps) and [p["flops"] for p in curve] == sorted(
        p["flops"] for p in curve
    )
    assert 0 <= t["best_exact_match"] <= 1
    assert max(p["valid_exact_match"] for p in curve) == t["best_exact_match"]
    # Decoding ran best.pt of the run (the only validation: step 5).
    assert t["model"] == {
        "checkpoint": "best.pt",
        "step": 5,
        "valid_exact_match": curve[0]["valid_exact_match"],
    }
    assert decoding["model_exact_match"] == t["model"]["valid_exact_match"]
    assert "time to 0% valid exact match (additive, 1 process): " in result.stdout
    assert "s of training (step 5, " in result.stdout and "GFLOP by the benchmark's count" in (
        result.stdout
    )
    assert "the run's best.pt of step 5" in result.stdout

    processes_ = bench["processes"]  # this machine has 2 cores
    assert bench["processes_skipped"] is None
    assert set(processes_) == {"1", "2", "speedup"}
    for entry in (processes_["1"], processes_["2"]):
        assert set(entry) == {"tokens_per_s", "steps", "wall_s"}
        assert _positive(entry["tokens_per_s"]) and _positive(entry["wall_s"])
        assert isinstance(entry["steps"], int) and entry["steps"] == 8  # tiny --ddp-steps
    assert _positive(processes_["speedup"])
    assert processes_["speedup"] == pytest.approx(
        processes_["2"]["tokens_per_s"] / processes_["1"]["tokens_per_s"]
    )
    assert "processes (DDP, 8 steps): 1 →" in result.stdout

    machine = bench["machine"]
    assert machine["cpu"] and machine["torch"] == torch.__version__
    assert machine["device"] == "cpu" and machine["torch_threads"] == 1

    # --record: bench.json's document as the one record "bench", with how it was made.
    (record,) = load_records(results)
    assert record.key == "bench" and record.data == bench
    made = record.provenance
    assert made.command == shlex.join(["python", "scripts/bench.py", *arguments])
    assert made.wall_seconds == round(bench["bench_wall_seconds"], 1)
    assert made.machine.cpu == machine["cpu"] and made.machine.torch == torch.__version__
    assert made.beside == "the test suite"


def test_a_results_file_that_is_not_one_is_refused_before_measuring(tmp_path: Path) -> None:
    """``--record`` names a file that holds something else: one line, before the minutes of
    measuring, and neither file written."""
    results, out = tmp_path / "notes.json", tmp_path / "bench.json"
    results.write_text('{"notes": []}', encoding="utf-8")
    result = run_script("bench.py", "--tiny", "--out", str(out), "--record", str(results))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {results} is not a results file: 'records' should be a list of records"
    ]
    assert not out.exists() and results.read_text(encoding="utf-8") == '{"notes": []}'


SMALL = [
    "device=cpu",
    "train.num_threads=1",
    "model.embed_size=8",
    "model.hidden_size=8",
    "train.batch_size=8",
]


def test_time_to_target_not_reached_still_counts_the_flops_spent(
    tmp_path: Path, toy_corpus: Path
) -> None:
    """Two steps (``train.max_steps``) leave the model far from exact match 1: no time and
    no FLOPs to the target, but the FLOPs of both steps spent, counted from the sampler."""
    overrides = [
        "data=tsv",
        f"data.dir={toy_corpus}",
        *SMALL,
        "train.max_steps=2",
        "train.processes=1",
    ]
    result, trainer = time_to_target(overrides, tmp_path, target=1.0, budget_s=600.0)
    assert not result["reached"] and result["seconds"] is None and result["step"] is None
    assert result["flops"] is None and not result["stopped_by_budget"]
    assert result["steps_run"] == 2 and result["processes"] == 1
    assert result["read_from"] == "metrics.json"
    trainer.sampler.set_epoch(0)
    batches = trainer.sampler.batches()[:2]  # the run's first two steps
    spent = sum(train_flops(trainer.spec, batch_shape(trainer.train_set, b)) for b in batches)
    assert isinstance(result["flops_spent"], int) and result["flops_spent"] == spent > 0
    assert [p["step"] for p in result["curve"]] == [2]  # the final validation
    assert result["curve"][0]["flops"] == spent
    assert result["model"]["checkpoint"] == "best.pt" and result["model"]["step"] == 2
    line = format_time_to_target(result, None)
    assert line.startswith("time to 100% valid exact match (additive, 1 process): not reached;")
    assert "(2 steps, " in line and "GFLOP by the benchmark's count), best " in line


def test_processes_are_skipped_with_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    reason = processes.unavailable(torch.device("cpu"))
    assert reason is not None and "1 CPU core" in reason
    assert processes.format_processes(None, reason) == [f"processes: skipped ({reason})"]


def test_a_run_that_saved_nothing_reports_the_planned_processes(tmp_path: Path) -> None:
    source, state, ran = processes.read_run(tmp_path, planned=3)
    assert (source, state.step, state.history, ran) == (None, 0, [], 3)


BUDGET_S = 4.0  # of training, from the run's first step (its start is not counted)


def test_time_to_target_on_two_processes_stops_at_the_budget(
    tmp_path: Path, toy_corpus: Path
) -> None:
    """``train.processes=2``: past the budget the launching train.py gets SIGTERM, the two
    workers stop after a step and rank 0 saves last.pt, from which the history, the steps
    and the process count (its two RNG streams) are read; not reached, no error."""
    overrides = [
        "data=tsv",
        f"data.dir={toy_corpus}",
        *SMALL,
        "train.eval_every=2",
        "train.max_steps=100000",
        "train.processes=2",
    ]
    result, _ = time_to_target(overrides, tmp_path, 1.0, BUDGET_S)
    assert not result["reached"] and result["seconds"] is None and result["step"] is None
    limit = BUDGET_S
    assert result["stopped_by_budget"] and result["wall_limit_s"] == limit
    limit_with_start = limit + processes.START_LIMIT_S
    assert limit <= result["wall_seconds_used"] < limit_with_start + processes.STOP_GRACE_S
    assert (tmp_path / "run" / "checkpoints" / "last.pt").exists()  # stopped, not killed
    assert result["read_from"] == "last.pt" and result["processes"] == 2
    assert result["steps_run"] >= 2 and result["flops_spent"] > 0
    assert 0 <= result["best_exact_match"] <= 1


def test_the_profile_times_each_recurrence_at_each_batch_size(
    tmp_path: Path, toy_corpus: Path
) -> None:
    """``--profile`` on the CPU: every row timed and its operators counted; the device
    columns are a GPU's alone (null here)."""
    out = tmp_path / "profile.json"
    result = run_script(
        "bench.py", "--profile", "--tiny", "data=tsv", f"data.dir={toy_corpus}", "device=cpu",
        "train.num_threads=1", "--batch-sizes", "8,16", "--out", str(out), timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    profile = json.loads(out.read_text(encoding="utf-8"))
    rows = [(row["name"], row["batch_size"]) for row in profile["rows"]]
    assert rows == [
        ("additive (fused)", 8), ("additive (fused)", 16),
        ("additive (textbook)", 8), ("additive (textbook)", 16),
    ]  # fmt: skip
    for row in profile["rows"]:
        assert _positive(row["wall_ms_per_step"]) and _positive(row["tokens_per_s"])
        assert row["ops_per_step"] > 10 and row["steps"] == 3
        assert row["kernels_per_step"] is row["kernel_ms_per_step"] is row["busy_share"] is None
    # the textbook loop dispatches more operators per update than the fused node
    fused, textbook = profile["rows"][0], profile["rows"][2]
    assert textbook["ops_per_step"] > fused["ops_per_step"]
    assert set(profile["tables"]) == {f"{name} batch {size}" for name, size in rows}
    assert "additive (textbook)" in result.stdout and "aten::" in result.stdout


def test_batch_sizes_must_be_a_list_of_positive_numbers() -> None:
    result = run_script("bench.py", "--profile", "--batch-sizes", "64,x")
    assert result.returncode == 2
    assert "argument --batch-sizes: '64,x' is not a list of batch sizes such as 64,256" in (
        result.stderr
    )
