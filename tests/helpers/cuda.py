"""The tests that need a CUDA GPU: their marker, why they are skipped without one, and full
float32 arithmetic for CPU↔CUDA parity.

A test marked ``cuda`` (``pytestmark = pytest.mark.cuda``) is skipped where no CUDA device is
visible, with :data:`NO_CUDA` as its reason, and the terminal summary counts them
(``tests/conftest.py``); ``python -m pytest -m cuda`` runs them alone (``scripts/gpu_check.sh``
does on a GPU machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

CUDA_MARK = "cuda"
NO_CUDA = "no CUDA device visible"


def cuda_visible() -> bool:
    """Whether this process sees a CUDA device (a CPU build of PyTorch never does)."""
    return torch.cuda.is_available() and torch.cuda.device_count() > 0


@contextmanager
def full_fp32() -> Iterator[None]:
    """float32 products on CUDA computed in full float32 (no TF32) for the block, cuBLAS and
    cuDNN alike (the GRU's cuDNN kernels use TF32 by default on Ampere and later, rounding
    its products to a 10-bit mantissa), then the previous settings back. PyTorch from 2.9
    names these ``fp32_precision`` (mixing that with the older ``allow_tf32`` flags is an
    error), earlier versions ``allow_tf32``."""
    backends = torch.backends
    if hasattr(backends.cuda.matmul, "fp32_precision"):
        # the parent first: setting cuDNN's resets its conv and rnn settings
        settings = [backends.cuda.matmul, backends.cudnn, backends.cudnn.conv, backends.cudnn.rnn]
        before = [s.fp32_precision for s in settings]
        for setting in settings:
            setting.fp32_precision = "ieee"
        try:
            yield
        finally:
            for setting, value in zip(settings, before, strict=True):
                setting.fp32_precision = value
        return
    before_flags = (backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32)
    backends.cuda.matmul.allow_tf32 = backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32 = before_flags
