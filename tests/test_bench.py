"""The benchmark: the FLOP counter on hand-computed shapes, the tutorial reference, and a tiny
end-to-end run through the real CLI that must write every field of bench.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from seq2seq.analysis.bench import (
    BatchShape,
    BenchOptions,
    TutorialSeq2Seq,
    flop_breakdown,
    forward_flops,
    tiny_overrides,
    train_flops,
)
from seq2seq.model import ModelSpec
from seq2seq.model.attention import ATTENTION_TYPES
from tests.conftest import run_script

# E=2, H=2, unidirectional (K=2), one layer, A=2, V=3; B=1, S=2, T=1, 2 encoder steps.
HAND_SPEC = ModelSpec(
    src_vocab_size=5, tgt_vocab_size=3, embed_size=2, hidden_size=2, bidirectional=False
)
HAND_SHAPE = BatchShape(batch=1, src_len=2, tgt_len=1, src_tokens=2)
HAND_COMMON = {
    "encoder": 96,  # 2 steps · (2·E·3H = 24 input + 2·H·3H = 24 hidden)
    "bridge": 8,  # 2·K·H
    "decoder_gru": 72,  # 1 step · (2·(E+K)·3H = 48 + 2·H·3H = 24)
    "readout": 36,  # 2·(H+K+E)·H = 24 + 2·H·V = 12
}


def spec_with(**changes: object) -> ModelSpec:
    return ModelSpec(**{**HAND_SPEC.__dict__, **changes})


@pytest.mark.parametrize(
    ("attention", "attention_flops"),
    [
        ("none", 0),
        # U_a k: B·S·2·K·A = 16; per step W_a s 2·H·A = 8, v_a 2·S·A = 8, sum 2·S·K = 8
        ("additive", 16 + 8 + 8 + 8),
        # H == K: no query projection; scores 2·S·K = 8, weighted sum 8
        ("dot", 16),
        # K and V projections 2·B·S·2·K·K = 32; per step query 8, scores 8, sum 8, W^O 8
        ("multihead", 32 + 8 + 8 + 8 + 8),
    ],
)
def test_flop_counter_on_a_hand_computed_shape(attention: str, attention_flops: int) -> None:
    spec = spec_with(attention=attention, num_heads=2 if attention == "multihead" else 1)
    parts = flop_breakdown(spec, HAND_SHAPE)
    assert parts == {**HAND_COMMON, "attention": attention_flops}
    assert forward_flops(spec, HAND_SHAPE) == 212 + attention_flops
    assert train_flops(spec, HAND_SHAPE) == 3 * (212 + attention_flops)


def test_flop_counter_luong_gru_reads_the_word_only() -> None:
    spec = spec_with(attention="dot", decoder="luong")
    assert flop_breakdown(spec, HAND_SHAPE)["decoder_gru"] == 48  # 2·E·3H = 24 + 2·H·3H = 24
    baseline = spec_with(attention="none", decoder="luong")  # fixed context: always fed
    assert flop_breakdown(baseline, HAND_SHAPE)["decoder_gru"] == 72


def test_flop_counter_scales_with_directions_layers_and_steps() -> None:
    spec = spec_with(attention="none", bidirectional=True, encoder_layers=2)  # K = 4
    shape = BatchShape(batch=2, src_len=3, tgt_len=5, src_tokens=4)
    parts = flop_breakdown(spec, shape)
    # 4 tokens · 2 directions · (layer 1: 2·2·6 + 2·2·6 = 48; layer 2: 2·4·6 + 24 = 72)
    assert parts["encoder"] == 4 * 2 * (48 + 72)
    assert parts["bridge"] == 2 * 2 * 4 * 2
    assert parts["decoder_gru"] == 10 * (2 * 6 * 6 + 2 * 2 * 6)  # B·T = 10 steps
    assert parts["readout"] == 10 * (2 * 8 * 2 + 2 * 2 * 3)
    dot = flop_breakdown(spec_with(attention="dot", bidirectional=True), shape)
    assert dot["attention"] == 10 * (2 * 2 * 4 + 4 * 3 * 4)  # H != K: query projected


def test_tutorial_reference_shapes_and_masking() -> None:
    spec = ModelSpec(src_vocab_size=7, tgt_vocab_size=6, embed_size=4, hidden_size=5, dropout=0)
    model = TutorialSeq2Seq(spec).eval()
    src = torch.tensor([[4, 5, 3, 0, 0], [6, 3, 0, 0, 0]])
    logits = model(src, src != 0, torch.tensor([[2, 4, 5], [2, 5, 0]]))
    assert logits.shape == (2, 3, 6)
    assert torch.isfinite(logits).all()
    keys = torch.randn(2, 5, 10)
    mask = src != 0
    changed = keys.clone()
    changed[~mask] = 100.0  # what padding holds must not reach the context
    state = torch.randn(2, 5)
    assert torch.allclose(model.attend(state, keys, mask), model.attend(state, changed, mask))


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
