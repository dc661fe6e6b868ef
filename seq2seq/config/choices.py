"""The names of the training choices, readable without importing torch (as
:mod:`seq2seq.model.names` holds the model's): the config schema types ``train.lr_schedule``
and ``train.select_best`` with these enums, and the training registries key their entries by them
(:data:`seq2seq.training.schedule.SCHEDULES`, :data:`seq2seq.training.selection.SELECTION_RULES`,
each checked complete when imported). Adding a schedule or a rule: a member here and its
entry there."""

from enum import StrEnum


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
