"""The teacher-forced Bahdanau recurrence's two paths: exact gradients of the fused node, its
parity with the textbook step loop for every attention (values, weights, every gradient), and
which path runs when."""

from __future__ import annotations

import math

import pytest
import torch

from seq2seq.model.attention import masked_softmax
from seq2seq.model.fused import FusedRecurrence
from seq2seq.model.fused.mixers import ProjectedContext, ValueGates
from seq2seq.model.fused.recurrence import FusedBahdanauRecurrence, masked_softmax_into
from seq2seq.model.fused.scorers import ADDITIVE_SCORERS, DotScorer, MultiHeadScorer
from tests.helpers.models import (
    RECURRENCE_VARIANTS,
    same_model,
    tiny_model,
    toy_batch,
    training_pass,
)

B, T_T, T_S, H = 3, 4, 5, 3
# padding in rows 0 and 1, and a row without any real token (its weights must be 0, not NaN)
MASK = torch.tensor(
    [[True, True, True, True, True], [True, True, False, False, False], [False] * 5]
)
HEADS = 2


def recurrence_inputs(scorer: str, generator: torch.Generator) -> tuple:
    """Random float64 inputs for FusedBahdanauRecurrence.apply, all requiring grad."""

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_()

    common = (rand(B, T_T, 3 * H), rand(B, H), MASK, rand(3 * H, H), rand(3 * H))
    value_gates = (ValueGates, rand(B, T_S, 3 * H))  # one head: the values in gate space
    if scorer.startswith("additive"):  # additive-<tanh form>
        additive = ADDITIVE_SCORERS[scorer.split("-")[1]]
        mixer, scores = value_gates, (additive, rand(B, T_S, 4), rand(4, H), rand(4), rand(1, 4))
    elif scorer == "dot":  # query layer H -> D_k = 4
        mixer, scores = value_gates, (DotScorer, rand(B, T_S, 4), rand(4, H), 0.5)
    elif scorer == "multihead":  # 2 heads of size 2: query layer H -> 4; W = W_c W^O (3H, 4)
        mixer = (ProjectedContext, rand(B, HEADS, T_S, 2), rand(3 * H, 4))
        scores = (MultiHeadScorer, rand(B, HEADS, T_S, 2), rand(4, H), rand(4), 0.7)
    else:  # dot, D_k == H
        mixer, scores = value_gates, (DotScorer, rand(B, T_S, H), None, 1 / math.sqrt(H))
    mixer_class, *mixer_inputs = mixer
    scorer_class, *scorer_inputs = scores
    return (
        *common, mixer_class, scorer_class, len(mixer_inputs), *mixer_inputs, *scorer_inputs,
    )  # fmt: skip


@pytest.mark.parametrize(
    "scorer", ["additive-tanh", "additive-sigmoid", "dot", "dot-without-query-layer", "multihead"]
)
def test_gradcheck_float64_with_padding_and_an_empty_row(scorer):
    inputs = recurrence_inputs(scorer, torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(FusedBahdanauRecurrence.apply, inputs)
    states, weights = FusedBahdanauRecurrence.apply(*inputs)
    heads = HEADS if scorer == "multihead" else 1
    assert states.shape == (B, T_T, H) and weights.shape == (B, T_T, heads * T_S)
    per_head = weights.view(B, T_T, heads, T_S)
    assert (
        per_head.permute(0, 2, 1, 3)[~MASK[:, None, None, :].expand(-1, heads, T_T, -1)] == 0
    ).all()
    torch.testing.assert_close(per_head[:2].sum(-1), torch.ones(2, T_T, heads, dtype=torch.float64))
    assert (per_head[2] == 0).all()  # the empty row: zeros, not NaN
    (states.sum() + weights.square().sum()).backward()
    assert all(
        x.grad.isfinite().all()
        for x in inputs
        if isinstance(x, torch.Tensor) and x.grad is not None
    )


@pytest.mark.parametrize(("attention", "bidirectional", "tanh"), RECURRENCE_VARIANTS)
def test_the_fused_recurrence_equals_the_textbook_step_loop(attention, bidirectional, tanh):
    """Values 1e-6 apart at most, gradients to float rounding (dropout 0: the step loop draws
    a mask per step, the fused path one per batch)."""
    textbook = tiny_model(
        attention, bidirectional=bidirectional, tanh=tanh, recurrence="textbook"
    ).train()
    fused = same_model(textbook, "fused")
    ref_logits, ref_weights, ref_grads = training_pass(textbook)
    logits, weights, grads = training_pass(fused)
    torch.testing.assert_close(logits, ref_logits, atol=1e-6, rtol=1e-5)
    if attention != "none":
        assert weights is not None and weights.shape == ref_weights.shape
        torch.testing.assert_close(weights, ref_weights, atol=1e-6, rtol=1e-5)
    assert grads.keys() == ref_grads.keys() == dict(fused.named_parameters()).keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, ref_grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_the_fused_softmax_is_the_textbook_one():
    scores = torch.randn(B, HEADS, T_S, generator=torch.Generator().manual_seed(2))
    mask = MASK.unsqueeze(1)
    out = torch.empty_like(scores)
    assert torch.equal(masked_softmax_into(scores, mask, ~mask, out), masked_softmax(scores, mask))


@pytest.fixture
def fused_calls(monkeypatch) -> list[str]:
    """Records each run of the fused recurrence (the attention it ran for)."""
    calls: list[str] = []
    fused = FusedRecurrence.__call__

    def counting(self, *args, **kwargs):
        calls.append(type(args[3]).__name__)
        return fused(self, *args, **kwargs)

    monkeypatch.setattr(FusedRecurrence, "__call__", counting)
    return calls


@pytest.mark.parametrize("attention", ["additive", "dot", "multihead"])
def test_the_fused_path_runs_with_full_teacher_forcing_only(attention, fused_calls):
    model = tiny_model(attention).train()
    batch = toy_batch()
    model(*batch)
    with torch.no_grad():  # validation's teacher-forced loss too
        model(*batch)
    assert len(fused_calls) == 2
    model(*batch, teacher_forcing=0.5)  # scheduled sampling: the textbook loop
    same_model(model, "textbook")(*batch)
    assert len(fused_calls) == 2


@pytest.mark.parametrize(("attention", "decoder"), [("none", "bahdanau"), ("additive", "luong")])
def test_no_attention_and_luong_keep_their_own_path(attention, decoder, fused_calls):
    model = tiny_model(attention, decoder=decoder).train()
    logits, _ = model(*toy_batch())
    logits.sum().backward()
    assert fused_calls == []


def test_an_unknown_recurrence_is_refused():
    assert tiny_model("additive").decoder.recurrence == "fused"
    with pytest.raises(ValueError, match="'fast' is not a valid Recurrence"):
        tiny_model("additive", recurrence="fast")


@pytest.mark.parametrize("form", sorted(ADDITIVE_SCORERS))
def test_additive_backward_recomputes_exactly_the_energies_forward_used(form):
    """Forward keeps only the queries; backward's recomputed E_t must be forward's, bit for bit
    (otherwise the gradients would belong to slightly different energies)."""
    generator = torch.Generator().manual_seed(3)
    keys, weight, bias = (torch.randn(*s, generator=generator) for s in ((B, T_S, 4), (4, H), (4,)))
    scorer = ADDITIVE_SCORERS[form](keys, weight, bias, torch.randn(1, 4, generator=generator))
    seen = []
    for _ in range(T_T):
        scorer.scores(torch.randn(B, H, generator=generator))
        seen.append(scorer.energy.clone())
    assert len(scorer.queries) == T_T
    for t in reversed(range(T_T)):  # backward's order; the one buffer is overwritten each time
        assert torch.equal(scorer.energies(scorer.queries[t]), seen[t])
