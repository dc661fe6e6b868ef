"""The model's shape as plain data: what a checkpoint stores to rebuild a model.

A new run makes its spec from the config's ``model`` and ``attention`` sections
(:func:`seq2seq.training.build.model_spec`), where every default lives; so no field here has a
default of its own. A checkpoint written before a field existed is read with the value that
version built its models with (:data:`WRITTEN_BEFORE_THE_FIELD`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to rebuild a model (stored in checkpoints as plain data)."""

    src_vocab_size: int
    tgt_vocab_size: int
    attention: str  # one of seq2seq.choices.AttentionType
    embed_size: int
    hidden_size: int  # the GRU's size (per encoder direction); the Transformer's model size
    encoder_layers: int
    bidirectional: bool
    dropout: float
    num_heads: int
    attention_hidden_size: int | None  # additive attention's; None = hidden_size
    decoder: str  # the GRU decoder's arrangement, one of seq2seq.choices.DecoderArrangement
    # how the fused recurrence computes additive attention's tanh: "tanh" or "sigmoid" (never
    # "auto": resolved at the start of a run; see seq2seq.model.fused.tanh)
    tanh: str
    # the network: "rnn" (the GRU encoder-decoder) or "transformer"; the fields below are the
    # Transformer's (hidden_size is its model size, encoder_layers its encoder's layers)
    kind: str
    decoder_layers: int
    ff_size: int
    max_positions: int
    alignment_layer: int  # the decoder layer whose cross-attention is reported

    @classmethod
    def from_dict(cls, stored: dict[str, Any], legacy_tanh: str | None = None) -> ModelSpec:
        """Rebuild from a checkpoint's ``model_spec``, including older names of fields and
        fields it was written before (``legacy_tanh``: the form older checkpoints recorded
        apart, in ``numerics``)."""
        values = dict(stored)
        for old, new in LEGACY_FIELD_NAMES.items():
            if old in values:
                values[new] = values.pop(old)
        if "tanh" not in values and legacy_tanh is not None:  # checkpoints before model.tanh
            values["tanh"] = legacy_tanh
        known = {f.name for f in fields(cls)}
        stored_fields = {k: v for k, v in values.items() if k in known}
        return cls(**{**WRITTEN_BEFORE_THE_FIELD, **stored_fields})


#: Field names that checkpoints written by earlier versions use.
LEGACY_FIELD_NAMES = {"attention_size": "attention_hidden_size"}

#: What a checkpoint written before a field existed was built with: one head, the Bahdanau
#: arrangement, the plain tanh, a GRU network (whose Transformer fields are unused).
WRITTEN_BEFORE_THE_FIELD: dict[str, Any] = {
    "num_heads": 1,
    "attention_hidden_size": None,
    "decoder": "bahdanau",
    "tanh": "tanh",
    "kind": "rnn",
    "decoder_layers": 1,
    "ff_size": 512,
    "max_positions": 256,
    "alignment_layer": -1,
}
