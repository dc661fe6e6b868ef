"""How ranks above 0 of a torchrun launch behave at the command line: they compose the config
without printing and end without a word on errors and stops, since rank 0 says what happened
(:mod:`seq2seq.launch.entry` applies this)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from seq2seq.errors import debug_enabled
from seq2seq.training.ranks import WorldPosition

WORKER_GRACE_S = 2.0
"""How long a rank above 0 waits before exiting on an error rank 0 reports too: torchrun stops
every rank once one exits, and rank 0 should have printed its line by then."""

_STREAMS = (sys.stdout, sys.stderr)


def quiet_worker() -> bool:
    """Whether this process is a rank above 0 that leaves the talking to rank 0."""
    return not WorldPosition.from_env().is_main and not debug_enabled()


def quiet_streams() -> None:
    """A rank above 0 composes the config without printing (rank 0 prints Hydra's errors,
    ``--help`` and ``--cfg``); :func:`restore_streams` undoes this once training starts."""
    sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    sys.stdout, sys.stderr = sink, sink


def restore_streams() -> None:
    sys.stdout, sys.stderr = _STREAMS


#: Linux's prctl option: the signal this process gets when the thread that started it exits.
_PR_SET_PDEATHSIG = 1


def die_with_launcher() -> None:
    """Make this launched process end when its launcher does, however the launcher ends.

    A launcher stopped by SIGINT/SIGTERM/SIGHUP passes the signal on and waits, but one killed
    (SIGKILL, the OOM killer) can pass on nothing: its workers would train on, unlocked (the
    run folder's lock was the launcher's), beside whatever the next command starts in the same
    folder. So each worker asks the kernel for SIGKILL when its parent exits — what it wrote
    is safe, every file is replaced atomically, and ``last.pt`` resumes exactly — and exits at
    once if the parent is already gone. Linux only; elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the launcher died before the request was made
        os._exit(128 + signal.SIGKILL)
