"""The fused Bahdanau recurrence: exact gradients, parity with the autograd loop, when it runs."""

from __future__ import annotations

import math

import pytest
import torch

import seq2seq.model.decoder as decoder_module
from seq2seq.data.vocab import Vocab
from seq2seq.model import ModelSpec, Seq2Seq
from seq2seq.model.fused_recurrence import AdditiveScorer, DotScorer, FusedBahdanauRecurrence

B, T_T, T_S, H = 3, 4, 5, 3
# padding in rows 0 and 1, and a row without any real token (its weights must be 0, not NaN)
MASK = torch.tensor(
    [[True, True, True, True, True], [True, True, False, False, False], [False] * 5]
)


def recurrence_inputs(scorer: str, generator: torch.Generator) -> tuple:
    """Random float64 inputs for FusedBahdanauRecurrence.apply, all requiring grad."""

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_()

    common = (rand(B, T_T, 3 * H), rand(B, H), rand(B, T_S, 3 * H), MASK, rand(3 * H, H))
    common += (rand(3 * H),)
    if scorer == "additive":
        return (*common, AdditiveScorer, rand(B, T_S, 4), rand(4, H), rand(4), rand(1, 4))
    if scorer == "dot":  # query layer H -> D_k = 4
        return (*common, DotScorer, rand(B, T_S, 4), rand(4, H), 0.5)
    return (*common, DotScorer, rand(B, T_S, H), None, 1 / math.sqrt(H))  # dot, D_k == H


@pytest.mark.parametrize("scorer", ["additive", "dot", "dot-without-query-layer"])
def test_gradcheck_float64_with_padding_and_an_empty_row(scorer):
    inputs = recurrence_inputs(scorer, torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(FusedBahdanauRecurrence.apply, inputs)
    states, weights = FusedBahdanauRecurrence.apply(*inputs)
    assert states.shape == (B, T_T, H) and weights.shape == (B, T_T, T_S)
    assert (weights.transpose(0, 1)[:, ~MASK] == 0).all()  # masked: exactly 0
    torch.testing.assert_close(weights[:2].sum(-1), torch.ones(2, T_T, dtype=torch.float64))
    (states.sum() + weights.square().sum()).backward()
    assert all(
        x.grad.isfinite().all()
        for x in inputs
        if isinstance(x, torch.Tensor) and x.grad is not None
    )


def toy_batch(src_vocab: int, tgt_vocab: int) -> tuple[torch.Tensor, ...]:
    """Five source sentences of lengths 7, 5, 3, 7, 1 (padded) and targets of 6 tokens."""
    generator = torch.Generator().manual_seed(1)
    lengths = torch.tensor([7, 5, 3, 7, 1])
    mask = torch.arange(7)[None] < lengths[:, None]
    src = torch.randint(4, src_vocab, (5, 7), generator=generator).masked_fill(~mask, Vocab.pad_id)
    tgt_in = torch.randint(4, tgt_vocab, (5, 6), generator=generator)
    return src, lengths, mask, tgt_in


def build(attention: str, bidirectional: bool = True, dropout: float = 0.1) -> Seq2Seq:
    torch.manual_seed(0)
    spec = ModelSpec(
        20, 25, attention, embed_size=8, hidden_size=16, dropout=dropout,
        bidirectional=bidirectional, num_heads=2 if attention == "multihead" else 1,
    )  # fmt: skip
    return Seq2Seq(spec).train()


def run(model: Seq2Seq, fused: bool) -> tuple[torch.Tensor, torch.Tensor | None, dict]:
    """Logits, weights and every parameter's gradient of one training forward/backward."""
    model.decoder.fused = fused
    model.zero_grad(set_to_none=True)
    torch.manual_seed(5)  # the same dropout masks on both paths
    logits, weights = model(*toy_batch(20, 25), keep_weights=True)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), torch.arange(30) % 25)
    if weights is not None:  # a gradient that reaches the weights directly, too
        loss = loss + weights.square().mean()
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    return logits.detach(), None if weights is None else weights.detach(), grads


# (attention, bidirectional): dot projects the query only when the sizes differ
VARIANTS = [("additive", True), ("dot", True), ("dot", False), ("multihead", True), ("none", True)]


@pytest.mark.parametrize(("attention", "bidirectional"), VARIANTS)
def test_fused_and_autograd_paths_give_the_same_logits_weights_and_gradients(
    attention, bidirectional
):
    model = build(attention, bidirectional)
    fused_logits, fused_weights, fused_grads = run(model, fused=True)
    plain_logits, plain_weights, plain_grads = run(model, fused=False)
    torch.testing.assert_close(fused_logits, plain_logits, atol=1e-5, rtol=1e-5)
    if attention != "none":
        torch.testing.assert_close(fused_weights, plain_weights, atol=1e-5, rtol=1e-5)
    assert fused_grads.keys() == plain_grads.keys() == dict(model.named_parameters()).keys()
    for name, grad in fused_grads.items():
        torch.testing.assert_close(grad, plain_grads[name], atol=1e-5, rtol=1e-4, msg=name)


@pytest.fixture
def fused_calls(monkeypatch) -> list[str]:
    """Records each use of the fused recurrence by the decoder."""
    calls: list[str] = []
    fused = decoder_module.fused_bahdanau_recurrence

    def counting(*args, **kwargs):
        calls.append(type(args[-1]).__name__)
        return fused(*args, **kwargs)

    monkeypatch.setattr(decoder_module, "fused_bahdanau_recurrence", counting)
    return calls


@pytest.mark.parametrize("attention", ["additive", "dot"])
def test_fused_path_runs_only_while_training_with_full_teacher_forcing(attention, fused_calls):
    model = build(attention)
    batch = toy_batch(20, 25)
    model(*batch)
    assert len(fused_calls) == 1
    with torch.no_grad():
        model(*batch)
    model(*batch, teacher_forcing=0.5)
    model.decoder.fused = False
    model(*batch)
    assert len(fused_calls) == 1


@pytest.mark.parametrize(
    ("attention", "decoder"),
    [("multihead", "bahdanau"), ("none", "bahdanau"), ("additive", "luong")],
)
def test_uncovered_attention_and_luong_keep_the_autograd_path(attention, decoder, fused_calls):
    torch.manual_seed(0)
    spec = ModelSpec(20, 25, attention, embed_size=8, hidden_size=16, num_heads=2, decoder=decoder)
    model = Seq2Seq(spec).train()
    logits, _ = model(*toy_batch(20, 25))
    logits.sum().backward()
    assert fused_calls == []
