"""Rendered blocks drawn from a results file: what each renderer writes into a page."""

from __future__ import annotations

from pathlib import Path

from seq2seq.analysis.render import render_text
from seq2seq.analysis.results import Machine, Provenance, Record, add_record

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
