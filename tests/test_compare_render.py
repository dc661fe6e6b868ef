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
    assert "| none | 4 | 11.75 ± 1.71 |" in markdown
    assert "| multihead | 1 | 25.00 ± – |" in markdown
    assert "| variant | 1-10 (8) | 11-20 (2) |" in markdown
    assert any("seed 0" in w for w in comparison.warnings)
    assert "## Warnings" in markdown
