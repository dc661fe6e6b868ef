"""The Transformer encoder–decoder (Vaswani et al., 2017), built from this package's own
:class:`~seq2seq.model.attention.MultiHeadAttention` and masks.

The learner reads one attention implementation: the encoder's self-attention, the decoder's
causal self-attention and its cross-attention are all that module, ``softmax(Q Kᵀ / √d) V``
per head with masked positions at exactly 0:

    encoder layer:  x = x + SelfAttn(LN(x), pad mask);        x = x + FFN(LN(x))
    decoder layer:  y = y + SelfAttn(LN(y), causal & pad);    y = y + CrossAttn(LN(y), memory)
                    y = y + FFN(LN(y))

Layer norm comes first in each block (pre-LN, PyTorch's ``norm_first=True``: stable without a
long warm-up at these sizes), a final layer norm closes each stack, embeddings are scaled by
√D and added to fixed sinusoidal positions. Shapes (batch first): src (B, T_s), tgt (B, T_t),
model size D, heads h, d = D / h.

Decoding is incremental: the decoder's state is a :class:`DecoderCache` of every layer's
self-attention keys and values so far, so a step attends over the cached prefix instead of
re-running it (tested equal to re-running the prefix). The cross-attention keys and values of
every layer are computed once per batch (:meth:`Transformer.encode`), in one
:class:`~seq2seq.model.attention.Memory` of shape (B, L, h, T_s, d), which beam search
reorders like any other memory. Both are stored layer by layer, so that a step reads each
layer's (B, h, ·, d) keys and values in place instead of copying them (a greedy validation of
the Transformer preset ran in half the time: docs/transformer.md).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from seq2seq.choices import ModelKind
from seq2seq.data.vocab import Vocab
from seq2seq.model import parts as parts_table
from seq2seq.model.attention import Memory, MultiHeadAttention
from seq2seq.model.decoder_cache import DecoderCache
from seq2seq.model.shapes import expect
from seq2seq.model.spec import ModelSpec


def sinusoidal_positions(length: int, size: int) -> Tensor:
    """(length, size): ``PE[p, 2i] = sin(p / 10000^(2i/size))``, ``PE[p, 2i+1] = cos(...)``."""
    positions = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    rates = torch.exp(torch.arange(0, size, 2, dtype=torch.float32) * (-math.log(10000.0) / size))
    table = torch.zeros(length, size)
    table[:, 0::2] = torch.sin(positions * rates)
    table[:, 1::2] = torch.cos(positions * rates[: size // 2])
    return table


def causal_mask(length: int, device: torch.device | None = None) -> Tensor:
    """(length, length) bool: position ``j`` may see positions ``≤ j``."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


class PositionalEmbedding(nn.Embedding):
    """Token embeddings scaled by √D plus the fixed sinusoidal positions, then dropout: an
    ``nn.Embedding`` (its weight is the table) with the positions as a buffer."""

    def __init__(self, vocab_size: int, size: int, spec: ModelSpec) -> None:
        super().__init__(vocab_size, size, padding_idx=Vocab.pad_id)
        self.register_buffer(
            "positions", sinusoidal_positions(spec.max_positions, size), persistent=False
        )
        self.dropout = nn.Dropout(spec.dropout)

    def embed(self, tokens: Tensor, start: int = 0) -> Tensor:
        """tokens (B, T) at positions ``start …`` -> (B, T, D)."""
        scaled = self(tokens) * math.sqrt(self.embedding_dim)
        return self.dropout(scaled + self.positions[start : start + tokens.size(1)])


class FeedForward(nn.Module):
    """``W₂ dropout(ReLU(W₁ x))``, position by position: (B, T, D) -> (B, T, D)."""

    def __init__(self, size: int, inner: int, dropout: float) -> None:
        super().__init__()
        self.inner = nn.Linear(size, inner)
        self.outer = nn.Linear(inner, size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(self.dropout(torch.relu(self.inner(x))))


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward block (pre-LN, residual)."""

    def __init__(self, size: int, heads: int, inner: int, dropout: float) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(size, size, heads)
        self.feed_forward = FeedForward(size, inner, dropout)
        self.attention_norm = nn.LayerNorm(size)
        self.feed_forward_norm = nn.LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """x (B, T_s, D), mask (B, T_s) -> x (B, T_s, D), self-attention (B, h, T_s, T_s)."""
        normed = self.attention_norm(x)
        context, weights = self.self_attention.attend(
            normed, self.self_attention.prepare(normed, mask)
        )
        x = x + self.dropout(context)
        return x + self.dropout(self.feed_forward(self.feed_forward_norm(x))), weights


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the source, feed-forward (pre-LN, residual)."""

    def __init__(self, size: int, heads: int, inner: int, dropout: float) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(size, size, heads)
        self.cross_attention = MultiHeadAttention(size, size, heads)
        self.feed_forward = FeedForward(size, inner, dropout)
        self.self_attention_norm = nn.LayerNorm(size)
        self.cross_attention_norm = nn.LayerNorm(size)
        self.feed_forward_norm = nn.LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y: Tensor, own: Memory, source: Memory) -> tuple[Tensor, Tensor, Tensor]:
        """y (B, T_q, D); ``own`` the self-attention memory of the target so far (its mask
        (B, T_q, T_t) causal and padding) ; ``source`` this layer's cross-attention memory
        -> y (B, T_q, D), self-attention (B, h, T_q, T_t), cross-attention (B, h, T_q, T_s)."""
        context, self_weights = self.self_attention.attend(self.self_attention_norm(y), own)
        y = y + self.dropout(context)
        context, cross_weights = self.cross_attention.attend(self.cross_attention_norm(y), source)
        y = y + self.dropout(context)
        y = y + self.dropout(self.feed_forward(self.feed_forward_norm(y)))
        return y, self_weights, cross_weights

    def own_memory(self, y: Tensor, mask: Tensor) -> Memory:
        """The self-attention keys and values of ``y`` (B, T, D) with ``mask`` (B, T_q, T)."""
        return self.self_attention.prepare(self.self_attention_norm(y), mask)


class TransformerDecoder(nn.Module):
    """Target embedding + positions, the decoder layers, a final norm and the output layer.

    ``weights_layer`` is the layer whose cross-attention the decoder reports (heatmaps, AER,
    guided alignment): the last by default (:attr:`ModelSpec.alignment_layer`)."""

    arrangement = ModelKind.transformer.value  # what metrics.json records as its decoder

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        size = spec.hidden_size
        self.embedding = PositionalEmbedding(spec.tgt_vocab_size, size, spec)
        self.layers = nn.ModuleList(
            DecoderLayer(size, spec.num_heads, spec.ff_size, spec.dropout)
            for _ in range(spec.decoder_layers)
        )
        self.norm = nn.LayerNorm(size)
        self.output = nn.Linear(size, spec.tgt_vocab_size)
        self.weights_layer = spec.alignment_layer % spec.decoder_layers

    @property
    def attention(self) -> MultiHeadAttention:
        """The cross-attention whose weights this decoder reports."""
        return self.layers[self.weights_layer].cross_attention

    def forward(
        self,
        tgt_in: Tensor,
        memory: Memory,
        state: DecoderCache,
        teacher_forcing: float = 1.0,
        keep_weights: bool = False,
        all_layers: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing over the whole target at once: tgt_in (B, T_t) -> logits
        (B, T_t, V), and with ``keep_weights`` the reported layer's cross-attention
        (B, h, T_t, T_s) — or with ``all_layers`` every layer's, (B, L, h, T_t, T_s)."""
        del state  # the whole target is given: nothing is cached
        if teacher_forcing < 1.0:
            raise ValueError("the Transformer trains with full teacher forcing only")
        y = self.embedding.embed(tgt_in)
        own_mask = causal_mask(tgt_in.size(1), tgt_in.device).unsqueeze(0)  # (1, T_t, T_t)
        own_mask = own_mask & (tgt_in != Vocab.pad_id).unsqueeze(1)  # padding never seen
        cross = []
        for index, layer in enumerate(self.layers):
            own = layer.own_memory(y, own_mask)
            y, _, cross_weights = layer(y, own, layer_memory(memory, index))
            cross.append(cross_weights)
        logits = self.output(self.norm(y))
        if all_layers:
            return logits, torch.stack(cross, dim=1)
        return logits, cross[self.weights_layer] if keep_weights else None

    def step(
        self, prev: Tensor, state: DecoderCache, memory: Memory
    ) -> tuple[Tensor, DecoderCache, Tensor]:
        """One token: prev (B,) -> logits (B, V), the cache with it, the reported layer's
        cross-attention (B, h, T_s)."""
        position = state.length
        state = state.with_room()
        y = self.embedding.embed(prev.unsqueeze(1), start=position)  # (B, 1, D)
        seen = torch.ones(prev.size(0), 1, position + 1, dtype=torch.bool, device=prev.device)
        weights = None
        for index, layer in enumerate(self.layers):
            new = layer.own_memory(y, torch.ones_like(prev, dtype=torch.bool).unsqueeze(1))
            assert new.keys is not None
            # this token's keys and values after the prefix's; attend over both, (B, h, t+1, d)
            state.keys[:, index, :, position] = new.keys[:, :, 0]
            state.values[:, index, :, position] = new.values[:, :, 0]
            prefix = Memory(
                state.keys[:, index, :, : position + 1],
                state.values[:, index, :, : position + 1],
                seen,
            )
            y, _, cross_weights = layer(y, prefix, layer_memory(memory, index))
            if index == self.weights_layer:
                weights = cross_weights.squeeze(2)
        assert weights is not None
        logits = self.output(self.norm(y)).squeeze(1)
        return logits, DecoderCache(state.keys, state.values, position + 1), weights

    def empty_cache(self, batch: int, device: torch.device) -> DecoderCache:
        """The state before the first token: no keys and values yet, room for a few."""
        layer = self.layers[0].self_attention
        return DecoderCache.empty(batch, len(self.layers), layer.num_heads, layer.head_dim, device)


def layer_memory(memory: Memory, index: int) -> Memory:
    """Layer ``index``'s cross-attention memory out of the stacked (B, L, h, T_s, d) one."""
    assert memory.keys is not None
    return Memory(memory.keys[:, index], memory.values[:, index], memory.mask)


class TransformerEncoder(nn.Module):
    """Source embedding + positions, the encoder layers, a final norm."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        size = spec.hidden_size
        self.embedding = PositionalEmbedding(spec.src_vocab_size, size, spec)
        self.layers = nn.ModuleList(
            EncoderLayer(size, spec.num_heads, spec.ff_size, spec.dropout)
            for _ in range(spec.encoder_layers)
        )
        self.norm = nn.LayerNorm(size)

    def forward(
        self, src: Tensor, src_mask: Tensor, keep_weights: bool = False
    ) -> tuple[Tensor, list[Tensor]]:
        """src (B, T_s), src_mask (B, T_s) -> outputs (B, T_s, D) (zeros at padding), and
        with ``keep_weights`` each layer's self-attention (B, h, T_s, T_s)."""
        x = self.embedding.embed(src)
        weights = []
        for layer in self.layers:
            x, layer_weights = layer(x, src_mask)
            if keep_weights:
                weights.append(layer_weights)
        return self.norm(x) * src_mask.unsqueeze(-1), weights


@torch.no_grad()
def encoder_self_attention(model: Transformer, src: Tensor, src_mask: Tensor) -> list:
    """Each encoder layer's self-attention, as NumPy (B, h, T_s, T_s) arrays (eval mode)."""
    was_training = model.training
    model.eval()
    try:
        _, weights = model.encoder(src, src_mask, keep_weights=True)
    finally:
        model.train(was_training)
    return [w.float().cpu().numpy() for w in weights]


class Transformer(nn.Module):
    """The encoder–decoder Transformer behind the same interface as
    :class:`~seq2seq.model.encoder_decoder.Seq2Seq`: ``encode``, ``forward``, ``decoder.step``,
    ``attention`` (the reported cross-attention), ``parameter_counts``, ``summary``."""

    #: Guided alignment pulls one cross-attention head of the reported layer (as fairseq's
    #: and OpenNMT's guided Transformers do); the other heads stay free.
    guided_heads = slice(0, 1)

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.encoder = TransformerEncoder(spec)
        self.decoder = TransformerDecoder(spec)

    @property
    def attention(self) -> MultiHeadAttention:
        return self.decoder.attention

    @property
    def decoder_layer_count(self) -> int:
        """The decoder layers, each with a cross-attention of its own."""
        return len(self.decoder.layers)

    @property
    def max_source_length(self) -> int:
        """The longest source it reads: the position table holds the tokens and ``<eos>``."""
        return self.spec.max_positions - 1

    @property
    def max_output_length(self) -> int:
        """The most tokens it emits: ``<bos>`` and all but the last take a position."""
        return self.spec.max_positions

    def encode(
        self, src: Tensor, src_lengths: Tensor, src_mask: Tensor
    ) -> tuple[Memory, DecoderCache]:
        """src (B, T_s), src_lengths (B,), src_mask (B, T_s) -> every decoder layer's
        cross-attention memory, stacked (B, L, h, T_s, d), and an empty :class:`DecoderCache`."""
        expect("Transformer.encode", src=(src, "B T_s"), src_mask=(src_mask, "B T_s"))
        del src_lengths  # the mask says it
        outputs, _ = self.encoder(src, src_mask)
        prepared = [
            layer.cross_attention.prepare(outputs, src_mask) for layer in self.decoder.layers
        ]
        # Stored layer by layer and seen batch first: each layer's (B, h, T_s, d) slice is then
        # contiguous, so its attention's batched products read it in place at every step.
        memory = Memory(
            torch.stack([p.keys for p in prepared]).transpose(0, 1),  # type: ignore[misc]
            torch.stack([p.values for p in prepared]).transpose(0, 1),
            src_mask,
        )
        return memory, self.decoder.empty_cache(src.size(0), src.device)

    def forward(
        self,
        src: Tensor,
        src_lengths: Tensor,
        src_mask: Tensor,
        tgt_in: Tensor,
        teacher_forcing: float = 1.0,
        keep_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """src (B, T_s), src_lengths (B,), src_mask (B, T_s), tgt_in (B, T_t) -> logits
        (B, T_t, V), the reported cross-attention (B, h, T_t, T_s) when ``keep_weights``."""
        expect("Transformer.forward", src=(src, "B T_s"), tgt_in=(tgt_in, "B T_t"))
        memory, state = self.encode(src, src_lengths, src_mask)
        return self.decoder(tgt_in, memory, state, teacher_forcing, keep_weights)

    def cross_attention(
        self, src: Tensor, src_lengths: Tensor, src_mask: Tensor, tgt_in: Tensor
    ) -> Tensor:
        """Every decoder layer's cross-attention under teacher forcing: (B, L, h, T_t, T_s)."""
        memory, state = self.encode(src, src_lengths, src_mask)
        _, weights = self.decoder(tgt_in, memory, state, all_layers=True)
        assert weights is not None
        return weights

    def parameter_counts(self) -> dict[str, int]:
        """Trainable parameters per part."""
        parts = {
            "encoder.embedding": self.encoder.embedding,
            "encoder.layers": nn.ModuleList([*self.encoder.layers, self.encoder.norm]),
            "decoder.embedding": self.decoder.embedding,
            "decoder.layers": nn.ModuleList([*self.decoder.layers, self.decoder.norm]),
            "decoder.output": self.decoder.output,
        }
        return parts_table.parameter_counts(self, parts)

    def summary(self) -> str:
        """A readable table of parameter counts per part."""
        spec = self.spec
        header = (
            f"Transformer(layers={spec.encoder_layers}+{spec.decoder_layers}, "
            f"heads={spec.num_heads}, size={spec.hidden_size}, ff={spec.ff_size}, "
            f"reported cross-attention: layer {self.decoder.weights_layer + 1}, "
            f"vocab {spec.src_vocab_size}→{spec.tgt_vocab_size})"
        )
        return parts_table.summary(header, self.parameter_counts())
