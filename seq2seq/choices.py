"""Every named choice of the config, readable without importing torch.

Each choice is a :class:`~enum.StrEnum` whose members *are* the names: the config schema
(:mod:`seq2seq.config.schema`) types its fields with them, so Hydra refuses any other value
with the list of these, and the registries key their builders by them, each checking at
import that it has an entry for every member — the attention mechanisms
(:data:`seq2seq.model.attention.ATTENTION_TYPES`), the networks
(:data:`seq2seq.model.networks.NETWORKS`), the decoder arrangements
(:func:`seq2seq.model.decoder.build_decoder`), the initialisations
(:func:`seq2seq.model.init.initialize`), the tanh forms (:mod:`seq2seq.model.fused.tanh`), the
learning-rate schedules (:data:`seq2seq.training.schedule.SCHEDULES`), the best-model rules
(:data:`seq2seq.training.selection.SELECTION_RULES`). Adding a choice: a member here and its
entry there. Members compare equal to their strings (``AttentionType.additive ==
"additive"``).
"""

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


class Recurrence(StrEnum):
    """How the Bahdanau decoder runs teacher forcing (:mod:`seq2seq.model.decoder`): the
    textbook step loop under autograd, or the same loop as one node with a hand-written
    backward (:mod:`seq2seq.model.fused`)."""

    fused = "fused"
    textbook = "textbook"


class InitScheme(StrEnum):
    """How new weights start (:mod:`seq2seq.model.init`)."""

    xavier = "xavier"
    pytorch = "pytorch"


class TanhForm(StrEnum):
    """How the fused recurrence computes additive attention's tanh
    (:mod:`seq2seq.model.fused.tanh`); ``auto`` is a setting, resolved to one of the two
    forms at the start of a run."""

    auto = "auto"
    tanh = "tanh"
    sigmoid = "sigmoid"


class LrSchedule(StrEnum):
    """How the learning rate moves over a run (:mod:`seq2seq.training.schedule`)."""

    linear = "linear"
    plateau = "plateau"


class AlignmentSchedule(StrEnum):
    """How guided alignment's weight moves over a run (:mod:`seq2seq.training.guidance`)."""

    triangle = "triangle"
    constant = "constant"


class SelectionRule(StrEnum):
    """Which validated model becomes ``best.pt`` (:mod:`seq2seq.training.selection`)."""

    exact_match = "exact_match"
    bleu = "bleu"
    loss = "loss"


def variant_name(kind: str, attention: str) -> str:
    """What a run is called in its folder's name and in tables: its attention for the GRU
    (``additive``), ``transformer`` for the Transformer (whose attention is multi-head)."""
    return ModelKind.transformer.value if kind == ModelKind.transformer else str(attention)


MODEL_KINDS = tuple(ModelKind)
ATTENTION_NAMES = tuple(AttentionType)
DECODER_TYPES = tuple(DecoderArrangement)
INIT_SCHEMES = tuple(InitScheme)
