"""The network: attention mechanisms, encoder, decoders, search, and checkpoints on disk.

``Seq2Seq`` and ``ModelSpec`` are imported on first use, so that reading the part names
(:mod:`seq2seq.model.names`, e.g. for the config schema) does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seq2seq.model.names import DECODER_TYPES

if TYPE_CHECKING:
    from seq2seq.model.encoder_decoder import Seq2Seq
    from seq2seq.model.spec import ModelSpec

__all__ = ["DECODER_TYPES", "ModelSpec", "Seq2Seq"]


def __getattr__(name: str) -> Any:
    if name == "Seq2Seq":
        from seq2seq.model.encoder_decoder import Seq2Seq

        return Seq2Seq
    if name == "ModelSpec":
        from seq2seq.model.spec import ModelSpec

        return ModelSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
