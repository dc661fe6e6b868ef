"""seq2seq: a GRU encoder–decoder trainer that shows why attention matters in translation."""

from seq2seq.evaluation.extract import extract_attention_weights

__all__ = ["extract_attention_weights"]
__version__ = "0.1.0"
