"""tanh for additive attention's energies in the fused recurrence, the largest element-wise
cost of its step, in one of two forms (``model.tanh``; the textbook path always calls
``torch.tanh``).

``tanh(x) = 2σ(2x) − 1`` exactly, and the two forms agree to float32 rounding, but which is
faster depends on the CPU's vector units: PyTorch's ``sigmoid`` chain beats its ``tanh`` on
some CPUs and loses on others (docs/performance.md's levers).

The form is part of the model (:attr:`seq2seq.model.spec.ModelSpec.tanh`), never state of this
module: ``model.tanh=tanh|sigmoid`` names it, ``auto`` (the default) is resolved once at the
start of a run by :func:`resolve` — timing both forms on the CPU, ``tanh`` on CUDA — and the
trainer records the result in ``train.log`` and the checkpoint; a resumed run keeps it, so a
run's float rounding is one form from start to end. Nothing is remembered between runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor

from seq2seq.choices import TanhForm

#: The sigmoid form is taken only when it needs at most this share of tanh's time, so that a
#: near tie (where a timing's luck could decide) keeps the plain form.
MARGIN = 0.8


def _tanh(x: Tensor) -> Tensor:
    return x.tanh_()


def _via_sigmoid(x: Tensor) -> Tensor:
    return x.mul_(2).sigmoid_().mul_(2).sub_(1)


#: form -> the in-place kernel computing ``tanh(x)`` into ``x`` (returns ``x``).
KERNELS: dict[str, Callable[[Tensor], Tensor]] = {
    TanhForm.tanh: _tanh,
    TanhForm.sigmoid: _via_sigmoid,
}


def measure() -> tuple[TanhForm, dict[str, float]]:
    """The faster form on this CPU (one thread, as training runs) and each form's best time
    in seconds: the minimum of 5 rounds of 20 calls each on a (64, 30, 128) tensor, the two
    forms alternating (about 0.1 s in all)."""
    x = torch.randn(64, 30, 128, generator=torch.Generator().manual_seed(0))  # not the run's RNG
    best = dict.fromkeys(KERNELS, float("inf"))
    for _ in range(5):
        for form, kernel in KERNELS.items():
            scratch = x.clone()
            start = time.perf_counter()
            for _ in range(20):
                kernel(scratch.copy_(x))
            best[form] = min(best[form], time.perf_counter() - start)
    faster = TanhForm.sigmoid if best["sigmoid"] <= MARGIN * best["tanh"] else TanhForm.tanh
    return faster, best


def resolve(setting: str, device: torch.device) -> TanhForm:
    """The form a run with ``model.tanh=setting`` computes with on ``device``: the one named,
    or for ``auto`` the faster one measured now on the CPU (``tanh`` on other devices)."""
    setting = TanhForm(setting)
    if setting is not TanhForm.auto:
        return setting
    return measure()[0] if device.type == "cpu" else TanhForm.tanh
