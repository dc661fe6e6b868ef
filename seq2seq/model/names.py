"""The names configs use for the model's choices, readable without importing torch.

Each choice is a :class:`~enum.StrEnum` whose members *are* the names: the config schema
types its fields with them (Hydra refuses any other value with the list of these), and the
registries key their builders by them (:data:`seq2seq.model.attention.ATTENTION_TYPES`,
:func:`seq2seq.model.decoder.build_decoder`, :func:`seq2seq.model.init.initialize`,
:mod:`seq2seq.model.tanh`), so every name is written once, here. Members compare equal to
their strings (``AttentionType.additive == "additive"``)."""

from enum import StrEnum


class ModelKind(StrEnum):
    """The networks (:mod:`seq2seq.model.networks`): the GRU encoder-decoder with one of the
    attention mechanisms, or the Transformer built from the multi-head one."""

    rnn = "rnn"
    transformer = "transformer"


class AttentionType(StrEnum):
    """The attention mechanisms, in the order tables and sweeps show them."""

    none = "none"
    additive = "additive"
    dot = "dot"
    multihead = "multihead"


class DecoderArrangement(StrEnum):
    """Where the decoder attends from (:mod:`seq2seq.model.decoder`)."""

    luong = "luong"
    bahdanau = "bahdanau"


class InitScheme(StrEnum):
    """How new weights start (:mod:`seq2seq.model.init`)."""

    xavier = "xavier"
    pytorch = "pytorch"


class TanhForm(StrEnum):
    """How the additive energies' tanh is computed in the training recurrence
    (:mod:`seq2seq.model.tanh`); ``auto`` is a setting, resolved to one of the two forms at
    the start of a run."""

    auto = "auto"
    tanh = "tanh"
    sigmoid = "sigmoid"


def variant_name(kind: str, attention: str) -> str:
    """What a run is called in its folder's name and in tables: its attention for the GRU
    (``additive``), ``transformer`` for the Transformer (whose attention is multi-head)."""
    return ModelKind.transformer.value if kind == ModelKind.transformer else str(attention)


MODEL_KINDS = tuple(ModelKind)
ATTENTION_NAMES = tuple(AttentionType)
DECODER_TYPES = tuple(DecoderArrangement)
INIT_SCHEMES = tuple(InitScheme)
