"""The model's shape as plain data: what a checkpoint stores to rebuild a model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    attention_hidden_size: int | None = None  # additive attention's; None = hidden_size
    decoder: str = "bahdanau"  # arrangement, one of DECODER_TYPES (older checkpoints: bahdanau)
    # additive energies' tanh in the training recurrence: "tanh" or "sigmoid" (never "auto":
    # resolved at the start of a run; see seq2seq.model.tanh)
    tanh: str = "tanh"
    # the network: "rnn" (the GRU encoder-decoder) or "transformer"; the fields below are the
    # Transformer's (hidden_size is its model size, encoder_layers its encoder's layers)
    kind: str = "rnn"
    decoder_layers: int = 1
    ff_size: int = 512
    max_positions: int = 256
    alignment_layer: int = -1  # the decoder layer whose cross-attention is reported

    @classmethod
    def from_dict(cls, stored: dict[str, Any], legacy_tanh: str | None = None) -> ModelSpec:
        """Rebuild from a checkpoint's ``model_spec``, including older names of fields
        (``legacy_tanh``: the form older checkpoints recorded apart, in ``numerics``)."""
        fields = dict(stored)
        if "tanh" not in fields and legacy_tanh is not None:  # checkpoints before model.tanh
            fields["tanh"] = legacy_tanh
        for old, new in LEGACY_FIELD_NAMES.items():
            if old in fields:
                fields[new] = fields.pop(old)
        return cls(**fields)


# Field names that checkpoints written by earlier versions use.
LEGACY_FIELD_NAMES = {"attention_size": "attention_hidden_size"}
