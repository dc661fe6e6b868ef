"""The entry of ``scripts/train.py``: what runs before Hydra, and the Hydra job itself.

:func:`start` is the process's entry. It refuses a sweep under torchrun before Hydra makes
sweep folders on every rank, starts ranks above 0 quietly (:func:`worker_overrides`: no run
folder, no log of their own) and calls the Hydra app. The app's job, :func:`run_job`,
converts the composed config into the schema's dataclasses — the one conversion; nothing past
it sees a ``DictConfig`` — and runs :func:`~seq2seq.launch.command.run_command`.

Errors are one line (:func:`seq2seq.errors.one_line_errors`) in both: inside the job, since
Hydra would print its own traceback of anything else, and around it, for what comes before.
A rank above 0 says nothing and, on a failure, exits only after
:data:`~seq2seq.launch.workers.WORKER_GRACE_S`, so that torchrun does not stop rank 0 before
its line.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import NoReturn

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from seq2seq.config.compose import load_config
from seq2seq.config.schema import to_config
from seq2seq.errors import UserError, one_line_errors
from seq2seq.launch.processes import refuse_multirun, worker_overrides
from seq2seq.launch.run_folder import RunFolder
from seq2seq.launch.workers import (
    WORKER_GRACE_S,
    die_with_launcher,
    quiet_streams,
    quiet_worker,
    restore_streams,
)
from seq2seq.training.ranks import WorldPosition


def start(app: Callable[[], object], argv: list[str]) -> None:
    """Run the Hydra ``app`` for the command line ``argv`` (this process's arguments).

    A process started by a launcher (torchrun, or this project's launch) ends through
    :func:`_end_launched` once its work is done and its process group destroyed."""
    with one_line_errors():  # every process speaks: which one it is is not known yet
        position = WorldPosition.from_env()
    quiet = quiet_worker()
    if position.launched:
        die_with_launcher()
    code = 0
    try:
        with one_line_errors(quiet):
            check_flags(position, argv)
            if not position.is_main:
                sys.argv = [sys.argv[0], *worker_overrides(argv)]
                if quiet:
                    quiet_streams()
            app()
    except SystemExit as stop:  # Hydra's own config errors end here too
        code = _exit_code(stop)
        if quiet and code:
            time.sleep(WORKER_GRACE_S)
        if not position.launched:
            raise
    if position.launched:
        _end_launched(code)


def hydra_flags(argv: list[str]) -> argparse.Namespace:
    """Hydra's command line as ``hydra.main`` reads it (every flag of Hydra 1.3, so that a
    flag's value is never taken for an override): ``multirun``, ``cfg``, ``overrides``..."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--cfg", "-c", choices=["job", "hydra", "all"])
    parser.add_argument("--info", "-i", nargs="?", const="all")
    for flags in (("--package", "-p"), ("--config-path", "-cp"), ("--config-name", "-cn"),
                  ("--config-dir", "-cd"), ("--experimental-rerun",)):  # fmt: skip
        parser.add_argument(*flags)
    for flags in (("--multirun", "-m"), ("--run", "-r"), ("--help", "-h"), ("--hydra-help",),
                  ("--version",), ("--resolve",), ("--shell-completion", "-sc")):  # fmt: skip
        parser.add_argument(*flags, action="store_true")
    return parser.parse_known_intermixed_args(argv)[0]  # Hydra refuses anything else


def check_flags(position: WorldPosition, argv: list[str]) -> None:
    """What Hydra's flags in ``argv`` ask, checked before Hydra acts on them (Hydra itself
    parses them again): a sweep (``-m``) under torchrun is refused; ``--cfg`` prints one run's
    config without a job, so a sweep is refused and the config is checked here."""
    flags = hydra_flags(argv)
    refuse_multirun(position, flags.multirun)
    if flags.cfg is None:
        return
    if flags.multirun:
        raise UserError(
            "--cfg shows the config of one run and cannot be combined with -m: drop -m and "
            "give one value per option (e.g. attention=none)"
        )
    load_config(flags.overrides)  # one line if it is not a config train.py would run


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None or isinstance(stop.code, int):
        return stop.code or 0
    print(stop.code, file=sys.stderr)  # sys.exit("message"), as the interpreter would
    return 1


def _end_launched(code: int) -> NoReturn:
    """End a launched process with ``code`` without the interpreter's teardown.

    Everything of the run is written and closed by now (checkpoints fsynced, TensorBoard
    closed, the process group destroyed); what the teardown would still do is free the C++
    threads of gloo and the rendezvous store in whatever order the interpreter's finalizers
    run, and one left joinable ends the process in ``terminate called without an active
    exception`` (SIGABRT, exit 134) after a finished run. So the logs and streams are flushed
    and the process exits at once."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def run_job(composed: DictConfig, *, script: str, argv: list[str]) -> float:
    """The Hydra job: the config converted once, then the command; returns the test BLEU."""
    quiet = quiet_worker()
    if quiet:
        restore_streams()  # training may print (tqdm is off there; warnings are not)
    with one_line_errors(quiet):
        hydra = HydraConfig.get()
        multirun = hydra.mode == RunMode.MULTIRUN
        folder = RunFolder(hydra.runtime.output_dir, hydra.job.name, in_sweep=multirun)
        try:
            config = to_config(composed)
        except UserError:
            if WorldPosition.from_env().is_main:  # ranks above 0 see "." as their folder
                folder.abandon()  # Hydra made it before the config was known to be good
            raise
        from seq2seq.launch.command import run_command  # torch: after the config is known good

        return run_command(config, hydra, folder, script=script, argv=argv, multirun=multirun)
