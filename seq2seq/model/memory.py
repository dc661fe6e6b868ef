"""Whether a model fits in this machine's memory, checked before anything is allocated: its
parameters counted on torch's ``meta`` device, against what ``/proc/meminfo`` says is free.
Training checks the model its config describes (:func:`check_fits_in_memory`); loading a
checkpoint checks the model its stored spec describes (:func:`memory_needed`)."""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from seq2seq.errors import UserError
from seq2seq.model.names import ModelKind
from seq2seq.model.networks import Network, build_network
from seq2seq.model.spec import ModelSpec

#: Bytes per parameter while training with Adam in float32: the weight, its gradient and
#: Adam's two moments.
TRAINING_BYTES_PER_PARAMETER = 4 * 4
#: Bytes per parameter of a model that translates or is scored: its float32 weight.
INFERENCE_BYTES_PER_PARAMETER = 4
GIB = 1 << 30


class _ParametersOnMeta(TorchFunctionMode):
    """Modules built inside it get their parameters on torch's ``meta`` device (shapes, no
    storage): ``torch.empty`` without a device, which is how ``nn`` modules allocate them,
    allocates there, and ``normal_`` leaves a meta tensor as it is (there is nothing to
    draw). Everything else runs as usual on the CPU, small buffers included (the
    Transformer's position table).

    Not ``with torch.device("meta")``: on that device PyTorch computes some steps (an
    embedding's ``normal_``, ``arange`` and arithmetic on it) through Python references that
    import ``torch._dynamo``, about 2 s of a process's start (``tests/test_adam.py`` checks
    that building the model does not)."""

    def __torch_function__(self, func, types, args=(), kwargs=None) -> Any:
        kwargs = kwargs or {}
        if func is torch.empty and kwargs.get("device") is None:
            kwargs = {**kwargs, "device": "meta"}
        elif func is torch.Tensor.normal_ and args[0].is_meta:
            return args[0]
        elif func is torch.nn.init.normal_ and kwargs["tensor"].is_meta:
            return kwargs["tensor"]
        return func(*args, **kwargs)


def meta_network(spec: ModelSpec) -> Network:
    """The network ``spec`` describes with its parameters on the ``meta`` device: their shapes
    without their storage (:class:`_ParametersOnMeta`)."""
    with _ParametersOnMeta():
        return build_network(spec)


def count_parameters(spec: ModelSpec) -> int:
    """The number of parameters of the model ``spec`` describes, counted without allocating
    them (:func:`meta_network`)."""
    return sum(p.numel() for p in meta_network(spec).parameters())


def position_table_bytes(spec: ModelSpec) -> int:
    """Bytes of the Transformer's two sinusoidal position tables (the encoder's and the
    decoder's, ``(max_positions, hidden_size)`` float32 each; none in the GRU). They are
    buffers, computed on the CPU even inside :class:`_ParametersOnMeta`, so they are sized from
    their shape before :func:`count_parameters` would build them."""
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
