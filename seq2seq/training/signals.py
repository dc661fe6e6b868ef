"""Stopping cleanly on Ctrl-C, SIGTERM or SIGHUP (the terminal closed): signals are collected,
the step finishes, a checkpoint is saved, then :class:`TrainingInterrupted` is raised."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class TrainingInterrupted(Exception):
    """Raised after a checkpoint was saved because one of :data:`STOP_SIGNALS` arrived."""

    def __init__(self, signum: int, path: Path) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.path = path


#: The signals that stop a training cleanly; PyTorch's elastic launcher passes each of them on
#: to its workers.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def stop_requests() -> Iterator[list[int]]:
    """Collect :data:`STOP_SIGNALS` into a list instead of dying mid-step (main thread only)."""
    received: list[int] = []
    previous = {}
    try:
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, lambda s, _f: received.append(s))
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
