"""How a Bahdanau step's context enters the GRU's gates, given the step's attention weights.

The context is linear in the weights (``c = α U + b``), so its share of the input gates,
``W_c c``, can be computed from the weights directly, two ways; :func:`context_mixer` picks the
cheaper one for each mechanism's shape:

* :class:`ValueGates` (one head): the values projected into gate space once per batch,
  ``V = U W_cᵀ`` (B, T_s, 3H), then per step ``α V`` — a (B, 1, T_s) × (B, T_s, 3H) product
  instead of the context's (B, D_k) × (D_k, 3H) projection;
* :class:`ProjectedContext` (several heads): each head's context ``α_h V_h`` per step, then
  one (B, h·d) × (h·d, 3H) projection by ``W = W_c W^O`` — gate-space values for h·T_s
  positions would be h times as large, re-read at every step.

The fused recurrence (:mod:`seq2seq.model.fused.recurrence`) calls :meth:`forward_step` and
:meth:`backward_step` and, once after its reverse loop, :meth:`grads`, with the derivative
written beside each line.
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


class ValueGates:
    """``g = α · V``: V (B, P, 3H), the values in gate space for P = T_s positions."""

    def __init__(self, values: Tensor) -> None:
        self.values = values

    def gates(self, alpha: Tensor) -> Tensor:
        """alpha (B, P) -> the context's gates (B, 3H)."""
        return torch.bmm(alpha.unsqueeze(1), self.values).squeeze(1)

    forward_step = gates  # nothing to keep for backward

    def backward_step(self, t: int, gates_grad: Tensor) -> Tensor:
        """dL/dg_t (B, 3H) -> dL/dα_t (B, P)."""
        # g = α V -> dα = dg Vᵀ (as (B, 1, 3H) x (B, 3H, P): bmm is ten times slower with the
        # vector on the right)
        return torch.bmm(gates_grad.unsqueeze(1), self.values.transpose(1, 2)).squeeze(1)

    def grads(self, weights: Tensor, gates_grads: Tensor) -> tuple[Tensor]:
        """weights (T_t, B, P), gates_grads (T_t, B, 3H) -> (dL/dV,): one batched GEMM."""
        # g_t = α_t V: dV[b] = Σ_t α_t[b]ᵀ dg_t[b]
        return (torch.bmm(weights.permute(1, 2, 0), gates_grads.transpose(0, 1)),)


class ProjectedContext:
    """``g = W · concat_h(α_h V_h)``: values V (B, h, T_s, d), W (3H, h·d); the weights α are
    the heads' side by side, (B, h·T_s)."""

    def __init__(self, values: Tensor, weight: Tensor) -> None:
        self.values, self.weight = values, weight
        batch, heads, src_len, size = values.shape
        self.flat_values = values.reshape(batch * heads, src_len, size)  # (B·h, T_s, d)
        self.contexts: list[Tensor] = []  # forward: each step's concat_h(α_h V_h) (B, h·d)

    def context(self, alpha: Tensor) -> Tensor:
        """alpha (B, h·T_s) -> the heads' contexts side by side (B, h·d)."""
        heads_alpha = alpha.reshape(self.flat_values.size(0), 1, -1)  # (B·h, 1, T_s)
        return torch.bmm(heads_alpha, self.flat_values).reshape(alpha.size(0), -1)

    def gates(self, alpha: Tensor) -> Tensor:
        """alpha (B, h·T_s) -> the context's gates (B, 3H)."""
        return self.context(alpha) @ self.weight.t()

    def forward_step(self, alpha: Tensor) -> Tensor:
        context = self.context(alpha)
        self.contexts.append(context)
        return context @ self.weight.t()

    def backward_step(self, t: int, gates_grad: Tensor) -> Tensor:
        """dL/dg_t (B, 3H) -> dL/dα_t (B, h·T_s); keeps dL/dc_t for :meth:`grads`."""
        if t == len(self.contexts) - 1:
            self.context_grads = gates_grad.new_empty(len(self.contexts), *self.contexts[0].shape)
        # g = W c -> dc = dg W
        context_grad = gates_grad @ self.weight  # (B, h·d)
        self.context_grads[t] = context_grad
        # c_h = α_h V_h -> dα_h = dc_h V_hᵀ
        heads_grad = context_grad.reshape(self.flat_values.size(0), 1, -1)  # (B·h, 1, d)
        alpha_grad = torch.bmm(heads_grad, self.flat_values.transpose(1, 2))  # (B·h, 1, T_s)
        return alpha_grad.reshape(gates_grad.size(0), -1)

    def grads(self, weights: Tensor, gates_grads: Tensor) -> tuple[Tensor, Tensor]:
        """weights (T_t, B, h·T_s), gates_grads (T_t, B, 3H) -> (dL/dV, dL/dW), each one
        GEMM over all steps."""
        steps, batch = weights.shape[:2]
        heads_batch, src_len, size = self.flat_values.shape
        # g_t = W c_t: dW = Σ_t dg_tᵀ c_t
        contexts = torch.stack(self.contexts, 0).reshape(steps * batch, -1)
        weight_grad = gates_grads.reshape(steps * batch, -1).t() @ contexts  # (3H, h·d)
        # c_t,h = α_t,h V_h: dV_h = Σ_t α_t,hᵀ dc_t,h
        alphas = weights.reshape(steps, heads_batch, src_len).permute(1, 2, 0)  # (B·h, T_s, T_t)
        context_grads = self.context_grads.reshape(steps, heads_batch, size).transpose(0, 1)
        values_grad = torch.bmm(alphas, context_grads).view_as(self.values)  # (B, h, T_s, d)
        return values_grad, weight_grad


Mixer = ValueGates | ProjectedContext


def context_mixer(
    attention: Attention, memory: Memory, weight: Tensor
) -> tuple[Mixer, Tensor | None]:
    """How ``weight`` (out, D_k) times a step's context is made from the step's weights
    (B, heads·T_s) for ``attention`` over ``memory``, and its constant part (B, out) or None:
    ``W c = mixer(α) + bias``."""
    if isinstance(attention, AdditiveAttention | ScaledDotProductAttention):
        return ValueGates(memory.values @ weight.t()), None  # c = α V: W c = α (V Wᵀ)
    if isinstance(attention, MultiHeadAttention):
        # W (W^O concat_h(α_h V_h) + b) = (W W^O) concat_h(α_h V_h) + W b: the heads' contexts
        # per step through one combined (out, h·d) matrix; the bias only where the row has a
        # real token
        has_real = memory.mask.any(dim=1, keepdim=True)  # (B, 1)
        bias = (attention.output_layer.bias @ weight.t()) * has_real
        return ProjectedContext(memory.values, weight @ attention.output_layer.weight), bias
    raise TypeError(f"{type(attention).__name__} has no context mixer")


def mixer_tensors(mixer: Mixer) -> tuple[Tensor, ...]:
    """What ``mixer`` was built from, in its constructor's order (the node's inputs)."""
    if isinstance(mixer, ValueGates):
        return (mixer.values,)
    return (mixer.values, mixer.weight)
