"""The teacher-forced Bahdanau recurrence as one autograd node, with a hand-written backward.

Under plain autograd, :meth:`~seq2seq.model.decoder.BahdanauDecoder.step` in a loop (the
textbook recurrence) records about twenty small operations per target step and backward
replays them one by one, accumulating the weight gradients step by step.
:class:`FusedBahdanauRecurrence` runs the same step loop without recording a graph, keeps what
backward needs (the states, the attention weights, the gate activations), and in backward
loops once in reverse over the steps, carrying the state's gradient; the gradients of the
weights (``weight_hh``, ``bias_hh``, the query layer, ...) are then each one matrix product
over all steps, as cuDNN does for its RNNs.

One step, for the previous state ``h`` (B, H) and the step's input gates ``x`` (B, 3H)::

    s   = score(h)                          (B, [h,] T_s)  additive, dot or multi-head
    α   = masked_softmax(s, mask)           (B, h·T_s)     the attention weights, per head
    g   = x + α · V                          (B, 3H)        V = W_c·U, (B, h·T_s, 3H)
    hg  = W_hh h + b_hh                      (B, 3H)
    r   = σ(g_r + hg_r),  z = σ(g_z + hg_z)
    n   = tanh(g_n + r ⊙ hg_n)
    h'  = n + z ⊙ (h - n)                    = (1 - z) n + z h

``V`` are the values in gate space (:func:`~seq2seq.model.fused.mixers.context_mixer`: the
context is linear in the weights, ``c = α U + b``, so ``W_c c = α (U W_cᵀ) + W_c b``;
``W_c b`` is added to ``x``). Additive, dot-product and multi-head attention are covered, each
by its scorer (:mod:`seq2seq.model.fused.scorers`). With ``h`` heads the softmax runs per head
and ``α`` is the heads' weights side by side. Internally everything is time-major (T_t, B, ...)
so that each step's slice is contiguous.

Forward runs the autograd loop's operations in the same order, so states and weights come out
the same; backward sums over the steps in another order, so gradients agree up to rounding
(tests/test_fused_recurrence.py holds both, and gradcheck holds the backward exact).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from seq2seq.model.fused.mixers import Mixer
from seq2seq.model.fused.scorers import MultiHeadScorer, Scorer


class FusedBahdanauRecurrence(torch.autograd.Function):
    """All steps of the Bahdanau recurrence in one node; see the module docstring.

    ``apply(input_gates, state, mask, weight_hh, bias_hh, mixer_class, scorer_class,
    mixer_size, *tensors)``:

    input_gates (B, T_t, 3H)     ``W_ih^e e(y_{t-1}) + b_ih`` (+ ``W_c b``) for every step
    state       (B, H)           the initial state
    mask        (B, T_s) bool    True = real source token
    weight_hh (3H, H), bias_hh (3H,)
    mixer_class, scorer_class: how the context enters the gates
        (:mod:`seq2seq.model.fused.mixers`) and how the scores are made
        (:mod:`seq2seq.model.fused.scorers`)
    tensors: the mixer's ``mixer_size`` tensors, then the scorer's

    -> states (B, T_t, H), weights (B, T_t, h·T_s).
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx,
        input_gates: Tensor,
        state: Tensor,
        mask: Tensor,
        weight_hh: Tensor,
        bias_hh: Tensor,
        mixer_class: type[Mixer],
        scorer_class: type[Scorer],
        mixer_size: int,
        *tensors: Any,
    ) -> tuple[Tensor, Tensor]:
        batch, steps, three_h = input_gates.shape
        hidden = three_h // 3
        mixer = mixer_class(*tensors[:mixer_size])
        scorer = scorer_class(*tensors[mixer_size:])
        per_head = mask.unsqueeze(1) if isinstance(scorer, MultiHeadScorer) else mask
        heads = scorer.heads if isinstance(scorer, MultiHeadScorer) else 1
        # What backward needs, time-major: h_{t-1}, the gates r, z, n and W_hn h_{t-1} + b_hn
        all_states = state.new_empty(steps + 1, batch, hidden)  # h_{-1} = state, h_0, ...
        all_states[0] = state
        prev_states, states = all_states[:-1], all_states[1:]  # (T_t, B, H) each
        reset, update, candidate, hidden_n = (torch.empty_like(states) for _ in range(4))
        weights = state.new_empty(steps, batch, heads * mask.size(1))
        # Each step's views made once (one call each, not a dozen per step), and what does not
        # change between steps; the loop runs gru_cell's operations in its order, so the
        # values are the textbook step's.
        x_steps, weight_hh_t = input_gates.unbind(1), weight_hh.t()
        r_steps, z_steps, n_steps, hn_steps = (
            x.unbind(0) for x in (reset, update, candidate, hidden_n)
        )
        out_steps = states.unbind(0)
        weight_steps = weights.unbind(0)  # (B, h·T_s), the mixer's input
        # the softmax's output per step: (B, T_s), or (B, h, T_s) for multi-head scores
        per_head_weights = weights.view(steps, batch, heads, -1) if per_head.dim() == 3 else weights
        softmax_steps = per_head_weights.unbind(0)
        unmasked = ~per_head
        for t in range(steps):
            # α: (B, T_s), or (B, h, T_s) laid out as (B, h·T_s)
            scores = scorer.scores(state)
            masked_softmax_into(scores, per_head, unmasked, softmax_steps[t])
            gates = x_steps[t] + mixer.forward_step(weight_steps[t])
            hidden_gates = torch.addmm(bias_hh, state, weight_hh_t)  # (B, 3H)
            g_r, g_z, g_n = gates.chunk(3, dim=1)
            h_r, h_z, h_n = hidden_gates.chunk(3, dim=1)
            r, z, n = r_steps[t], z_steps[t], n_steps[t]
            torch.sigmoid(g_r + h_r, out=r)
            torch.sigmoid(g_z + h_z, out=z)
            hn_steps[t].copy_(h_n)
            torch.tanh(g_n + r * h_n, out=n)
            state = torch.add(n, z * (state - n), out=out_steps[t])
        ctx.mixer, ctx.scorer, ctx.heads = mixer, scorer, heads
        ctx.saved = (prev_states, reset, update, candidate, hidden_n, weights)
        ctx.mixer_size = mixer_size
        outputs = states.transpose(0, 1), weights.transpose(0, 1)
        # saved so that autograd refuses to run backward if any of them changed in place (the
        # outputs share memory, and so the version counter, with prev_states and weights)
        ctx.save_for_backward(weight_hh, *outputs)
        return outputs

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, states_grad: Tensor, weights_grad: Tensor) -> tuple:
        """states_grad (B, T_t, H), weights_grad (B, T_t, h·T_s) -> a grad per forward input."""
        prev_states, reset, update, candidate, hidden_n, weights = ctx.saved
        weight_hh, _, _ = ctx.saved_tensors
        mixer: Mixer = ctx.mixer
        scorer: Scorer = ctx.scorer
        heads = ctx.heads
        scorer.start_backward()
        steps, batch, hidden = prev_states.shape
        states_grad = states_grad.transpose(0, 1)  # (T_t, B, H)
        weights_grad = weights_grad.transpose(0, 1)  # (T_t, B, h·T_s)
        gates_grad = prev_states.new_empty(steps, batch, 3 * hidden)  # dL/dg_t
        hidden_gates_grad = torch.empty_like(gates_grad)  # dL/dhg_t
        # what the steps' gradients multiply by, for all steps at once (the same values as
        # computed step by step: element-wise, in the same order)
        one_minus_z, one_minus_r = 1 - update, 1 - reset
        n_slope = 1 - candidate * candidate  # tanh' = 1 - n²
        h_minus_n = prev_states - candidate
        # each step's views, made once (list indexing costs no operator call)
        r_s, z_s, one_r_s, one_z_s, slope_s, h_minus_n_s, h_n_s = (
            x.unbind(0)
            for x in (reset, update, one_minus_r, one_minus_z, n_slope, h_minus_n, hidden_n)
        )
        h_grad_s, alpha_s, alpha_out_s = (x.unbind(0) for x in (states_grad, weights, weights_grad))
        g_grad_s, hg_grad_s = gates_grad.unbind(0), hidden_gates_grad.unbind(0)
        carry = torch.zeros_like(prev_states[0])  # dL/dh_t from the steps after t
        for t in reversed(range(steps)):
            r, z, one_r, one_z, h_n = r_s[t], z_s[t], one_r_s[t], one_z_s[t], h_n_s[t]
            g_grad, hg_grad, alpha = g_grad_s[t], hg_grad_s[t], alpha_s[t]
            state_grad = h_grad_s[t] + carry
            # h' = (1 - z) n + z h
            n_grad = state_grad * one_z
            z_grad = state_grad * h_minus_n_s[t]
            # n = tanh(a_n), a_n = g_n + r ⊙ hg_n  ->  da_n = dn (1 - n²)
            a_n_grad = n_grad * slope_s[t]
            # r = σ(a_r), z = σ(a_z), a = g + hg  ->  da = d· σ (1 - σ)
            a_r_grad = a_n_grad * h_n * r * one_r
            a_z_grad = z_grad * z * one_z
            torch.cat([a_r_grad, a_z_grad, a_n_grad], dim=1, out=g_grad)
            # hg enters a_r, a_z directly and a_n through r ⊙ hg_n
            torch.cat([a_r_grad, a_z_grad, a_n_grad * r], dim=1, out=hg_grad)
            # hg = W_hh h + b_hh  ->  dh = dhg W_hh; plus the direct path z h
            carry = torch.addmm(state_grad * z, hg_grad, weight_hh)
            # g = x + mix(α)  ->  dα from the mixer (+ what the readout sends back through α)
            alpha_grad = mixer.backward_step(t, g_grad) + alpha_out_s[t]  # (B, h·T_s)
            if heads > 1:  # the softmax ran per head
                alpha, alpha_grad = alpha.view(batch, heads, -1), alpha_grad.view(batch, heads, -1)
            # α = softmax(s) on real positions, 0 elsewhere: ds = α ⊙ (dα - Σ α dα); masked
            # positions and empty rows have α = 0, so their ds is 0 as under autograd
            score_grad = alpha * (alpha_grad - (alpha * alpha_grad).sum(-1, keepdim=True))
            carry += scorer.backward_step(t, score_grad)
        # The weights' gradients, each one GEMM over all steps (T_t·B rows)
        flat_prev_states = prev_states.reshape(-1, hidden)
        flat_hidden_gates_grad = hidden_gates_grad.reshape(-1, 3 * hidden)
        weight_hh_grad = flat_hidden_gates_grad.t() @ flat_prev_states  # (3H, H)
        bias_hh_grad = flat_hidden_gates_grad.sum(0)  # (3H,)
        mixer_grads = mixer.grads(weights, gates_grad)
        scorer_grads = scorer.grads(flat_prev_states)
        input_gates_grad = gates_grad.transpose(0, 1)  # (B, T_t, 3H)
        return (
            input_gates_grad,
            carry,
            None,  # mask
            weight_hh_grad,
            bias_hh_grad,
            None,  # mixer_class
            None,  # scorer_class
            None,  # mixer_size
            *mixer_grads,
            *scorer_grads,
        )


def masked_softmax_into(scores: Tensor, mask: Tensor, unmasked: Tensor, out: Tensor) -> Tensor:
    """:func:`seq2seq.model.attention.masked_softmax` of ``scores`` written into ``out``, with
    ``unmasked`` (``~mask``) made once per batch instead of per step: the same operations,
    two operator calls fewer per step."""
    filled = scores.masked_fill(unmasked, torch.finfo(scores.dtype).min)
    return torch.mul(torch.softmax(filled, dim=-1), mask, out=out)
