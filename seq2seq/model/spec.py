"""The model's shape as plain data: what a checkpoint stores to rebuild a model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to rebuild a model (stored in checkpoints as plain data)."""

    src_vocab_size: int
    tgt_vocab_size: int
    attention: str = "additive"
    embed_size: int = 64
    hidden_size: int = 128
    encoder_layers: int = 1
    bidirectional: bool = True
    dropout: float = 0.1
    num_heads: int = 1
    attention_size: int | None = None  # additive attention's hidden size; None = hidden_size
    decoder: str = "bahdanau"  # arrangement, one of DECODER_TYPES (older checkpoints: bahdanau)
