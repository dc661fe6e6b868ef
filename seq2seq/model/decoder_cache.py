"""The Transformer decoder's state while decoding: every layer's cached self-attention keys and
values (:class:`DecoderCache`), stored so that a step reads and extends them in place."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class DecoderCache:
    """The decoder's state while decoding: every layer's self-attention keys and values of
    the tokens so far, the first ``length`` positions of ``keys``/``values``
    (B, L, h, capacity, d).

    Stored layer by layer (seen batch first), with room for more tokens: a step writes its
    token's keys and values in place and attends over a view of the prefix, so no step copies
    the prefix (the capacity doubles when it is full). Like the GRU decoder's state tensor, it
    has ``index_select(0, rows)`` (beam search)."""

    keys: Tensor
    values: Tensor
    length: int = 0

    @classmethod
    def empty(
        cls, batch: int, layers: int, heads: int, head_dim: int, device: torch.device
    ) -> DecoderCache:
        return cls(*(_layer_major(layers, batch, heads, 8, head_dim, device) for _ in range(2)))

    def index_select(self, dim: int, rows: Tensor) -> DecoderCache:
        assert dim == 0, "a cache is reordered along the batch"
        keys, values = (
            x.transpose(0, 1).index_select(1, rows).transpose(0, 1)
            for x in (self.keys, self.values)
        )
        return DecoderCache(keys, values, self.length)

    def with_room(self) -> DecoderCache:
        """This cache, or a copy with twice the capacity when it has no room for a token."""
        batch, layers, heads, capacity, head_dim = self.keys.shape
        if self.length < capacity:
            return self
        grown = DecoderCache(
            *(_layer_major(layers, batch, heads, 2 * capacity, head_dim, self.keys.device)
              for _ in range(2)),
            self.length,
        )  # fmt: skip
        grown.keys[:, :, :, :capacity] = self.keys
        grown.values[:, :, :, :capacity] = self.values
        return grown


def _layer_major(
    layers: int, batch: int, heads: int, capacity: int, head_dim: int, device: torch.device
) -> Tensor:
    """Zeros of shape (B, L, h, capacity, d) whose layers lie one after another in memory."""
    return torch.zeros(layers, batch, heads, capacity, head_dim, device=device).transpose(0, 1)
