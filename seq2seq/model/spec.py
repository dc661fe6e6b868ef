"""The model's shape as plain data: what a checkpoint stores to rebuild a model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to rebuild a model (stored in checkpoints as plain data)."""

    src_vocab_size: int
    tgt_vocab_size: int
    attention: str = "additive"
    embed_size: int = 64
    hidden_size: int = 128
    encoder_layers: int = 1
    bidirectional: bool = True
    dropout: float = 0.1
    num_heads: int = 1
    attention_hidden_size: int | None = None  # additive attention's; None = hidden_size
    decoder: str = "bahdanau"  # arrangement, one of DECODER_TYPES (older checkpoints: bahdanau)

    @classmethod
    def from_dict(cls, stored: dict[str, Any]) -> ModelSpec:
        """Rebuild from a checkpoint's ``model_spec``, including older names of fields."""
        fields = dict(stored)
        for old, new in LEGACY_FIELD_NAMES.items():
            if old in fields:
                fields[new] = fields.pop(old)
        return cls(**fields)


# Field names that checkpoints written by earlier versions use.
LEGACY_FIELD_NAMES = {"attention_size": "attention_hidden_size"}


#: Bytes per parameter while training with Adam in float32: the weight, its gradient and
#: Adam's two moments.
TRAINING_BYTES_PER_PARAMETER = 4 * 4
GIB = 1 << 30


def count_parameters(spec: ModelSpec) -> int:
    """The number of parameters of the model ``spec`` describes, counted without allocating
    them: the model is built on torch's ``meta`` device (shapes only, no storage)."""
    import torch

    from seq2seq.model.encoder_decoder import Seq2Seq

    with torch.device("meta"):
        model = Seq2Seq(spec)
    return sum(p.numel() for p in model.parameters())


def available_memory() -> int | None:
    """Bytes of memory this machine can give a new process (``MemAvailable`` of
    ``/proc/meminfo``); ``None`` where that is unknown (not Linux, no /proc)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                name, _, value = line.partition(":")
                if name == "MemAvailable":
                    return int(value.split()[0]) * 1024  # the file counts kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_fits_in_memory(spec: ModelSpec) -> None:
    """Raise a one-line :class:`UserError` when training ``spec`` needs more memory than the
    machine has available: weights, gradients and Adam's two moments, 4 bytes each per
    parameter (activations come on top: a model that passes may still not fit). Skipped
    where the available memory is unknown."""
    from seq2seq.errors import UserError

    available = available_memory()
    if available is None:
        return
    parameters = count_parameters(spec)
    needed = TRAINING_BYTES_PER_PARAMETER * parameters
    if needed > available:
        raise UserError(
            f"model.hidden_size={spec.hidden_size} and model.embed_size={spec.embed_size} make "
            f"a model of {parameters:,} parameters, which needs about {needed / GIB:.1f} GiB "
            f"for its weights, gradients and optimizer state; this machine has "
            f"{available / GIB:.1f} GiB available; lower model.hidden_size or model.embed_size"
        )
