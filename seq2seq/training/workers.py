"""How ranks above 0 of a torchrun launch behave at the command line: they compose the config
without printing and exit without a word on errors and stops, since rank 0 says what happened."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from seq2seq.errors import UserError, debug_enabled
from seq2seq.training.launch import Launch

T = TypeVar("T")

WORKER_GRACE_S = 2.0
"""How long a rank above 0 waits before exiting on an error rank 0 reports too: torchrun stops
every rank once one exits, and rank 0 should have printed its line by then."""


def silent_on_workers(main: Callable[..., T]) -> Callable[..., T]:
    """Ranks above 0 exit without a word on errors and stops (rank 0 says what happened), and
    only after :data:`WORKER_GRACE_S`, so that torchrun does not stop rank 0 before its line."""

    @wraps(main)
    def wrapper(*args: object, **kwargs: object) -> T:
        if Launch.from_env().is_main or debug_enabled():
            return main(*args, **kwargs)
        restore_streams()
        try:
            return main(*args, **kwargs)
        except (UserError, KeyboardInterrupt):
            time.sleep(WORKER_GRACE_S)
            raise SystemExit(2) from None
        except SystemExit as stop:  # e.g. Hydra's own config errors, reported by rank 0 too
            if stop.code not in (0, None) and not getattr(stop, "graced", False):
                time.sleep(WORKER_GRACE_S)
                stop.graced = True  # type: ignore[attr-defined]  (the outer wrapper: no 2nd wait)
            raise

    return wrapper


_STREAMS = (sys.stdout, sys.stderr)


def quiet_streams() -> None:
    """A rank above 0 composes the config without printing (rank 0 prints Hydra's errors,
    ``--help`` and ``--cfg``); :func:`restore_streams` undoes this once training starts."""
    sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    sys.stdout, sys.stderr = sink, sink


def restore_streams() -> None:
    sys.stdout, sys.stderr = _STREAMS
