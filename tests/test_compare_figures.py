"""Tests for seq2seq.analysis.compare.figures: the data behind the figures."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from seq2seq.analysis.compare import (
    build_comparison,
    load_runs,
    make_figures,
    to_json,
    valid_loss_series,
)
from seq2seq.analysis.compare.figures import aer_figure, explain_aer_figure, interventions_figure
from tests.helpers.metrics import explained, fake_metrics, fake_sweep, write_run


def test_valid_loss_mean_when_steps_align_else_per_seed(tmp_path: Path) -> None:
    write_run(tmp_path / "s0", fake_metrics(seed=0, losses=(2.0, 1.0)))
    write_run(tmp_path / "s1", fake_metrics(seed=1, losses=(4.0, 3.0)))
    (aligned,) = build_comparison(load_runs([tmp_path])).variants
    series = valid_loss_series(aligned)
    assert list(series) == ["additive"]
    (first, second) = series["additive"]
    assert first[0] == 10 and first[1] == (pytest.approx(3.0), pytest.approx(math.sqrt(2)))
    assert second[0] == 20 and second[1][0] == pytest.approx(2.0)

    write_run(tmp_path / "s2", fake_metrics(seed=2, steps=(15, 30), losses=(5.0, 4.0)))
    (ragged,) = build_comparison(load_runs([tmp_path])).variants
    series = valid_loss_series(ragged)
    assert sorted(series) == ["additive seed 0", "additive seed 1", "additive seed 2"]
    assert series["additive seed 2"] == [(15, 5.0), (30, 4.0)]


def test_aer_figure_has_a_bar_per_variant_with_attention(tmp_path: Path) -> None:
    comparison = build_comparison(load_runs([fake_sweep(tmp_path)]))
    figure = aer_figure(to_json(comparison))  # none, additive, multihead: no bar for none
    (axes,) = figure.axes
    assert [label.get_text() for label in axes.get_xticklabels()] == ["additive", "multihead"]
    assert len(axes.patches) == 2


def test_every_figure_is_made_without_attention_runs(tmp_path: Path) -> None:
    write_run(tmp_path / "none", fake_metrics("none"))
    figures = make_figures(to_json(build_comparison(load_runs([tmp_path]))))
    assert set(figures) == {
        "bleu_by_length.png",
        "aer.png",
        "valid_loss.png",
        "explain_aer.png",
        "interventions.png",
    }
    (axes,) = figures["aer.png"].axes  # a placeholder that says why there is no AER
    assert "no AER" in " ".join(text.get_text() for text in axes.texts)
    for name in ("explain_aer.png", "interventions.png"):  # nothing explained: says how to
        (axes,) = figures[name].axes
        assert "--explain" in " ".join(text.get_text() for text in axes.texts)


def test_the_explain_figures_draw_what_the_explained_runs_recorded(tmp_path: Path) -> None:
    for seed, (uniform, grad) in enumerate([(10.0, 0.4), (14.0, 0.6)]):
        run = explained(fake_metrics("additive", seed=seed), uniform_bleu=uniform, grad_aer=grad)
        write_run(tmp_path / f"additive_seed{seed}", run)
    write_run(tmp_path / "dot_seed0", fake_metrics("dot", seed=0))  # never explained: no cluster
    document = to_json(build_comparison(load_runs([tmp_path])))

    (axes,) = explain_aer_figure(document).axes
    assert [label.get_text() for label in axes.get_xticklabels()] == ["additive"]
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend == ["attention", "gradient × input"]  # only the maps the runs recorded
    assert [bar.get_height() for bar in axes.patches] == [0.2, pytest.approx(0.5)]

    (axes,) = interventions_figure(document).axes
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend == ["own attention", "uniform"]
    assert [bar.get_height() for bar in axes.patches] == [40.0, 12.0]
