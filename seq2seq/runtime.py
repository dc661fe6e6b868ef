"""Where and how a process computes: device, CPU threads, seeds and RNG states.

Training, evaluation and the scripts share these; nothing here imports the model.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import torch

from seq2seq.errors import UserError
from seq2seq.machine import DEVICE_NAMES, DEVICE_PATTERN


def resolve_device(name: str, option: str = "device") -> torch.device:
    """The device ``name`` asks for: ``auto`` (CUDA when visible, else the CPU), ``cpu``,
    ``cuda``, ``cuda:N`` (N below the number of visible GPUs) or ``mps`` (where Apple's
    Metal backend is available). Anything else, or a device this machine does not have, is
    a one-line :class:`UserError` naming ``option`` as the user sets it (``device`` in the
    config, ``--device`` on a script's command line)."""

    def setting(value: str) -> str:
        return f"{option} {value}" if option.startswith("-") else f"{option}={value}"

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    cuda = DEVICE_PATTERN.fullmatch(name)
    if cuda is not None and name.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise UserError(
                f"{setting(name)} but no CUDA GPU is visible; use {setting('cpu')} or "
                f"{setting('auto')}"
            )
        if cuda[1] is not None and int(cuda[1]) >= count:
            visible = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            raise UserError(
                f"{setting(name)} but {count} CUDA GPU{'s are' if count > 1 else ' is'} visible "
                f"({visible}); choose one of them (CUDA_VISIBLE_DEVICES numbers them from 0)"
            )
        return torch.device(name)
    if name == "mps":
        if not torch.backends.mps.is_available():
            raise UserError(
                f"{setting(name)} but Apple's MPS is not available here; use {setting('cpu')}"
            )
        return torch.device("mps")
    raise UserError(f"{setting(name)} is unknown; use {DEVICE_NAMES}")


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


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work (a no-op on the CPU), so wall-clock times are complete."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
