"""The network: attention mechanisms, encoder, decoders, the Transformer, search, and
checkpoints on disk (docs/architecture.md has the module map)."""

from seq2seq.model.encoder_decoder import Seq2Seq
from seq2seq.model.spec import ModelSpec

__all__ = ["ModelSpec", "Seq2Seq"]
