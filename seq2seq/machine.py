"""What this machine offers, readable without torch: the CPU cores this process may use and
the device names the project accepts (:func:`seq2seq.runtime.resolve_device` checks that the
machine has the one asked for). The config checks both before anything heavy is imported."""

from __future__ import annotations

import os
import re

#: The device names, as a pattern and as the help text says them.
DEVICE_PATTERN = re.compile(r"auto|cpu|mps|cuda(?::([0-9]+))?")
DEVICE_NAMES = "auto, cpu, cuda, cuda:N or mps"


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity, e.g. under ``taskset`` or Slurm)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
