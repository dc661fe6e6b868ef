"""The Transformer built from the package's own attention: parity with PyTorch's layers on
copied weights, exact zeros under the padding and causal masks, padding and causal
invariance, incremental decoding equal to re-running the prefix, search on top of it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seq2seq.data.vocab import Vocab
from seq2seq.model.attention import Memory, MultiHeadAttention
from seq2seq.model.search import beam_search, greedy_decode
from seq2seq.model.spec import ModelSpec
from seq2seq.model.transformer import (
    DecoderLayer,
    EncoderLayer,
    Transformer,
    causal_mask,
    sinusoidal_positions,
)
from tests.helpers.models import spec_of

SIZE, HEADS, INNER = 16, 4, 32


def tiny_spec(**changes) -> ModelSpec:
    fields = dict(
        src_vocab_size=30, tgt_vocab_size=25, kind="transformer", attention="multihead",
        hidden_size=SIZE, num_heads=HEADS, ff_size=INNER, encoder_layers=2, decoder_layers=2,
        dropout=0.0, max_positions=64,
    )  # fmt: skip
    return spec_of(**{**fields, **changes})


def padded_batch(generator: torch.Generator, lengths: list[int], vocab: int, width: int):
    """Token ids (B, width) with ``<pad>`` after each length, and the mask (B, width)."""
    tokens = torch.randint(4, vocab, (len(lengths), width), generator=generator)
    mask = torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return tokens.masked_fill(~mask, Vocab.pad_id), mask


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        layers = (ours.query_layer, ours.key_layer, ours.value_layer)
        weight = torch.cat([layer.weight for layer in layers])
        bias = torch.cat([layer.bias for layer in layers])
        theirs.in_proj_weight.copy_(weight)
        theirs.in_proj_bias.copy_(bias)
        theirs.out_proj.weight.copy_(ours.output_layer.weight)
        theirs.out_proj.bias.copy_(ours.output_layer.bias)


def copy_block(ours, theirs, pairs: dict[str, str]) -> None:
    with torch.no_grad():
        for mine, their in pairs.items():
            for name in ("weight", "bias"):
                getattr(theirs.get_submodule(their), name).copy_(
                    getattr(ours.get_submodule(mine), name)
                )


def test_multi_head_attention_equals_pytorchs_with_padding_and_causal_masks() -> None:
    torch.manual_seed(0)
    ours = MultiHeadAttention(SIZE, SIZE, HEADS)
    theirs = nn.MultiheadAttention(SIZE, HEADS, batch_first=True)
    copy_attention(ours, theirs)
    x = torch.randn(3, 7, SIZE)
    mask = torch.arange(7).unsqueeze(0) < torch.tensor([[7], [4], [1]])
    allowed = causal_mask(7).unsqueeze(0) & mask.unsqueeze(1)  # (B, T, T)
    context, weights = ours.attend(x, ours.prepare(x, allowed))
    expected, expected_weights = theirs(
        x, x, x, attn_mask=~allowed.repeat_interleave(HEADS, 0), average_attn_weights=False
    )
    torch.testing.assert_close(context, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)
    assert (weights.masked_select(~allowed.unsqueeze(1).expand_as(weights)) == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, HEADS, 7))


def test_an_encoder_layer_equals_pytorchs_transformer_encoder_layer() -> None:
    torch.manual_seed(1)
    ours = EncoderLayer(SIZE, HEADS, INNER, dropout=0.0)
    theirs = nn.TransformerEncoderLayer(
        SIZE, HEADS, INNER, dropout=0.0, batch_first=True, norm_first=True
    )
    copy_attention(ours.self_attention, theirs.self_attn)
    copy_block(ours, theirs, {"feed_forward.inner": "linear1", "feed_forward.outer": "linear2",
                              "attention_norm": "norm1", "feed_forward_norm": "norm2"})  # fmt: skip
    x = torch.randn(3, 6, SIZE)
    mask = torch.arange(6).unsqueeze(0) < torch.tensor([[6], [3], [5]])
    theirs.eval()
    expected = theirs(x, src_key_padding_mask=~mask)
    output, _ = ours(x, mask)
    torch.testing.assert_close(output[mask], expected[mask], atol=1e-5, rtol=1e-5)


def test_a_decoder_layer_equals_pytorchs_transformer_decoder_layer() -> None:
    torch.manual_seed(2)
    ours = DecoderLayer(SIZE, HEADS, INNER, dropout=0.0)
    theirs = nn.TransformerDecoderLayer(
        SIZE, HEADS, INNER, dropout=0.0, batch_first=True, norm_first=True
    )
    copy_attention(ours.self_attention, theirs.self_attn)
    copy_attention(ours.cross_attention, theirs.multihead_attn)
    copy_block(ours, theirs, {"feed_forward.inner": "linear1", "feed_forward.outer": "linear2",
                              "self_attention_norm": "norm1", "cross_attention_norm": "norm2",
                              "feed_forward_norm": "norm3"})  # fmt: skip
    y, source = torch.randn(2, 5, SIZE), torch.randn(2, 4, SIZE)
    tgt_mask = torch.arange(5).unsqueeze(0) < torch.tensor([[5], [3]])
    src_mask = torch.arange(4).unsqueeze(0) < torch.tensor([[4], [2]])
    allowed = causal_mask(5).unsqueeze(0) & tgt_mask.unsqueeze(1)
    theirs.eval()
    expected = theirs(
        y, source, tgt_mask=~causal_mask(5), tgt_key_padding_mask=~tgt_mask,
        memory_key_padding_mask=~src_mask,
    )  # fmt: skip
    output, _, cross = ours(
        y, ours.own_memory(y, allowed), ours.cross_attention.prepare(source, src_mask)
    )
    torch.testing.assert_close(output[tgt_mask], expected[tgt_mask], atol=1e-5, rtol=1e-5)
    assert (cross[:, :, :, 2:][~src_mask[:, None, None, 2:].expand(-1, HEADS, 5, -1)] == 0).all()


def test_positions_are_the_sinusoids_of_the_paper() -> None:
    table = sinusoidal_positions(50, 8)
    assert table.shape == (50, 8)
    torch.testing.assert_close(table[3, 2], torch.tensor(3 / 10000 ** (2 / 8)).sin())
    torch.testing.assert_close(table[3, 3], torch.tensor(3 / 10000 ** (2 / 8)).cos())


@pytest.fixture
def model() -> Transformer:
    torch.manual_seed(3)
    return Transformer(tiny_spec()).eval()


def test_padding_changes_nothing_for_the_real_tokens(model: Transformer) -> None:
    generator = torch.Generator().manual_seed(4)
    src, src_mask = padded_batch(generator, [5, 3], 30, 5)
    tgt, _ = padded_batch(generator, [4, 4], 25, 4)
    logits, weights = model(src, src_mask.sum(1), src_mask, tgt, keep_weights=True)
    wider = torch.cat([src, torch.full((2, 3), Vocab.pad_id)], dim=1)
    wider_mask = torch.cat([src_mask, torch.zeros(2, 3, dtype=torch.bool)], dim=1)
    wider_logits, wider_weights = model(
        wider, wider_mask.sum(1), wider_mask, tgt, keep_weights=True
    )
    torch.testing.assert_close(wider_logits, logits, atol=1e-5, rtol=1e-5)
    assert (wider_weights[..., 5:] == 0).all() and (weights[1, ..., 3:] == 0).all()
    alone, _ = model(src[1:, :3], src_mask[1:, :3].sum(1), src_mask[1:, :3], tgt[1:])
    torch.testing.assert_close(alone[0], logits[1], atol=1e-5, rtol=1e-5)


def test_a_later_target_token_changes_nothing_before_it(model: Transformer) -> None:
    generator = torch.Generator().manual_seed(5)
    src, src_mask = padded_batch(generator, [6, 6], 30, 6)
    tgt, _ = padded_batch(generator, [7, 7], 25, 7)
    logits, _ = model(src, src_mask.sum(1), src_mask, tgt)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1) % 21 + 4
    changed_logits, _ = model(src, src_mask.sum(1), src_mask, changed)
    torch.testing.assert_close(changed_logits[:, :4], logits[:, :4], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(changed_logits[:, 4:], logits[:, 4:])


def test_incremental_decoding_equals_rerunning_the_prefix(model: Transformer) -> None:
    generator = torch.Generator().manual_seed(6)
    src, src_mask = padded_batch(generator, [6, 2, 4], 30, 6)
    tgt = torch.cat(
        [torch.full((3, 1), Vocab.bos_id), torch.randint(4, 25, (3, 5), generator=generator)], 1
    )
    full_logits, full_weights = model(src, src_mask.sum(1), src_mask, tgt, keep_weights=True)
    memory, state = model.encode(src, src_mask.sum(1), src_mask)
    for t in range(tgt.size(1)):
        logits, state, weights = model.decoder.step(tgt[:, t], state, memory)
        torch.testing.assert_close(logits, full_logits[:, t], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(weights, full_weights[:, :, t], atol=1e-6, rtol=1e-5)
    assert state.length == tgt.size(1)


def test_the_cache_grows_and_reorders_in_place_and_still_equals_rerunning_the_prefix(
    model: Transformer,
) -> None:
    generator = torch.Generator().manual_seed(9)
    src, src_mask = padded_batch(generator, [6, 2, 4], 30, 6)
    tgt = torch.cat(  # 20 tokens: past the cache's first capacity (8) twice
        [torch.full((3, 1), Vocab.bos_id), torch.randint(4, 25, (3, 19), generator=generator)], 1
    )
    order = torch.tensor([2, 0, 0, 1])  # mid-way, as beam search reorders its rows
    full_logits, _ = model(src, src_mask.sum(1), src_mask, tgt)
    memory, state = model.encode(src, src_mask.sum(1), src_mask)
    rows = torch.arange(3)
    for t in range(tgt.size(1)):
        if t == 11:
            state, rows = state.index_select(0, order), rows[order]
            memory = Memory(*(x.index_select(0, order) for x in memory))
        logits, state, _ = model.decoder.step(tgt[rows, t], state, memory)
        torch.testing.assert_close(logits, full_logits[rows, t], atol=1e-5, rtol=1e-5)
    assert state.length == tgt.size(1) and state.keys.size(3) >= tgt.size(1)


def test_greedy_and_beam_search_decode_with_the_cache(model: Transformer) -> None:
    generator = torch.Generator().manual_seed(7)
    src, src_mask = padded_batch(generator, [5, 3], 30, 5)
    greedy = greedy_decode(model, src, src_mask.sum(1), src_mask)
    for b in range(2):  # each token is the argmax of re-running the model on the prefix
        prefix = torch.tensor([[Vocab.bos_id]])
        for t in range(int(greedy.lengths[b]) - 1):
            one, one_mask = src[b : b + 1], src_mask[b : b + 1]
            logits, _ = model(one, one_mask.sum(1), one_mask, prefix)
            log_probs = logits[0, -1].log_softmax(-1)
            log_probs[[Vocab.pad_id, Vocab.bos_id]] = float("-inf")
            assert int(log_probs.argmax()) == int(greedy.tokens[b, t])
            prefix = torch.cat([prefix, greedy.tokens[b : b + 1, t : t + 1]], 1)
    beam = beam_search(model, src, src_mask.sum(1), src_mask, beam_size=3)
    assert beam.weights is not None and beam.weights.shape[1] == HEADS
    assert torch.isfinite(beam.scores).all()


def test_memory_of_every_layer_is_reordered_like_any_memory(model: Transformer) -> None:
    generator = torch.Generator().manual_seed(8)
    src, src_mask = padded_batch(generator, [4, 2], 30, 4)
    memory, state = model.encode(src, src_mask.sum(1), src_mask)
    assert isinstance(memory, Memory)
    assert memory.keys.shape == (2, 2, HEADS, 4, SIZE // HEADS)
    assert state.index_select(0, torch.tensor([1, 1, 0])).keys.shape[0] == 3
