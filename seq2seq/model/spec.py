"""The model's shape as plain data: what a checkpoint stores to rebuild a model.

A new run makes its spec from the config's ``model`` and ``attention`` sections
(:func:`seq2seq.training.build.model_spec`), where every default lives; so no field here has a
default of its own. A checkpoint written before a field existed is read with the value that
version built its models with (:data:`WRITTEN_BEFORE_THE_FIELD`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from seq2seq.choices import ATTENTION_NAMES, DECODER_TYPES, MODEL_KINDS, TanhForm
from seq2seq.records import RecordError, from_plain

#: The sizes that count something (tokens, units, layers, heads): at least 1 each.
_COUNTS = (
    "src_vocab_size", "tgt_vocab_size", "embed_size", "hidden_size", "encoder_layers",
    "decoder_layers", "ff_size", "num_heads",
)  # fmt: skip
#: The named choices and the names each may take (``tanh`` stored resolved: never ``auto``).
_CHOICES = {
    "attention": ATTENTION_NAMES,
    "decoder": DECODER_TYPES,
    "kind": MODEL_KINDS,
    "tanh": (TanhForm.tanh, TanhForm.sigmoid),
}


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
    def from_dict(
        cls, stored: dict[str, Any], legacy_tanh: str | None = None, key: str = "model_spec"
    ) -> ModelSpec:
        """Rebuild from a checkpoint's ``model_spec``, including older names of fields and
        fields it was written before (``legacy_tanh``: the form older checkpoints recorded
        apart, in ``numerics``).

        Every field is checked before a model is built from it: its type
        (:func:`~seq2seq.records.from_plain`), then its value (:meth:`check`). Raises
        :class:`~seq2seq.records.RecordError` naming the first field that does not fit
        (``model_spec.hidden_size``), or one this version does not know.
        """
        values = dict(stored)
        if "tanh" not in values and legacy_tanh is not None:  # checkpoints before model.tanh
            values["tanh"] = legacy_tanh
        for old, new in LEGACY_FIELD_NAMES.items():
            if old in values:
                values[new] = values.pop(old)
        known = {f.name for f in fields(cls)}
        unknown = [name for name in values if name not in known]
        if unknown:  # building without it would make another model than the one stored
            raise RecordError(f"{key}.{unknown[0]}", "is not a field of a model spec")
        spec = from_plain(cls, {**WRITTEN_BEFORE_THE_FIELD, **values}, key)
        spec.check(key)
        return spec

    def check(self, key: str = "model_spec") -> None:
        """Raise :class:`~seq2seq.records.RecordError` for the first value no model has: a
        count below 1, an unknown name, a dropout outside [0, 1), a missing layer."""
        for name in _COUNTS:
            if getattr(self, name) < 1:
                raise RecordError(f"{key}.{name}", f"should be positive, got {getattr(self, name)}")
        if self.attention_hidden_size is not None and self.attention_hidden_size < 1:
            raise RecordError(
                f"{key}.attention_hidden_size",
                f"should be positive or null, got {self.attention_hidden_size}",
            )
        if self.max_positions < 2:
            raise RecordError(
                f"{key}.max_positions", f"should be at least 2, got {self.max_positions}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise RecordError(f"{key}.dropout", f"should be in [0, 1), got {self.dropout}")
        for name, names in _CHOICES.items():
            if getattr(self, name) not in names:
                raise RecordError(
                    f"{key}.{name}",
                    f"should be one of {', '.join(names)}, got {getattr(self, name)!r}",
                )
        layers = self.decoder_layers
        if not -layers <= self.alignment_layer < layers:
            raise RecordError(
                f"{key}.alignment_layer",
                f"should be from -{layers} to {layers - 1} (a decoder layer), "
                f"got {self.alignment_layer}",
            )


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
