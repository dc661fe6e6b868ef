"""How ranks above 0 of a torchrun launch behave at the command line: they compose the config
without printing and end without a word on errors and stops, since rank 0 says what happened
(:mod:`seq2seq.launch.entry` applies this)."""

from __future__ import annotations

import os
import sys

WORKER_GRACE_S = 2.0
"""How long a rank above 0 waits before exiting on an error rank 0 reports too: torchrun stops
every rank once one exits, and rank 0 should have printed its line by then."""

_STREAMS = (sys.stdout, sys.stderr)


def quiet_streams() -> None:
    """A rank above 0 composes the config without printing (rank 0 prints Hydra's errors,
    ``--help`` and ``--cfg``); :func:`restore_streams` undoes this once training starts."""
    sink = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    sys.stdout, sys.stderr = sink, sink


def restore_streams() -> None:
    sys.stdout, sys.stderr = _STREAMS
