"""The teacher-forced Bahdanau recurrence as one autograd node, with a hand-written backward.

Under plain autograd, :class:`~seq2seq.model.decoder.BahdanauDecoder` records about twenty
small operations per target step and backward replays them one by one, accumulating the
weight gradients step by step. :class:`FusedBahdanauRecurrence` runs the same step loop
without recording a graph, keeps what backward needs (the states, the attention weights, the
gate activations), and in backward loops once in reverse over the steps, carrying the state's
gradient; the gradients of the weights (``weight_hh``, ``bias_hh``, the query layer, ...) are
then each one matrix product over all steps, as cuDNN does for its RNNs.

One step, for the previous state ``h`` (B, H) and the step's input gates ``x`` (B, 3H)::

    s   = score(h)                          (B, [h,] T_s)  additive, dot or multi-head
    α   = masked_softmax(s, mask)           (B, h·T_s)     the attention weights, per head
    g   = x + α · V                          (B, 3H)        V = W_c·U, (B, h·T_s, 3H)
    hg  = W_hh h + b_hh                      (B, 3H)
    r   = σ(g_r + hg_r),  z = σ(g_z + hg_z)
    n   = tanh(g_n + r ⊙ hg_n)
    h'  = n + z ⊙ (h - n)                    = (1 - z) n + z h

``V`` are the values in gate space (:meth:`Attention.project_values`: the context is linear in
the weights, ``c = α U + b``, so ``W_c c = α (U W_cᵀ) + W_c b``; the decoder adds ``W_c b`` to
``x``). Additive, dot-product and
multi-head attention are covered, each by its scorer; :func:`fused_scorer` says whether a
mechanism is, and the decoder keeps its autograd loop for any other. With ``h`` heads the
softmax runs per head and ``α`` is the heads' weights side by side. Internally everything is
time-major (T_t, B, ...) so that each step's slice is contiguous.

Forward runs the autograd loop's operations in the same order, so states and weights come out
the same; backward sums over the steps in another order, so gradients agree up to rounding
(tests/test_fused_recurrence.py holds both, and gradcheck holds the backward exact).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from seq2seq.model.attention import (
    AdditiveAttention,
    Attention,
    Memory,
    MultiHeadAttention,
    ScaledDotProductAttention,
    masked_softmax,
)
from seq2seq.model.context import Mixer, ValueGates
from seq2seq.model.tanh import KERNELS as TANH_KERNELS


class AdditiveScorer:
    """``s[b, j] = v · tanh(W_a h[b] + b_a + K[b, j])`` with ``K = U_a k`` (B, T_s, A).

    The energies ``E_t = tanh(q_t + K)`` (B, T_s, A) are the step's largest tensor, and backward
    needs them for ``tanh'`` and for ``v``'s gradient. Kept for every step, as autograd would, they
    are T_t fresh tensors per batch (tens of MB at the default sizes) written once and read back
    in backward from main memory; so forward keeps only the queries ``q_t`` (B, A) and backward
    recomputes each step's energies, the same operations on the same inputs (so the same
    values), into one buffer that stays in the cache, as activation checkpointing does.
    Measured: the recomputation's add and tanh cost less than writing and re-reading the kept
    energies (docs/performance.md).

    :attr:`tanh` is the in-place kernel of the attention's form (:mod:`seq2seq.model.tanh`);
    :data:`ADDITIVE_SCORERS` holds one subclass per form.
    """

    tanh = staticmethod(TANH_KERNELS["tanh"])

    def __init__(self, keys: Tensor, query_weight: Tensor, query_bias: Tensor, v: Tensor) -> None:
        """keys (B, T_s, A) = U_a k, query_weight (A, H), query_bias (A,), v (1, A)."""
        self.keys, self.query_weight, self.query_bias = keys, query_weight, query_bias
        self.v = v.reshape(-1)  # (A,)
        self.energy = torch.empty_like(keys)  # E_t (B, T_s, A), one step's at a time
        self.queries: list[Tensor] = []  # q_t (B, A) per step

    def energies(self, query: Tensor) -> Tensor:
        """E = tanh(q + K) into the one buffer, in the attention's form (seq2seq.model.tanh):
        the largest element-wise cost of a step; both forms agree to float32 rounding with the
        plain path. query (B, A) -> E (B, T_s, A)."""
        return self.tanh(torch.add(self.keys, query.unsqueeze(1), out=self.energy))

    def scores(self, state: Tensor) -> Tensor:
        """The next step's scores for the previous state (B, H) -> (B, T_s)."""
        query = torch.addmm(self.query_bias, state, self.query_weight.t())  # (B, A)
        self.queries.append(query)
        return self.energies(query) @ self.v  # (B, T_s)

    def start_backward(self) -> None:
        batch, src_len, size = self.keys.shape
        steps = len(self.queries)
        self.query_grads = self.keys.new_empty(steps, batch, size)  # dL/dq per step
        self.score_grads = self.keys.new_empty(steps, batch, src_len)  # dL/ds per step
        self.keys_grad_sq = torch.zeros_like(self.keys)  # Σ_t ds_t ⊙ E_t², (B, T_s, A)
        self.v_grad = self.v.new_zeros(size)  # (A,)

    def backward_step(self, t: int, score_grad: Tensor) -> Tensor:
        """dL/ds_t (B, T_s) -> this step's share of dL/dh_{t-1} (B, H)."""
        energy = self.energies(self.queries[t])  # recomputed, as forward made it
        self.score_grads[t] = score_grad
        # s = E v  ->  dv = Σ_{b, j} ds[b, j] E[b, j] (a GEMV per step)
        self.v_grad.addmv_(energy.view(-1, energy.size(-1)).t(), score_grad.reshape(-1))
        # s = Σ_a v_a E_a, E = tanh(q + K): ∂s/∂q = ∂s/∂K = v ⊙ (1 - E²), so
        # dq[b] = v ⊙ Σ_j ds[b, j] (1 - E[b, j]²) = v ⊙ (Σ_j ds[b, j] - ds[b] · E[b]²)
        squared = energy.mul_(energy)  # E² (B, T_s, A), in place: E is not needed any more
        weighted_sq = torch.bmm(score_grad.unsqueeze(1), squared).squeeze(1)  # (B, A)
        query_grad = self.v * (score_grad.sum(1, keepdim=True) - weighted_sq)  # (B, A)
        self.query_grads[t] = query_grad
        # dK[b, j] = v ⊙ Σ_t ds_t[b, j] (1 - E_t[b, j]²): the E² part accumulates here
        self.keys_grad_sq.addcmul_(score_grad.unsqueeze(2), squared)
        # q = W_a h + b_a  ->  dh = dq W_a
        return query_grad @ self.query_weight

    def grads(self, prev_states: Tensor) -> tuple[Tensor | None, ...]:
        """All steps' weight gradients at once; prev_states (T_t·B, H) = h_{t-1} of every step.

        -> grads of (keys, query_weight, query_bias, v), as passed to :meth:`__init__`.
        """
        flat_query_grads = self.query_grads.reshape(-1, self.keys.size(-1))  # (T_t·B, A)
        # q_t = W_a h_{t-1} + b_a: dW_a = Σ_t dq_tᵀ h_{t-1}, one GEMM over all steps
        query_weight_grad = flat_query_grads.t() @ prev_states  # (A, H)
        query_bias_grad = flat_query_grads.sum(0)  # (A,)
        # K enters every step: dK = v ⊙ (Σ_t ds_t - Σ_t ds_t E_t²)
        score_grad_sum = self.score_grads.sum(0).unsqueeze(2)  # (B, T_s, 1)
        keys_grad = self.v * (score_grad_sum - self.keys_grad_sq)  # (B, T_s, A)
        return keys_grad, query_weight_grad, query_bias_grad, self.v_grad.unsqueeze(0)


class MultiHeadScorer:
    """``s[b, h, j] = scale · q_h[b] · K[b, h, j]`` with ``q = W_q h + b_q`` split into heads.

    Forward keeps the queries q_t (B, h, d) of every step for the keys' gradient.
    """

    def __init__(
        self, keys: Tensor, query_weight: Tensor, query_bias: Tensor, scale: float
    ) -> None:
        """keys (B, h, T_s, d) = per-head W^K k, query_weight (h·d, H), query_bias (h·d,)."""
        self.keys, self.query_weight, self.query_bias, self.scale = (
            keys, query_weight, query_bias, scale,
        )  # fmt: skip
        self.heads = keys.size(1)
        self.keys_t = keys.transpose(2, 3).contiguous()  # (B, h, d, T_s), once, not per step
        self.queries: list[Tensor] = []  # q_t (B, h, d) per step

    def scores(self, state: Tensor) -> Tensor:
        """The next step's scores for the previous state (B, H) -> (B, h, T_s)."""
        query = torch.addmm(self.query_bias, state, self.query_weight.t())  # (B, h·d)
        query = query.view(query.size(0), self.heads, 1, -1)  # (B, h, 1, d)
        self.queries.append(query.squeeze(2))
        return (query @ self.keys_t).squeeze(2) * self.scale

    def start_backward(self) -> None:
        steps = len(self.queries)
        self.query_grads = self.keys.new_empty(steps, *self.queries[0].shape)  # (T_t, B, h, d)
        self.score_grads = self.keys.new_empty(steps, *self.keys.shape[:3])  # (T_t, B, h, T_s)

    def backward_step(self, t: int, score_grad: Tensor) -> Tensor:
        """dL/ds_t (B, h, T_s) -> this step's share of dL/dh_{t-1} (B, H)."""
        self.score_grads[t] = score_grad
        # s_h = scale · K_h q_h  ->  dq_h = scale · ds_hᵀ K_h
        query_grad = (score_grad.unsqueeze(2) @ self.keys).squeeze(2) * self.scale  # (B, h, d)
        self.query_grads[t] = query_grad
        # q = W_q h + b_q  ->  dh = dq W_q
        return query_grad.flatten(1) @ self.query_weight

    def grads(self, prev_states: Tensor) -> tuple[Tensor | None, ...]:
        """prev_states (T_t·B, H) -> grads of (keys, query_weight, query_bias, scale)."""
        # dK[b, h] = scale · Σ_t ds_t[b, h]ᵀ q_t[b, h]: one batched GEMM over (b, h), steps inside
        steps, batch, heads, src_len = self.score_grads.shape
        score_grads = self.score_grads.permute(1, 2, 3, 0).reshape(batch * heads, src_len, steps)
        queries = torch.stack(self.queries, 0).permute(1, 2, 0, 3).reshape(batch * heads, steps, -1)
        keys_grad = torch.bmm(score_grads, queries).view_as(self.keys) * self.scale
        flat_query_grads = self.query_grads.reshape(steps * batch, -1)  # (T_t·B, h·d)
        query_weight_grad = flat_query_grads.t() @ prev_states  # (h·d, H)
        return keys_grad, query_weight_grad, flat_query_grads.sum(0), None


class DotScorer:
    """``s[b, j] = scale · (W_q h[b]) · k[b, j]``; without ``W_q`` the query is ``h`` itself.

    Forward keeps the queries q_t (B, D_k) of every step for the keys' gradient.
    """

    def __init__(self, keys: Tensor, query_weight: Tensor | None, scale: float) -> None:
        """keys (B, T_s, D_k), query_weight (D_k, H) or None when H == D_k."""
        self.keys, self.query_weight, self.scale = keys, query_weight, scale
        self.queries: list[Tensor] = []  # q_t (B, D_k) per step

    def scores(self, state: Tensor) -> Tensor:
        """The next step's scores for the previous state (B, H) -> (B, T_s)."""
        query = state if self.query_weight is None else state @ self.query_weight.t()
        self.queries.append(query)
        return torch.bmm(query.unsqueeze(1), self.keys.transpose(1, 2)).squeeze(1) * self.scale

    def start_backward(self) -> None:
        steps = len(self.queries)
        self.query_grads = self.keys.new_empty(steps, *self.queries[0].shape)  # dL/dq per step
        self.score_grads = self.keys.new_empty(steps, *self.keys.shape[:2])  # dL/ds per step

    def backward_step(self, t: int, score_grad: Tensor) -> Tensor:
        """dL/ds_t (B, T_s) -> this step's share of dL/dh_{t-1} (B, H)."""
        self.score_grads[t] = score_grad
        # s = scale · K q  ->  dq = scale · dsᵀ K
        query_grad = torch.bmm(score_grad.unsqueeze(1), self.keys).squeeze(1) * self.scale
        self.query_grads[t] = query_grad
        # q = W_q h  ->  dh = dq W_q  (or dh = dq when q = h)
        return query_grad if self.query_weight is None else query_grad @ self.query_weight

    def grads(self, prev_states: Tensor) -> tuple[Tensor | None, ...]:
        """prev_states (T_t·B, H) -> grads of (keys, query_weight, scale), all steps at once."""
        # s_t = scale · K q_t: dK[b] = scale · Σ_t ds_t[b]ᵀ q_t[b], one batched GEMM over steps
        score_grads = self.score_grads.permute(1, 2, 0)  # (B, T_s, T_t)
        keys_grad = torch.bmm(score_grads, torch.stack(self.queries, 1)) * self.scale
        query_weight_grad = None
        if self.query_weight is not None:
            # q_t = W_q h_{t-1}: dW_q = Σ_t dq_tᵀ h_{t-1}, one GEMM over all steps
            flat_query_grads = self.query_grads.reshape(-1, self.query_grads.size(-1))
            query_weight_grad = flat_query_grads.t() @ prev_states  # (D_k, H)
        return keys_grad, query_weight_grad, None  # the scale is a constant


Scorer = AdditiveScorer | DotScorer | MultiHeadScorer
#: ``model.tanh`` form -> the additive scorer computing its energies in that form.
ADDITIVE_SCORERS: dict[str, type[AdditiveScorer]] = {
    form: type(f"AdditiveScorer_{form}", (AdditiveScorer,), {"tanh": staticmethod(kernel)})
    for form, kernel in TANH_KERNELS.items()
}


def fused_scorer(attention: Attention, memory: Memory) -> tuple[type[Scorer], tuple] | None:
    """The scorer class and its tensors for ``attention``, or None when it is not covered."""
    if isinstance(attention, AdditiveAttention):
        layer = attention.query_layer
        scorer_inputs = (
            memory.scores_from,
            layer.weight,
            layer.bias,
            attention.energy_layer.weight,
        )
        return ADDITIVE_SCORERS[attention.tanh_form], scorer_inputs
    if isinstance(attention, ScaledDotProductAttention):
        query_weight = None if attention.query_layer is None else attention.query_layer.weight
        return DotScorer, (memory.scores_from, query_weight, attention.scale)
    if isinstance(attention, MultiHeadAttention):
        layer = attention.query_layer
        return MultiHeadScorer, (memory.scores_from, layer.weight, layer.bias, attention.scale)
    return None


class FusedBahdanauRecurrence(torch.autograd.Function):
    """All steps of the Bahdanau recurrence in one node; see the module docstring.

    ``apply(input_gates, state, mask, weight_hh, bias_hh, mixer_class, scorer_class,
    mixer_size, *tensors)``:

    input_gates (B, T_t, 3H)     ``W_ih^e e(y_{t-1}) + b_ih`` (+ ``W_c b``) for every step
    state       (B, H)           the initial state
    mask        (B, T_s) bool    True = real source token
    weight_hh (3H, H), bias_hh (3H,)
    mixer_class, scorer_class: how the context enters the gates (:mod:`seq2seq.model.context`)
        and how the scores are made (:func:`fused_scorer`)
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
            masked_softmax(scores, per_head, unmasked=unmasked, out=softmax_steps[t])
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


def fused_bahdanau_recurrence(
    input_gates: Tensor,
    state: Tensor,
    mixer: Mixer,
    memory: Memory,
    weight_hh: Tensor,
    bias_hh: Tensor,
    attention: Attention,
) -> tuple[Tensor, Tensor]:
    """Run the recurrence for a covered ``attention`` (see :func:`fused_scorer`) with the
    context entering the gates through ``mixer`` (:meth:`Attention.context_mixer`).

    input_gates (B, T_t, 3H), state (B, H) -> states (B, T_t, H), weights (B, T_t, h·T_s).
    """
    scorer = fused_scorer(attention, memory)
    if scorer is None:
        raise ValueError(f"{type(attention).__name__} has no fused recurrence")
    scorer_class, scorer_inputs = scorer
    mixer_inputs = mixer_tensors(mixer)
    return FusedBahdanauRecurrence.apply(
        input_gates, state, memory.mask, weight_hh, bias_hh, type(mixer), scorer_class,
        len(mixer_inputs), *mixer_inputs, *scorer_inputs,
    )  # fmt: skip


def mixer_tensors(mixer: Mixer) -> tuple[Tensor, ...]:
    """What ``mixer`` was built from, in its constructor's order (the node's inputs)."""
    if isinstance(mixer, ValueGates):
        return (mixer.values,)
    return (mixer.values, mixer.weight)
