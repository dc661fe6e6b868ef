"""Interventions on attention: each rule replaces the weights as it says (exact zeros on
padding kept), the model's own path is unchanged without one, gold is refused without links,
head ablation touches one head, and the scores of a split under each."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from seq2seq.data.corpus import Pair
from seq2seq.errors import UserError
from seq2seq.evaluation.interventions import (
    Intervention,
    argmax_weights,
    intervening,
    intervention_scores,
    shuffled_weights,
    uniform_weights,
)
from seq2seq.model.attention import AdditiveAttention, MultiHeadAttention
from seq2seq.model.search import greedy_decode
from tests.helpers.models import model_for, tiny_model, toy_batch

B, H, T_Q, T_S = 3, 2, 4, 6
MASK = torch.ones(B, T_S, dtype=torch.bool)
MASK[1, 4:] = False
MASK[2, 1:] = False


def random_weights(seed: int = 0) -> torch.Tensor:
    """Softmax rows over the real positions of MASK: (B, H, T_Q, T_S)."""
    scores = torch.randn(B, H, T_Q, T_S, generator=torch.Generator().manual_seed(seed))
    real = MASK[:, None, None, :]
    return torch.softmax(scores.masked_fill(~real, -1e9), -1) * real


def real_positions() -> torch.Tensor:
    return MASK[:, None, None, :].expand(B, H, T_Q, T_S)


def test_uniform_gives_the_mean_of_the_values_computed_by_hand():
    torch.manual_seed(0)
    attention = AdditiveAttention(5, 4, 3)
    keys = torch.randn(B, T_S, 4)
    memory = attention.prepare(keys, MASK)
    weights = uniform_weights(real_positions()[:, :1], torch.float32)
    context = attention.read(weights, memory)  # (B, T_Q, 4)
    for b in range(B):
        real = int(MASK[b].sum())
        expected = keys[b, :real].mean(0)
        for t in range(T_Q):
            torch.testing.assert_close(context[b, t], expected)
    assert (weights[~real_positions()[:, :1]] == 0).all()


def test_shuffle_keeps_each_rows_weights_and_the_exact_zeros_on_padding():
    weights = random_weights()
    shuffled = shuffled_weights(weights, real_positions(), torch.Generator().manual_seed(3))
    assert (shuffled[~real_positions()] == 0).all()
    for row, other in zip(weights.reshape(-1, T_S), shuffled.reshape(-1, T_S), strict=True):
        assert torch.equal(row.sort().values, other.sort().values)
    assert not torch.equal(shuffled, weights)  # it did move something
    again = shuffled_weights(weights, real_positions(), torch.Generator().manual_seed(3))
    assert torch.equal(again, shuffled)  # seeded


def test_argmax_is_one_hot_at_the_rows_maximum():
    weights = random_weights(1)
    hot = argmax_weights(weights, real_positions())
    assert torch.equal(hot.sum(-1), torch.ones(B, H, T_Q))
    assert torch.equal(hot.argmax(-1), weights.argmax(-1))
    assert set(hot.unique().tolist()) == {0.0, 1.0}
    empty = argmax_weights(weights, torch.zeros_like(real_positions()))
    assert (empty == 0).all()  # a row without a real position stays empty


def test_one_head_replaced_leaves_the_others_as_they_were():
    weights = random_weights(2)
    ablated = Intervention.parse("head:1").replace(weights, MASK, None, torch.Generator())
    assert torch.equal(ablated[:, 0], weights[:, 0])
    torch.testing.assert_close(
        ablated[:, 1], uniform_weights(real_positions()[:, 1], weights.dtype)
    )


def test_gold_rows_replace_the_linked_words_only():
    weights = random_weights(3)[:, :1]
    gold = torch.zeros(B, T_Q, T_S)
    gold[0, 0, 2] = 1.0  # word 0 of sentence 0 links to source word 2
    gold[1, 1, :2] = 0.5  # word 1 of sentence 1 links to words 0 and 1
    replaced = Intervention.parse("gold").replace(weights, MASK, gold, torch.Generator())
    assert torch.equal(replaced[0, 0, 0], gold[0, 0]) and torch.equal(replaced[1, 0, 1], gold[1, 1])
    untouched = torch.ones(B, T_Q, dtype=torch.bool)
    untouched[0, 0] = untouched[1, 1] = False
    assert torch.equal(replaced[:, 0][untouched], weights[:, 0][untouched])


@pytest.mark.parametrize("attention", ["additive", "dot", "multihead"])
def test_without_an_intervention_the_model_is_bit_for_bit_its_own(attention: str):
    model = tiny_model(attention)
    src, lengths, mask, tgt_in = toy_batch()
    plain = model(src, lengths, mask, tgt_in, keep_weights=True)
    with intervening(model, None):
        same = model(src, lengths, mask, tgt_in, keep_weights=True)
    assert torch.equal(plain[0], same[0]) and torch.equal(plain[1], same[1])
    assert type(model.attention).__name__ != "Intervened"


@pytest.mark.parametrize("attention", ["additive", "multihead"])
def test_an_intervention_steers_free_running_decoding_and_ends_with_its_block(attention: str):
    model = tiny_model(attention)
    src, lengths, mask, _ = toy_batch()
    own = greedy_decode(model, src, lengths, mask)
    with intervening(model, Intervention.parse("uniform")):
        steered = greedy_decode(model, src, lengths, mask)
    real = mask[:, None, None, :].expand_as(steered.weights)
    step_rows = steered.weights.sum(-1) > 0  # the steps each sentence decoded
    expected = (real / real.sum(-1, keepdim=True)) * step_rows.unsqueeze(-1)
    torch.testing.assert_close(steered.weights, expected)
    assert isinstance(model.attention, AdditiveAttention | MultiHeadAttention)  # restored
    again = greedy_decode(model, src, lengths, mask)
    assert torch.equal(again.tokens, own.tokens)


def test_the_transformer_takes_every_layer_or_one_layers_head():
    model = tiny_model("multihead")  # a GRU: no layers
    with pytest.raises(UserError, match="the GRU has one attention; use head:H"):
        Intervention.parse("head:0.1").check(model.spec)
    transformer_spec = replace(model.spec, kind="transformer", decoder_layers=2, num_heads=2)
    with pytest.raises(UserError, match=r"name the Transformer's decoder layer too, as head:L.H"):
        Intervention.parse("head:1").check(transformer_spec)
    with pytest.raises(UserError, match="layer 2 does not exist; use 0 to 1"):
        Intervention.parse("head:2.0").check(transformer_spec)
    Intervention.parse("head:1.1").check(transformer_spec)


@pytest.mark.parametrize(
    ("text", "attention", "message"),
    [
        ("random", "additive", "unknown intervention 'random'; use uniform, shuffle, argmax, gold"),
        ("uniform", "none", "attention=none has no attention weights to replace"),
        ("head:0", "additive", "the model has one head; head ablation needs attention=multihead"),
        ("head:5", "multihead", "head 5 does not exist; use 0 to 1"),
    ],
)
def test_an_intervention_the_model_cannot_take_is_one_line(text, attention, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        Intervention.parse(text).check(tiny_model(attention).spec)


PAIRS = [
    Pair(("我", "爱", "中国"), ("I", "love", "China"), ((0, 0), (1, 1), (2, 2))),
    Pair(("他", "爱", "猫"), ("he", "loves", "cats"), ((0, 0), (1, 1), (2, 2))),
]


def test_gold_is_refused_on_a_sentence_without_links():
    pairs = [*PAIRS, Pair(("我",), ("I",))]
    model, dataset = model_for(pairs, "additive")
    with pytest.raises(UserError, match="gold needs gold links, and pair 2 of the split has none"):
        intervention_scores(
            model, dataset, _vocab(pairs), Intervention.parse("gold"), batch_size=8,
            device=torch.device("cpu"),
        )  # fmt: skip


def _vocab(pairs):
    from seq2seq.data.vocab import Vocab

    return Vocab.build(p.tgt for p in pairs)


def test_the_scores_of_a_split_under_each_intervention():
    model, dataset = model_for(PAIRS, "additive")
    vocab = _vocab(PAIRS)
    device = torch.device("cpu")
    own = intervention_scores(model, dataset, vocab, None, batch_size=8, device=device)
    assert own.intervention == "none" and own.bleu is not None and own.exact_match is not None
    gold = intervention_scores(
        model, dataset, vocab, Intervention.parse("gold"), batch_size=8, device=device
    )
    assert gold.bleu is None and gold.exact_match is None  # teacher-forced only
    assert 0 <= gold.token_accuracy <= 1 and gold.loss > 0
    assert gold.loss != own.loss  # the gold rows changed what the model read
