"""The benchmark's FLOP counter (seq2seq.analysis.bench.flops) on hand-computed shapes."""

from __future__ import annotations

import pytest

from seq2seq.analysis.bench.flops import BatchShape, flop_breakdown, forward_flops, train_flops
from seq2seq.model import ModelSpec

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
