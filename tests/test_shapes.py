"""Shapes asserted at the model's public boundaries: a tensor of the wrong shape fails at the
call that received it, naming the tensor and the shape it should have had."""

from __future__ import annotations

import pytest
import torch

from seq2seq.model.attention import build_attention
from seq2seq.model.shapes import expect
from tests.helpers.models import tiny_model, tiny_spec, toy_batch


def test_expect_binds_named_axes_and_names_the_mismatch() -> None:
    expect("f", x=(torch.zeros(2, 3), "B T"), y=(torch.zeros(2), "B"))
    with pytest.raises(AssertionError, match=r"f: y has shape \(4,\), expected \(B\) = \(2\)"):
        expect("f", x=(torch.zeros(2, 3), "B T"), y=(torch.zeros(4), "B"))
    with pytest.raises(AssertionError, match=r"f: x has shape \(2, 3\), expected \(B\) = \(\?\)"):
        expect("f", x=(torch.zeros(2, 3), "B"))
    with pytest.raises(AssertionError, match=r"expected \(B, H\) = \(2, 8\)"):
        expect("f", {"H": 8}, x=(torch.zeros(2, 3), "B H"))


def test_seq2seq_names_a_mask_of_the_wrong_length() -> None:
    model = tiny_model("additive")
    src, lengths, mask, tgt_in = toy_batch()
    model(src, lengths, mask, tgt_in)  # the right shapes pass
    with pytest.raises(AssertionError, match=r"Seq2Seq.encode: src_mask has shape \(5, 6\)"):
        model(src, lengths, mask[:, :6], tgt_in)
    with pytest.raises(AssertionError, match=r"Seq2Seq.forward: tgt_in has shape \(4, 6\)"):
        model(src, lengths, mask, tgt_in[:4])
    with pytest.raises(AssertionError, match=r"src_lengths has shape \(5, 1\)"):
        model(src, lengths[:, None], mask, tgt_in)


def test_the_decoder_names_a_state_of_the_wrong_size() -> None:
    model = tiny_model("dot")
    src, lengths, mask, tgt_in = toy_batch()
    memory, state = model.encode(src, lengths, mask)
    with pytest.raises(AssertionError, match=r"Decoder.forward: state has shape \(5, 15\)"):
        model.decoder(tgt_in, memory, state[:, :15])


@pytest.mark.parametrize("name", ["additive", "dot", "multihead"])
def test_an_attention_module_names_keys_of_the_wrong_size(name: str) -> None:
    attention = build_attention(name, 16, 32, tiny_spec(name))
    query, keys, mask = torch.zeros(2, 16), torch.zeros(2, 5, 32), torch.ones(2, 5, dtype=bool)
    context, _ = attention(query, keys, mask)
    assert context.shape == (2, 32)
    with pytest.raises(AssertionError, match=r"keys has shape \(2, 5, 30\)"):
        attention(query, keys[..., :30], mask)
    with pytest.raises(AssertionError, match=r"mask has shape \(2, 4\)"):
        attention(query, keys, mask[:, :4])
