"""Attention mechanisms behind one masked interface, as the article writes them.

Every mechanism turns a decoder *query* and the encoder outputs (the *keys*, which are also the
*values*) into attention *weights* — where the query looks — and a *context* vector — what it
reads there, the weights' average of the values:

    step:     query (B, D_q), keys (B, T_s, D_k), mask (B, T_s)
              -> context (B, D_k), weights (B, heads, T_s)
    sequence: query (B, T_q, D_q), keys, mask
              -> context (B, T_q, D_k), weights (B, heads, T_q, T_s)

``mask`` is True for real tokens. Masked positions get exactly 0 weight, the real ones sum to 1,
and a row without any real token gets all-zero weights and a zero context (never NaN).

The two halves are two methods, :meth:`Attention.weights` (score the keys, normalise over the
real positions) and :meth:`Attention.read` (the context from the weights), and
:meth:`Attention.attend` is the one composed of them. Work that depends only on the keys (e.g.
Bahdanau's ``U_a k``) is done once per batch by :meth:`Attention.prepare`; the decoder then
calls :meth:`Attention.attend` at every step.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar, NamedTuple

import torch
from torch import Tensor, nn

from seq2seq.choices import ATTENTION_NAMES
from seq2seq.model.shapes import expect
from seq2seq.model.spec import ModelSpec


class Memory(NamedTuple):
    """What an attention mechanism keeps of the encoder outputs for a whole batch.

    keys:   what queries are compared with: the keys (B, T_s, D_k), projected keys (B, T_s, A)
            or per-head keys (B, heads, T_s, d); ``None`` for :class:`NoAttention`
    values: what the context is averaged from, (B, T_s, D_k) or (B, heads, T_s, d); for
            :class:`NoAttention`, the fixed context (B, D_k)
    mask:   (B, T_s) bool, True = real token; or (B, T_q, T_s), what each query may see
            (multi-head self-attention: padding and the causal mask together)
    """

    keys: Tensor | None
    values: Tensor
    mask: Tensor


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis with masked positions at exactly 0.

    scores: (..., T_s); mask: bool, broadcastable to ``scores``, True = real token.
    A row with no real token comes out all zeros instead of NaN: filling with the dtype's
    lowest finite value (not -inf) keeps the softmax finite, and multiplying by the mask
    zeroes such a row.
    """
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1) * mask


class Attention(nn.Module, ABC):
    """Base class: ``prepare`` once per batch, ``attend`` per decoder step (or for all steps)."""

    # False only for the baseline, which has no distribution over the source: no weights to
    # plot, extract, score against gold alignments or arrange in a decoder.
    has_weights: ClassVar[bool] = True
    num_heads: int
    context_size: int

    @abstractmethod
    def prepare(self, keys: Tensor, mask: Tensor) -> Memory:
        """keys (B, T_s, D_k), mask (B, T_s) -> :class:`Memory`."""

    @abstractmethod
    def weights(self, query: Tensor, memory: Memory) -> Tensor:
        """Where each query looks: query (B, T_q, D_q) -> weights (B, heads, T_q, T_s)."""

    @abstractmethod
    def read(self, weights: Tensor, memory: Memory) -> Tensor:
        """What the weights read: weights (B, heads, T_q, T_s) -> context (B, T_q, D_k)."""

    def attend(self, query: Tensor, memory: Memory) -> tuple[Tensor, Tensor | None]:
        """Step form for query (B, D_q), sequence form for query (B, T_q, D_q)."""
        if query.dim() == 2:
            context, weights = self.attend(query.unsqueeze(1), memory)
            return context.squeeze(1), None if weights is None else weights.squeeze(2)
        weights = self.weights(query, memory)
        return self.read(weights, memory), weights

    def forward(self, query: Tensor, keys: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        """The module on its own: query (B, D_q) or (B, T_q, D_q), keys (B, T_s, D_k), mask
        (B, T_s) -> context and weights as :meth:`attend` gives them."""
        expect(
            f"{type(self).__name__}.forward",
            {"D_k": self.context_size},
            query=(query, "B D_q" if query.dim() == 2 else "B T_q D_q"),
            keys=(keys, "B T_s D_k"),
            mask=(mask, "B T_s"),
        )
        return self.attend(query, self.prepare(keys, mask))

    @classmethod
    @abstractmethod
    def build(cls, query_dim: int, key_dim: int, spec: ModelSpec) -> Attention:
        """The mechanism for a decoder state of ``query_dim`` over keys of ``key_dim``."""


class NoAttention(Attention):
    """The baseline: every decoder step sees the same fixed vector, the encoder's final state.

    With a bidirectional encoder that is the forward half at the last real position joined to
    the backward half at the first position (exactly the GRU's final states). Weights are None.
    """

    has_weights = False
    num_heads = 0

    def __init__(self, key_dim: int, bidirectional: bool = True) -> None:
        super().__init__()
        self.context_size = key_dim
        self.bidirectional = bidirectional

    @classmethod
    def build(cls, query_dim: int, key_dim: int, spec: ModelSpec) -> NoAttention:
        return cls(key_dim, spec.bidirectional)

    def prepare(self, keys: Tensor, mask: Tensor) -> Memory:
        last = (mask.sum(dim=1) - 1).clamp(min=0)  # (B,) index of the last real token
        batch = torch.arange(keys.size(0), device=keys.device)
        final = keys[batch, last]  # (B, D_k)
        if self.bidirectional:
            half = keys.size(-1) // 2
            final = torch.cat([final[:, :half], keys[:, 0, half:]], dim=-1)
        final = final * mask.any(dim=1, keepdim=True)
        return Memory(None, final, mask)

    def weights(self, query: Tensor, memory: Memory) -> Tensor:
        raise TypeError("the fixed-vector baseline has no attention weights")

    def read(self, weights: Tensor, memory: Memory) -> Tensor:
        raise TypeError("the fixed-vector baseline reads no weights")

    def attend(self, query: Tensor, memory: Memory) -> tuple[Tensor, None]:
        if query.dim() == 2:
            return memory.values, None
        return memory.values.unsqueeze(1).expand(-1, query.size(1), -1), None


class SingleHeadAttention(Attention):
    """One distribution over the source; the context is the weighted average of the keys."""

    num_heads = 1

    def read(self, weights: Tensor, memory: Memory) -> Tensor:
        return weights.squeeze(1) @ memory.values  # c = Σ_j α_j k_j: (B, T_q, D_k)


class AdditiveAttention(SingleHeadAttention):
    """Bahdanau attention: ``score(q, k) = v_aᵀ tanh(W_a q + U_a k)``; sizes may differ."""

    def __init__(self, query_dim: int, key_dim: int, hidden_size: int) -> None:
        super().__init__()
        self.context_size = key_dim
        self.query_layer = nn.Linear(query_dim, hidden_size, bias=True)  # W_a
        self.key_layer = nn.Linear(key_dim, hidden_size, bias=False)  # U_a
        self.energy_layer = nn.Linear(hidden_size, 1, bias=False)  # v_a

    @classmethod
    def build(cls, query_dim: int, key_dim: int, spec: ModelSpec) -> AdditiveAttention:
        return cls(query_dim, key_dim, spec.attention_hidden_size or spec.hidden_size)

    def prepare(self, keys: Tensor, mask: Tensor) -> Memory:
        return Memory(self.key_layer(keys), keys, mask)  # U_a k: (B, T_s, A), once per batch

    def weights(self, query: Tensor, memory: Memory) -> Tensor:
        assert memory.keys is not None
        projected_query = self.query_layer(query).unsqueeze(2)  # W_a q: (B, T_q, 1, A)
        energy = torch.tanh(projected_query + memory.keys.unsqueeze(1))  # (B, T_q, T_s, A)
        scores = self.energy_layer(energy).squeeze(-1)  # v_aᵀ energy: (B, T_q, T_s)
        return masked_softmax(scores, memory.mask.unsqueeze(1)).unsqueeze(1)


class ScaledDotProductAttention(SingleHeadAttention):
    """``score(q, k) = q·k / √d_k``; a learned query projection only when ``D_q != D_k``."""

    def __init__(self, query_dim: int, key_dim: int) -> None:
        super().__init__()
        self.context_size = key_dim
        self.query_layer = (
            nn.Linear(query_dim, key_dim, bias=False) if query_dim != key_dim else None
        )
        self.scale = 1.0 / math.sqrt(key_dim)

    @classmethod
    def build(cls, query_dim: int, key_dim: int, spec: ModelSpec) -> ScaledDotProductAttention:
        return cls(query_dim, key_dim)

    def prepare(self, keys: Tensor, mask: Tensor) -> Memory:
        return Memory(keys, keys, mask)

    def weights(self, query: Tensor, memory: Memory) -> Tensor:
        assert memory.keys is not None
        if self.query_layer is not None:
            query = self.query_layer(query)
        scores = (query @ memory.keys.transpose(1, 2)) * self.scale  # (B, T_q, T_s)
        return masked_softmax(scores, memory.mask.unsqueeze(1)).unsqueeze(1)


class MultiHeadAttention(Attention):
    """``h`` heads of scaled dot-product attention over learned projections (Vaswani et al.).

    ``head_i = softmax(q W_i^Q (K W_i^K)ᵀ / √d) V W_i^V`` with ``d = D_k / h``; the heads are
    concatenated and projected by ``W^O``. The weights keep every head, for heatmaps.
    """

    def __init__(self, query_dim: int, key_dim: int, num_heads: int) -> None:
        super().__init__()
        if num_heads < 1 or key_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide the key size {key_dim}")
        self.num_heads = num_heads
        self.head_dim = key_dim // num_heads
        self.context_size = key_dim
        self.query_layer = nn.Linear(query_dim, key_dim)  # W^Q, all heads at once
        self.key_layer = nn.Linear(key_dim, key_dim)  # W^K
        self.value_layer = nn.Linear(key_dim, key_dim)  # W^V
        self.output_layer = nn.Linear(key_dim, key_dim)  # W^O
        self.scale = 1.0 / math.sqrt(self.head_dim)

    @classmethod
    def build(cls, query_dim: int, key_dim: int, spec: ModelSpec) -> MultiHeadAttention:
        return cls(query_dim, key_dim, spec.num_heads)

    def _split_heads(self, x: Tensor) -> Tensor:
        """(B, T, h·d) -> (B, h, T, d)."""
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

    def prepare(self, keys: Tensor, mask: Tensor) -> Memory:
        return Memory(
            self._split_heads(self.key_layer(keys)), self._split_heads(self.value_layer(keys)), mask
        )

    def weights(self, query: Tensor, memory: Memory) -> Tensor:
        assert memory.keys is not None
        heads_query = self._split_heads(self.query_layer(query))  # (B, h, T_q, d)
        scores = (heads_query @ memory.keys.transpose(2, 3)) * self.scale  # (B, h, T_q, T_s)
        return masked_softmax(scores, _per_query(memory.mask).unsqueeze(1))

    def read(self, weights: Tensor, memory: Memory) -> Tensor:
        heads_context = weights @ memory.values  # (B, h, T_q, d)
        context = self.output_layer(heads_context.transpose(1, 2).flatten(2))  # (B, T_q, D_k)
        # W^O's bias must not leak into a row that sees no real token
        has_real = _per_query(memory.mask).any(dim=-1, keepdim=True)  # (B, 1 or T_q, 1)
        return context * has_real


def _per_query(mask: Tensor) -> Tensor:
    """A memory's mask as (B, T_q or 1, T_s): a (B, T_s) padding mask holds for every query."""
    return mask.unsqueeze(1) if mask.dim() == 2 else mask


# The registry: ``attention.type`` -> mechanism. The one list of names that configs, the
# trainer, bench and compare read; ``has_weights`` is the one answer to "does it attend?".
ATTENTION_TYPES: dict[str, type[Attention]] = dict(
    zip(
        ATTENTION_NAMES,
        (NoAttention, AdditiveAttention, ScaledDotProductAttention, MultiHeadAttention),
        strict=True,
    )
)


def has_weights(name: str) -> bool:
    """Whether the mechanism called ``name`` has attention weights (all but ``none``)."""
    return ATTENTION_TYPES[name].has_weights


def build_attention(name: str, query_dim: int, key_dim: int, spec: ModelSpec) -> Attention:
    """The attention mechanism called ``name`` (a key of :data:`ATTENTION_TYPES`)."""
    if name not in ATTENTION_TYPES:
        raise ValueError(f"unknown attention {name!r}; choose one of {', '.join(ATTENTION_TYPES)}")
    return ATTENTION_TYPES[name].build(query_dim, key_dim, spec)
