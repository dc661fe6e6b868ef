"""Tests for seq2seq.analysis.compare.render: the markdown and CSV tables."""

from __future__ import annotations

from pathlib import Path

from seq2seq.analysis.compare import Stat, build_comparison, format_stat, load_runs, render_markdown
from tests.helpers.metrics import fake_metrics, fake_sweep, write_run


def test_format_stat() -> None:
    assert format_stat(Stat(12.345, 0.5, 3), ".2f") == "12.35 ± 0.50"
    assert format_stat(Stat(12.345, None, 1), ".2f") == "12.35 ± –"
    assert format_stat(Stat(None, None, 0), ".2f") == "n/a"
    assert format_stat(Stat(9486.0, 0.0, 3), ",.0f", show_sd=False) == "9,486"


def test_markdown_rows_and_warnings(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    extra = write_run(tmp_path / "again", fake_metrics("none", 0, bleu=11.0))
    comparison = build_comparison(load_runs([sweep, extra]))
    markdown = render_markdown(comparison)
    assert "| none | 3 (4 runs) | 11.75 ± 1.71 |" in markdown  # distinct seeds, then runs
    assert "| multihead | 1 | 25.00 ± – |" in markdown
    assert "| variant | 1-10 (8) | 11-20 (2) |" in markdown
    assert any("seed 0" in w for w in comparison.warnings)
    assert "## Warnings" in markdown


def test_the_report_says_which_scores_it_compares(tmp_path: Path) -> None:
    sweep = fake_sweep(tmp_path / "sweep")
    markdown = render_markdown(build_comparison(load_runs([sweep])))
    assert (
        "Scores: each run's own test scores, as training recorded them (`test` in "
        "metrics.json: best.pt at the run's best step, beam size 1), not the evaluations "
        "scripts/evaluate.py adds." in markdown
    )
    beam5 = fake_metrics("dot", 0) | {"test_checkpoint": "last.pt"}
    beam5["test"] = beam5["test"] | {"beam_size": 5}
    write_run(tmp_path / "sweep" / "dot_seed0", beam5)
    markdown = render_markdown(build_comparison(load_runs([sweep])))
    assert "best.pt or last.pt at the run's best step, beam sizes 1 and 5" in markdown


def test_notes_say_why_aer_is_missing(tmp_path: Path) -> None:
    write_run(tmp_path / "s" / "none_seed0", fake_metrics("none", 0))
    write_run(tmp_path / "s" / "dot_seed0", fake_metrics("dot", 0, aer=None))
    write_run(tmp_path / "s" / "additive_seed0", fake_metrics("additive", 0, aer=None))
    write_run(tmp_path / "s" / "additive_seed1", fake_metrics("additive", 1))
    comparison = build_comparison(load_runs([tmp_path / "s"]))
    markdown = render_markdown(comparison)
    assert "## Notes" in markdown
    assert (
        "- dot: AER n/a: its test pairs lack gold alignments (AER is scored only when every "
        "test pair has one)" in markdown
    )
    assert "- additive: AER over 1 of 2 runs; the test pairs of the others lack gold " in markdown
    assert "- none: no attention weights, so no AER or attention entropy" in markdown
