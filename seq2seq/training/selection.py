"""Which validated model is kept as ``best.pt`` (``train.select_best``).

Each rule orders validation records by a key, larger is better; ties keep the earlier model.
Adding a rule: its name in :class:`~seq2seq.choices.SelectionRule` and its entry in
:data:`SELECTION_RULES` (checked complete at import).
"""

from __future__ import annotations

from collections.abc import Callable

from seq2seq.choices import SelectionRule
from seq2seq.evaluation.summary import ValidationRecord

SelectionKey = Callable[[ValidationRecord], tuple[float, ...]]

#: ``train.select_best`` -> the key a better model has the larger of.
SELECTION_RULES: dict[SelectionRule, SelectionKey] = {
    # exact match first: at the ceiling, greedy BLEU moves by noise while exact match and
    # loss still separate a finished model from an almost finished one
    SelectionRule.exact_match: lambda r: (r.valid_exact_match, -r.valid_loss),
    SelectionRule.bleu: lambda r: (r.valid_bleu, -r.valid_loss),
    SelectionRule.loss: lambda r: (-r.valid_loss,),
}
assert set(SELECTION_RULES) == set(SelectionRule), "every SelectionRule needs a key"


def is_better(rule: str, record: ValidationRecord, best: ValidationRecord | None) -> bool:
    """Whether ``record``'s model should replace ``best``'s (always, when there is none)."""
    if best is None:
        return True
    key = SELECTION_RULES[rule]
    return key(record) > key(best)
