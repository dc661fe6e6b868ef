"""Attention modules: parity with PyTorch references, exact masking, gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from seq2seq.model.attention import (
    AdditiveAttention,
    MultiHeadAttention,
    NoAttention,
    ScaledDotProductAttention,
    masked_softmax,
)

B, T_Q, T_S = 3, 4, 6


def make_inputs(query_dim: int, key_dim: int, dtype=torch.float32, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(B, T_Q, query_dim, generator=g, dtype=dtype)
    keys = torch.randn(B, T_S, key_dim, generator=g, dtype=dtype)
    mask = torch.ones(B, T_S, dtype=torch.bool)
    mask[1, 4:] = False  # a padded sentence
    mask[2, 1:] = False  # a one-token sentence
    return query, keys, mask


def all_modules(query_dim: int = 8, key_dim: int = 8):
    torch.manual_seed(0)
    return {
        "additive": AdditiveAttention(query_dim, key_dim, 5),
        "dot": ScaledDotProductAttention(query_dim, key_dim),
        "multihead": MultiHeadAttention(query_dim, key_dim, num_heads=2),
    }


def test_dot_product_matches_pytorch_sdpa():
    query, keys, mask = make_inputs(8, 8)
    attention = ScaledDotProductAttention(8, 8)
    assert sum(p.numel() for p in attention.parameters()) == 0  # equal sizes: no parameters
    context, weights = attention(query, keys, mask)
    reference = F.scaled_dot_product_attention(query, keys, keys, attn_mask=mask[:, None, :])
    torch.testing.assert_close(context, reference, atol=1e-5, rtol=0)
    assert weights.shape == (B, 1, T_Q, T_S)


def test_dot_product_projects_query_when_sizes_differ():
    query, keys, mask = make_inputs(5, 8)
    attention = ScaledDotProductAttention(5, 8)
    context, _ = attention(query, keys, mask)
    projected = query @ attention.query_layer.weight.t()
    reference = F.scaled_dot_product_attention(projected, keys, keys, attn_mask=mask[:, None, :])
    torch.testing.assert_close(context, reference, atol=1e-5, rtol=0)


def test_multihead_matches_torch_multihead_attention():
    query, keys, mask = make_inputs(8, 8)
    ours = MultiHeadAttention(8, 8, num_heads=2)
    reference = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(
            torch.cat([ours.query_layer.weight, ours.key_layer.weight, ours.value_layer.weight])
        )
        reference.in_proj_bias.copy_(
            torch.cat([ours.query_layer.bias, ours.key_layer.bias, ours.value_layer.bias])
        )
        reference.out_proj.weight.copy_(ours.output_layer.weight)
        reference.out_proj.bias.copy_(ours.output_layer.bias)
    context, weights = ours(query, keys, mask)
    ref_context, ref_weights = reference(
        query, keys, keys, key_padding_mask=~mask, average_attn_weights=False
    )
    torch.testing.assert_close(context, ref_context, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, ref_weights, atol=1e-5, rtol=0)
    assert weights.shape == (B, 2, T_Q, T_S)


def test_additive_matches_its_formula():
    query, keys, mask = make_inputs(5, 8)
    attention = AdditiveAttention(5, 8, 7)
    context, weights = attention(query, keys, mask)
    w_a, b_a = attention.query_layer.weight, attention.query_layer.bias
    u_a, v_a = attention.key_layer.weight, attention.energy_layer.weight.squeeze(0)
    for b in range(B):
        real = int(mask[b].sum())
        for t in range(T_Q):
            scores = torch.stack(
                [v_a @ torch.tanh(w_a @ query[b, t] + b_a + u_a @ keys[b, s]) for s in range(real)]
            )
            expected = torch.softmax(scores, 0)
            torch.testing.assert_close(weights[b, 0, t, :real], expected, atol=1e-6, rtol=0)
            torch.testing.assert_close(context[b, t], expected @ keys[b, :real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["additive", "dot", "multihead"])
def test_masked_weights_are_exactly_zero_and_rows_sum_to_one(name):
    query, keys, mask = make_inputs(8, 8)
    _, weights = all_modules()[name](query, keys, mask)
    expanded = mask[:, None, None, :].expand_as(weights)
    assert torch.all(weights[~expanded] == 0.0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))


@pytest.mark.parametrize("name", ["additive", "dot", "multihead"])
def test_row_without_real_tokens_gives_zeros_not_nan(name):
    query, keys, mask = make_inputs(8, 8)
    mask[0] = False
    context, weights = all_modules()[name](query, keys, mask)
    assert not torch.isnan(context).any() and not torch.isnan(weights).any()
    assert torch.all(weights[0] == 0) and torch.all(context[0] == 0)


@pytest.mark.parametrize("name", ["additive", "dot", "multihead"])
def test_step_form_equals_sequence_form(name):
    query, keys, mask = make_inputs(8, 8)
    module = all_modules()[name]
    context, weights = module(query, keys, mask)
    memory = module.prepare(keys, mask)
    for t in range(T_Q):
        step_context, step_weights = module.attend(query[:, t], memory)
        torch.testing.assert_close(step_context, context[:, t])
        torch.testing.assert_close(step_weights, weights[:, :, t])


@pytest.mark.parametrize("name", ["additive", "dot", "multihead"])
def test_gradcheck_float64(name):
    query, keys, mask = make_inputs(6, 6, dtype=torch.float64)
    module = all_modules(6, 6)[name].double()
    query.requires_grad_(True)
    keys.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda q, k: module(q, k, mask)[0], (query, keys))


def test_masked_softmax_catches_the_mask_everything_bug():
    scores = torch.randn(2, 5)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[:, 3:] = False
    weights = masked_softmax(scores, mask)
    assert torch.all(weights[:, 3:] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))


def test_no_attention_context_is_the_encoder_final_state():
    torch.manual_seed(0)
    rnn = torch.nn.GRU(4, 3, batch_first=True, bidirectional=True)
    inputs = torch.randn(2, 5, 4)
    lengths = torch.tensor([5, 3])
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        inputs, lengths, batch_first=True, enforce_sorted=False
    )
    outputs, final = rnn(packed)
    outputs, _ = torch.nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
    mask = torch.arange(5)[None] < lengths[:, None]
    context, weights = NoAttention(6)(torch.zeros(2, 3), outputs, mask)
    torch.testing.assert_close(context, torch.cat([final[0], final[1]], dim=-1))
    assert weights is None


def test_multihead_rejects_heads_that_do_not_divide():
    with pytest.raises(ValueError, match="divide"):
        MultiHeadAttention(8, 8, num_heads=3)
