"""Whether a model fits in this machine's memory, checked before anything is allocated: its
parameters counted on torch's ``meta`` device, against what ``/proc/meminfo`` says is free.
Training checks the model its config describes (:func:`check_fits_in_memory`); loading a
checkpoint checks the model its stored spec describes (:func:`memory_needed`)."""

from __future__ import annotations

import torch

from seq2seq.choices import ModelKind
from seq2seq.errors import UserError
from seq2seq.model.networks import Network, build_network
from seq2seq.model.spec import ModelSpec

#: Bytes per parameter while training with Adam in float32: the weight, its gradient and
#: Adam's two moments.
TRAINING_BYTES_PER_PARAMETER = 4 * 4
#: Bytes per parameter of a model that translates or is scored: its float32 weight.
INFERENCE_BYTES_PER_PARAMETER = 4
GIB = 1 << 30


def meta_network(spec: ModelSpec) -> Network:
    """The network ``spec`` describes built on torch's ``meta`` device: the shapes of its
    parameters and buffers without their storage."""
    with torch.device("meta"):
        return build_network(spec)


def count_parameters(spec: ModelSpec) -> int:
    """The number of parameters of the model ``spec`` describes, counted without allocating
    them (:func:`meta_network`)."""
    return sum(p.numel() for p in meta_network(spec).parameters())


def position_table_bytes(spec: ModelSpec) -> int:
    """Bytes of the Transformer's two sinusoidal position tables (the encoder's and the
    decoder's, ``(max_positions, hidden_size)`` float32 each; none in the GRU), from their
    shape."""
    if spec.kind != ModelKind.transformer:
        return 0
    return 2 * spec.max_positions * spec.hidden_size * 4


def memory_needed(
    spec: ModelSpec, bytes_per_parameter: int, available: float
) -> tuple[int | None, int]:
    """``(parameters, bytes)`` the model ``spec`` describes needs: its parameters at
    ``bytes_per_parameter`` each, plus its position tables. ``parameters`` is None when the
    tables alone need more than ``available`` bytes: counting the parameters would build them.
    """
    tables = position_table_bytes(spec)
    if tables > available:
        return None, tables
    parameters = count_parameters(spec)
    return parameters, bytes_per_parameter * parameters + tables


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
    parameters, needed = memory_needed(spec, TRAINING_BYTES_PER_PARAMETER, available)
    if needed > available:
        made = (
            f"position tables (model.max_positions={spec.max_positions}) of about "
            f"{needed / GIB:.1f} GiB"
            if parameters is None
            else f"a model of {parameters:,} parameters, which needs about {needed / GIB:.1f} "
            "GiB for its weights, gradients and optimizer state"
        )
        raise UserError(
            f"model.hidden_size={spec.hidden_size} and model.embed_size={spec.embed_size} make "
            f"{made}; this machine has {available / GIB:.1f} GiB available; lower "
            "model.hidden_size or model.embed_size"
        )
