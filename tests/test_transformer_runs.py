"""The Transformer as a row of everything the GRU variants have, through the real entry points:
train.py (checkpoints, metrics.json; resume and DDP: test_signals.py, test_distributed.py),
translate.py (greedy, beam, heatmap), evaluate.py, layer-wise extraction, and the FLOP count
the run reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2seq.analysis.bench.flops import BatchShape, flop_counter_total, train_flops
from seq2seq.data.batching import ParallelDataset
from seq2seq.evaluation.extract import ALL_LAYERS, extract_attention_weights
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.model.transformer import Transformer
from tests.helpers.models import spec_of
from tests.helpers.runs import run_script


def test_a_transformer_run_records_itself_and_its_checkpoint_rebuilds_it(tiny_run) -> None:
    run_dir = tiny_run("transformer")
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["decoder"] == "transformer" and metrics["attention"] == "multihead"
    assert metrics["num_heads"] == 2 and len(metrics["test"]["aer_per_head"]) == 2
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    assert "Transformer(layers=2+2, heads=2, size=16, ff=32" in log
    run = TrainedRun.load(run_dir)
    assert isinstance(run.model, Transformer)
    assert run.input_limit == min(2 * run.max_src_len, run.model.spec.max_positions - 1)


def test_translate_and_evaluate_take_a_transformer_run(tiny_run, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"  # evaluate.py records into the run: a copy of the shared one
    shutil.copytree(tiny_run("transformer"), run_dir)
    heatmap = tmp_path / "love.png"
    greedy = run_script("translate.py", str(run_dir), "我 爱 中国", "--heatmap", str(heatmap))
    assert greedy.returncode == 0, greedy.stderr
    assert heatmap.stat().st_size > 1000
    beam = run_script("translate.py", str(run_dir), "我 爱 中国", "--beam-size", "3")
    assert beam.returncode == 0, beam.stderr
    (expected,) = TrainedRun.load(run_dir).translate(["我 爱 中国"])
    assert greedy.stdout.strip() == expected.text
    scored = run_script("evaluate.py", str(run_dir), "--beam-size", "2")
    assert scored.returncode == 0 and "AER" in scored.stdout, scored.stderr
    assert "AER per decoder layer (heads averaged; each head):" in scored.stdout
    assert "    layer 1 " in scored.stdout and "    layer 2 " in scored.stdout
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    (evaluation,) = metrics["evaluations"].values()
    assert [len(layer["aer_per_head"]) for layer in evaluation["layers"]] == [2, 2]
    last = evaluation["layers"][-1]  # the reported layer: the evaluation's own AER
    assert last["aer"] == evaluation["scores"]["aer"]


def test_every_layers_cross_attention_can_be_extracted(tiny_run, toy_corpus: Path) -> None:
    from seq2seq.data.corpus import read_tsv

    run = TrainedRun.load(tiny_run("transformer"))
    pairs = read_tsv(toy_corpus / "test.tsv")[:5]
    batch = ParallelDataset(pairs, run.src_vocab, run.tgt_vocab).collate(range(5))
    reported = extract_attention_weights(run.model, batch)
    last = extract_attention_weights(run.model, batch, layer=-1)
    first = extract_attention_weights(run.model, batch, layer=0)
    np.testing.assert_allclose(reported, last, atol=1e-6)
    assert first.shape == last.shape and first.shape[1] == 2  # (B, heads, T_t, T_s)
    rows = first.sum(-1)
    real = rows > 0
    np.testing.assert_allclose(rows[real], 1.0, atol=1e-5)
    assert not np.allclose(first, last)
    every = extract_attention_weights(run.model, batch, layer=ALL_LAYERS)  # one pass
    np.testing.assert_allclose(every, np.stack([first, last], axis=1), atol=1e-6)
    trimmed = extract_attention_weights(run.model, batch, layer=ALL_LAYERS, trim=True)
    per_layer = extract_attention_weights(run.model, batch, layer=0, trim=True)
    for both, one in zip(trimmed, per_layer, strict=True):
        assert both.shape[0] == 2
        np.testing.assert_allclose(both[0], one, atol=1e-6)


def test_the_flop_count_is_what_pytorch_counts_for_a_transformer() -> None:
    spec = spec_of(
        40, 30, kind="transformer", attention="multihead", num_heads=4, hidden_size=32,
        ff_size=64, encoder_layers=2, decoder_layers=3, dropout=0.0,
    )  # fmt: skip
    model = Transformer(spec)
    src, tgt = torch.randint(4, 40, (6, 9)), torch.randint(4, 30, (6, 7))
    mask = torch.ones(6, 9, dtype=torch.bool)

    def step() -> None:
        logits, _ = model(src, mask.sum(1), mask, tgt)
        logits.sum().backward()

    assert flop_counter_total(step) == train_flops(spec, BatchShape(6, 9, 7, 54))


def test_tensorboard_shows_every_layers_cross_and_self_attention(tiny_run) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tiny_run("transformer") / "tb"), size_guidance={"images": 0})
    events.Reload()
    images = set(events.Tags()["images"])
    expected = {"attention/sample_0"} | {
        f"attention/sample_0/{kind}_layer_{layer}" for kind in ("cross", "self") for layer in (1, 2)
    }
    assert expected <= images, images


def test_a_transformer_checkpoint_copied_into_a_gru_run_is_refused(tiny_run, tmp_path) -> None:
    """A run's checkpoint and its metrics.json and .hydra/config.yaml describe one model: a
    Transformer's best.pt in a GRU run folder is never served with the GRU's name and scores."""
    from seq2seq.errors import UserError
    from seq2seq.evaluation.report import evaluate_run
    from seq2seq.explorer.explain import RunExplorer

    run_dir = tmp_path / "gru"
    shutil.copytree(tiny_run("additive"), run_dir)
    best = run_dir / "checkpoints" / "best.pt"
    shutil.copy(tiny_run("transformer") / "checkpoints" / "best.pt", best)
    expected = (
        f"checkpoint {best} and {run_dir / '.hydra' / 'config.yaml'} disagree about the model: "
        "model.kind=transformer in the checkpoint, rnn in .hydra/config.yaml; "
    )
    for load in (
        lambda: TrainedRun.load(run_dir),
        lambda: RunExplorer.load("gru", run_dir),
        lambda: evaluate_run(run_dir, device="cpu"),
    ):
        with pytest.raises(UserError) as caught:
            load()
        assert str(caught.value).startswith(expected), str(caught.value)
    shutil.rmtree(run_dir / ".hydra")  # metrics.json alone says so too
    with pytest.raises(UserError) as caught:
        TrainedRun.load(run_dir)
    assert str(caught.value).startswith(
        f"checkpoint {best} and {run_dir / 'metrics.json'} disagree about the model: "
        "attention=multihead in the checkpoint, additive in metrics.json; "
    )
    before = (run_dir / "metrics.json").read_bytes()
    for script, *arguments in (("translate.py", "我 爱 中国"), ("evaluate.py",), ("serve.py",)):
        result = run_script(script, str(run_dir), *arguments)
        assert result.returncode == 2 and "serving" not in result.stdout, result.stderr
        assert result.stderr.strip().splitlines() == [f"error: {caught.value}"]
    assert (run_dir / "metrics.json").read_bytes() == before
