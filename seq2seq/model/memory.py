"""Whether a model fits in this machine's memory, checked before anything is allocated: its
parameters counted on torch's ``meta`` device, against what ``/proc/meminfo`` says is free."""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from seq2seq.errors import UserError
from seq2seq.model.networks import build_network
from seq2seq.model.spec import ModelSpec

#: Bytes per parameter while training with Adam in float32: the weight, its gradient and
#: Adam's two moments.
TRAINING_BYTES_PER_PARAMETER = 4 * 4
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


def count_parameters(spec: ModelSpec) -> int:
    """The number of parameters of the model ``spec`` describes, counted without allocating
    them (:class:`_ParametersOnMeta`)."""
    with _ParametersOnMeta():
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
