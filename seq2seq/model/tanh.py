"""tanh for the additive attention's energies, the largest element-wise cost of its training
step, in whichever of two forms is faster on this machine.

``tanh(x) = 2σ(2x) − 1`` exactly, and the two forms agree to float32 rounding, but their
speed depends on the CPU: on this project's AMD EPYC machine kind PyTorch's ``sigmoid`` chain
takes 0.42× the time of its ``tanh`` on a (64, 30, 128) tensor (460 vs 1,091 µs), on its Intel
kind the plain ``tanh`` is faster (120 vs 161 µs for ``sigmoid`` alone). So the first call
times both on that tensor and keeps the winner for the process (the sigmoid form only when
it is clearly faster, so a noisy measurement does not flip it); CUDA always takes ``tanh``.
``SEQ2SEQ_TANH=tanh`` or ``=sigmoid`` fixes the choice.

The forms round differently, so a run keeps one form from start to end: the trainer takes
rank 0's choice on every rank and records it in the checkpoint, and a resumed run uses the
recorded form (:func:`use_form`) rather than measuring again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import torch
from torch import Tensor

ENV = "SEQ2SEQ_TANH"
FORMS = ("tanh", "sigmoid")
#: The sigmoid form is taken only when it needs at most this share of tanh's time.
MARGIN = 0.8
_chosen: dict[str, str] = {}


def _tanh(x: Tensor) -> Tensor:
    return x.tanh_()


def _via_sigmoid(x: Tensor) -> Tensor:
    return x.mul_(2).sigmoid_().mul_(2).sub_(1)


_KERNELS: dict[str, Callable[[Tensor], Tensor]] = {"tanh": _tanh, "sigmoid": _via_sigmoid}


def _measure() -> str:
    """The faster form on this CPU (one thread, as training runs): the minimum of 5 rounds of
    20 calls each, the two forms alternating."""
    x = torch.randn(64, 30, 128)
    best = dict.fromkeys(FORMS, float("inf"))
    for _ in range(5):
        for form in FORMS:
            scratch = x.clone()
            start = time.perf_counter()
            for _ in range(20):
                _KERNELS[form](scratch.copy_(x))
            best[form] = min(best[form], time.perf_counter() - start)
    return "sigmoid" if best["sigmoid"] <= MARGIN * best["tanh"] else "tanh"


def chosen_form(device: torch.device) -> str:
    """``"tanh"`` or ``"sigmoid"``: the form :func:`tanh_` uses on ``device``."""
    key = device.type
    if key not in _chosen:
        forced = os.environ.get(ENV, "")
        if forced in FORMS:
            _chosen[key] = forced
        else:
            _chosen[key] = _measure() if key == "cpu" else "tanh"
    return _chosen[key]


def use_form(device: torch.device, form: str) -> None:
    """Make :func:`tanh_` use ``form`` on ``device``'s type from now on (``SEQ2SEQ_TANH``, when
    set, still wins: it is the user's explicit choice)."""
    if form not in FORMS:
        raise ValueError(f"unknown tanh form {form!r}; one of {FORMS}")
    forced = os.environ.get(ENV, "")
    _chosen[device.type] = forced if forced in FORMS else form


def tanh_(x: Tensor) -> Tensor:
    """``tanh`` of ``x`` in place, in the form chosen for its device; returns ``x``."""
    return _KERNELS[chosen_form(x.device)](x)
