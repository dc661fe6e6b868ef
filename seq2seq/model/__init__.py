"""The network: attention mechanisms, encoder, decoders, search, and checkpoints on disk."""

from seq2seq.model.decoder import DECODER_TYPES
from seq2seq.model.encoder_decoder import Seq2Seq
from seq2seq.model.spec import ModelSpec

__all__ = ["DECODER_TYPES", "ModelSpec", "Seq2Seq"]
