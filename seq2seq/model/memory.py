"""Whether a model fits in this machine's memory, checked before anything is allocated: its
parameters counted on torch's ``meta`` device, against what ``/proc/meminfo`` says is free."""

from __future__ import annotations

import torch

from seq2seq.errors import UserError
from seq2seq.model.networks import build_network
from seq2seq.model.spec import ModelSpec

#: Bytes per parameter while training with Adam in float32: the weight, its gradient and
#: Adam's two moments.
TRAINING_BYTES_PER_PARAMETER = 4 * 4
GIB = 1 << 30


def count_parameters(spec: ModelSpec) -> int:
    """The number of parameters of the model ``spec`` describes, counted without allocating
    them: built on torch's ``meta`` device (shapes, no storage)."""
    with torch.device("meta"):
        model = build_network(spec)
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
