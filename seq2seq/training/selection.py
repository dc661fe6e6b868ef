"""Which validated model is kept as ``best.pt`` (``train.select_best``).

Each rule orders validation records by a key, larger is better; ties keep the earlier model.
Adding a rule: an entry in :data:`SELECTION_RULES` (its name becomes a value of
``train.select_best``).
"""

from __future__ import annotations

from collections.abc import Callable

from seq2seq.evaluation.summary import ValidationRecord

SelectionKey = Callable[[ValidationRecord], tuple[float, ...]]

#: ``train.select_best`` -> the key a better model has the larger of.
SELECTION_RULES: dict[str, SelectionKey] = {
    # exact match first: at the ceiling, greedy BLEU moves by noise while exact match and
    # loss still separate a finished model from an almost finished one
    "exact_match": lambda r: (r.valid_exact_match, -r.valid_loss),
    "bleu": lambda r: (r.valid_bleu, -r.valid_loss),
    "loss": lambda r: (-r.valid_loss,),
}


def is_better(rule: str, record: ValidationRecord, best: ValidationRecord | None) -> bool:
    """Whether ``record``'s model should replace ``best``'s (always, when there is none)."""
    if best is None:
        return True
    key = SELECTION_RULES[rule]
    return key(record) > key(best)
