"""How the fused Bahdanau recurrence scores the source at each step, forward and backward.

One scorer per mechanism with weights (additive, dot-product, multi-head), each with the step's
scores from the previous state, the step's share of the state's gradient in backward, and the
weights' gradients once after the reverse loop — each line beside its derivative.
:func:`fused_scorer` picks a mechanism's scorer; the recurrence itself, which drives a scorer,
is :mod:`seq2seq.model.fused.recurrence`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seq2seq.model.attention import (
    AdditiveAttention,
    Attention,
    Memory,
    MultiHeadAttention,
    ScaledDotProductAttention,
)
from seq2seq.model.fused.tanh import KERNELS as TANH_KERNELS


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

    :attr:`tanh` is the in-place kernel of the model's form (:mod:`seq2seq.model.fused.tanh`);
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
        """E = tanh(q + K) into the one buffer, in the model's form (seq2seq.model.fused.tanh):
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


#: The mechanisms with a scorer: every one with weights.
COVERED = (AdditiveAttention, ScaledDotProductAttention, MultiHeadAttention)


def fused_scorer(
    attention: Attention, memory: Memory, tanh: str
) -> tuple[type[Scorer], tuple] | None:
    """The scorer class and its tensors for ``attention`` over ``memory`` (additive attention's
    energies in the ``tanh`` form), or None for a mechanism without one."""
    if isinstance(attention, AdditiveAttention):
        layer = attention.query_layer
        scorer_inputs = (memory.keys, layer.weight, layer.bias, attention.energy_layer.weight)
        return ADDITIVE_SCORERS[tanh], scorer_inputs
    if isinstance(attention, ScaledDotProductAttention):
        query_weight = None if attention.query_layer is None else attention.query_layer.weight
        return DotScorer, (memory.keys, query_weight, attention.scale)
    if isinstance(attention, MultiHeadAttention):
        layer = attention.query_layer
        return MultiHeadScorer, (memory.keys, layer.weight, layer.bias, attention.scale)
    return None
