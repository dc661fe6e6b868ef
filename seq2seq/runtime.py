"""Where and how a process computes: device, CPU threads, seeds and RNG states.

Training, evaluation and the scripts share these; nothing here imports the model.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import torch

from seq2seq.errors import UserError


def resolve_device(name: str) -> torch.device:
    """``auto`` -> CUDA when visible, else CPU; ``cuda`` without a GPU is a :class:`UserError`."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("device=cuda but no CUDA GPU is visible; use device=cpu or device=auto")
    return torch.device(name)


def set_threads(num_threads: int) -> None:
    """Intra-op CPU threads: ``0`` (auto) means one.

    This model's matrices are small (hidden 128): a second thread gains little on an idle
    machine (about 10% here) but costs up to 9× when other processes compete for the cores,
    because OpenMP threads wait for each other at every operation. One thread per run also
    lets a sweep run one job per core (``hydra/launcher=joblib``).
    """
    torch.set_num_threads(num_threads or 1)
    with contextlib.suppress(RuntimeError):  # settable only before the first parallel op
        torch.set_num_interop_threads(1)


def seed_everything(seed: int) -> None:
    """Seed Python's and PyTorch's generators (initialisation, dropout, sampling)."""
    random.seed(seed)
    torch.manual_seed(seed)


def rng_states() -> dict[str, Any]:
    """Python's and PyTorch's RNG states, as plain data."""
    states: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states: dict[str, Any]) -> None:
    """Undo :func:`rng_states`: the generators continue where they were saved."""
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
