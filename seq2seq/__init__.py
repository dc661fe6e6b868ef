"""seq2seq: a GRU encoder–decoder trainer that shows why attention matters in translation.

``seq2seq.extract_attention_weights`` is imported on first use, so that the leaf modules
(``seq2seq.errors``, ``files``, ``runtime``, ``config``) import without the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seq2seq.evaluation.extract import extract_attention_weights

__all__ = ["extract_attention_weights"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "extract_attention_weights":
        from seq2seq.evaluation.extract import extract_attention_weights

        return extract_attention_weights
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
