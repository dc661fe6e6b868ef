"""Rendered blocks drawn from small hand-made results files: what each renderer writes into
a page (the corpus, the benchmark's views: every row a record holds, in its order, and the
fields a run may lack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seq2seq.analysis.render import render_text
from seq2seq.analysis.results import Machine, Provenance, Record, add_record
from seq2seq.errors import UserError

PROVENANCE = Provenance(
    command="python scripts/bench.py --record results/bench.json",
    commit="0" * 40,
    machine=Machine(cpu="Test CPU", cores=2, torch="2.13.0+cpu", python="3.11.7"),
    date="2026-12-07T10:00:00Z",
    wall_seconds=502.4,
)


def entry(tokens_per_s: float, gflops: float, speedup: float | None = None) -> dict[str, Any]:
    """One trainer's throughput as bench.json keeps it (GEMM peak 100 GFLOP/s, 20% padding)."""
    made = {
        "tokens_per_s": tokens_per_s,
        "tokens": 1000,
        "batches": 10,
        "seconds": 1.0,
        "achieved_gflops": gflops,
        "fraction_of_peak": gflops / 100,
        "target_padding_share": 0.2,
    }
    return made if speedup is None else made | {"speedup_vs_reference": speedup}


def bench_document(reached: bool = True, processes: bool = True) -> dict[str, Any]:
    """The fields of bench.json the views read; the training rows in the order measured,
    a textbook row among them."""
    return {
        "machine": {"cpu": "Test CPU", "torch_threads": 1, "device": "cpu"},
        "config": dict(
            data="synthetic",
            batch_size=64,
            embed_size=64,
            hidden_size=128,
            decoder="bahdanau",
            attention="additive",
        ),
        "training": {
            "additive": entry(14345.4, 47.16, 5.65),
            "additive/textbook": entry(9000.0, 30.0, 3.54),
            "transformer": entry(11209.0, 75.94, 4.41),
        },
        "reference": entry(2541.0, 15.76) | {"model": "TutorialSeq2Seq"},
        "gemm_gflops_per_core": 178.74,
        "gemm_gflops_at_threads": 100.0,
        "gemm_threads": 1,
        "decoding": {
            "sentences": 1000,
            "batch_size": 256,
            "beam_size": 5,
            "greedy_sentences_per_s": 1347.66,
            "greedy_seconds": 0.742,
            "greedy_mean_output_words": 21.04,
            "beam_sentences_per_s": 187.1,
            "beam_seconds": 5.345,
            "beam_mean_output_words": 21.0,
            "model_exact_match": 0.991 if reached else None,
        },
        "time_to_99": {
            "target": 0.99,
            "reached": reached,
            "seconds": 198.8 if reached else None,
            "step": 2500 if reached else None,
            "steps_run": 2500,
            "best_exact_match": 0.991 if reached else 0.97,
            "wall_seconds_used": 234.2,
            "budget_s": 300.0,
            "attention": "additive",
            "processes": 2,
        },
        "time_to_99_gflop": 35515.4 if reached else None,
        "processes": {
            "1": {"tokens_per_s": 15302.0, "steps": 64, "wall_s": 22.0},
            "2": {"tokens_per_s": 23467.0, "steps": 64, "wall_s": 20.0},
            "speedup": 1.5336,
        }
        if processes
        else None,
        "processes_skipped": None if processes else "1 CPU core: nothing to compare",
        "peak_memory_mb": 4920.3,
        "peak_memory_source": "ru_maxrss",
        "bench_wall_seconds": 502.4,
    }


def rendered(name: str, results: Path) -> str:
    """The body ``<!-- results: name -->`` renders to from ``results``."""
    page = f"<!-- results: {name} -->\n<!-- /results -->\n"
    return render_text(page, results).split("\n", 1)[1].rsplit("<!-- /results -->", 1)[0]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    add_record(tmp_path / "bench.json", Record("bench", PROVENANCE, bench_document()))
    return tmp_path


def test_throughput_shows_every_trainer_the_record_holds_then_the_reference(
    results: Path,
) -> None:
    assert rendered("bench.throughput", results) == (
        "| trainer | target tokens/s | GFLOP/s | of GEMM peak | padding | × reference |\n"
        "|---|---:|---:|---:|---:|---:|\n"
        "| additive | 14,345 | 47.2 | 47.2% | 20.0% | 5.65× |\n"
        "| additive/textbook | 9,000 | 30.0 | 30.0% | 20.0% | 3.54× |\n"
        "| transformer | 11,209 | 75.9 | 75.9% | 20.0% | 4.41× |\n"
        "| reference (tutorial) | 2,541 | 15.8 | 15.8% | 20.0% | 1.00× |\n"
    )


def test_decoding_names_the_searches_and_the_model(results: Path) -> None:
    assert rendered("bench.decoding", results) == (
        "| search | sentences/s | seconds | words per output |\n"
        "|---|---:|---:|---:|\n"
        "| greedy | 1,347.7 | 0.74 | 21.0 |\n"
        "| beam 5 | 187.1 | 5.34 | 21.0 |\n"
        "\n"
        "1,000 valid sentences in batches of 256 (the time-to-target run's model, valid exact "
        "match 0.991).\n"
    )


def test_summary_of_a_run_that_reached_the_target(results: Path) -> None:
    assert rendered("bench.summary", results) == (
        "| measure | value |\n"
        "|---|---:|\n"
        "| fp32 GEMM, one core | 178.7 GFLOP/s |\n"
        "| fp32 GEMM at the trainer's 1 thread(s) | 100.0 GFLOP/s |\n"
        "| scripts/train.py on 1 → 2 processes (DDP) | 15,302 → 23,467 target tokens/s "
        "(1.53×, 64 steps each) |\n"
        "| time to 99% valid exact match (additive, 2 processes) | 198.8 s of updates "
        "(step 2,500; 234 s of wall time) |\n"
        "| … × one core's GEMM rate | 35,515 GFLOP |\n"
        "| peak memory (ru_maxrss) | 4,920 MiB |\n"
    )


def test_summary_says_what_a_run_did_not_reach_and_what_was_skipped(tmp_path: Path) -> None:
    document = bench_document(reached=False, processes=False)
    add_record(tmp_path / "bench.json", Record("bench", PROVENANCE, document))
    summary = rendered("bench.summary", tmp_path)
    assert "| skipped (1 CPU core: nothing to compare) |" in summary
    assert "| not reached within 300 s (best 0.970 after 2,500 steps) |" in summary
    assert "| … × one core's GEMM rate | n/a |" in summary
    assert rendered("bench.decoding", tmp_path).endswith("(the time-to-target run's model).\n")


def test_provenance_gives_the_command_setting_machine_and_wall_time(results: Path) -> None:
    assert rendered("bench.provenance", results) == (
        "`python scripts/bench.py --record results/bench.json` (data=synthetic, batch 64, "
        "embed 64, hidden 128, decoder bahdanau, 1 thread(s) on cpu): measured 2026-12-07 on "
        "Test CPU (2 cores, CPU only), torch 2.13.0+cpu, nothing else beside it: 8.4 min of "
        "wall time.\n"
    )


def test_a_missing_benchmark_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"bench\.json holds 0 records"):
        rendered("bench.throughput", tmp_path)


MACHINE = Machine(cpu="Test CPU", cores=2, torch="2.13.0+cpu", python="3.11.7")


def corpus_results(tmp_path: Path, output: str) -> Path:
    provenance = Provenance(
        command="python scripts/make_corpus.py data.dir=/tmp/corpus",
        commit="0" * 40,
        machine=MACHINE,
        date="2026-12-06T02:07:44Z",
        wall_seconds=24.0,
        beside="nothing else",
    )
    add_record(tmp_path / "corpus.json", Record("make_corpus", provenance, {"output": output}))
    return tmp_path


def test_the_corpus_summary_is_the_command_and_its_output_in_a_code_block(
    tmp_path: Path,
) -> None:
    results = corpus_results(tmp_path, "wrote train.tsv\n  pairs: train 64000\n")
    page = "before\n<!-- results: corpus.summary -->\nstale\n<!-- /results -->\nafter\n"
    assert render_text(page, results) == (
        "before\n<!-- results: corpus.summary -->\n"
        "```\n$ python scripts/make_corpus.py data.dir=/tmp/corpus\n"
        "wrote train.tsv\n  pairs: train 64000\n```\n"
        "<!-- /results -->\nafter\n"
    )


def test_the_corpus_provenance_names_the_command_machine_date_and_wall_time(
    tmp_path: Path,
) -> None:
    results = corpus_results(tmp_path, "wrote train.tsv\n")
    page = "<!-- results: corpus.provenance -->\n<!-- /results -->"
    assert render_text(page, results) == (
        "<!-- results: corpus.provenance -->\n"
        "`python scripts/make_corpus.py data.dir=/tmp/corpus`: measured 2026-12-06 on Test CPU "
        "(2 cores, CPU only), torch 2.13.0+cpu, nothing else beside it: 24 s of wall time.\n"
        "<!-- /results -->"
    )
