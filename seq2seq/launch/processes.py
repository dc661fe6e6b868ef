"""How a training command becomes processes (``train.processes``: auto / 1 / N).

``python scripts/train.py`` uses the machine: with ``auto`` (the default) one run trains on
one DDP process per CUDA GPU, or on the CPU one per core (at most one per
:data:`MIN_PAIRS_PER_PROCESS` pairs of the global batch, so no process works on a sliver).
The processes are started by PyTorch's elastic launcher — what ``torchrun`` runs — on this
machine (:func:`launch_workers`); each is ``scripts/train.py`` with the same arguments and the
run folder the launching process holds, so the run is exactly a ``torchrun --standalone`` run
(see :mod:`seq2seq.training.distributed`). A sweep (``-m``) trains each of its jobs in one
process, since its jobs already share the machine; ``torchrun`` itself sets its own count.

Ctrl-C or SIGTERM to the launching process reaches every worker (the launcher forwards it);
the workers finish the step, rank 0 saves ``last.pt``, and the launching process exits with
128 + the signal number, as a one-process run does.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seq2seq.config.schema import Config
from seq2seq.data.config import DataConfig
from seq2seq.data.loading import corpus_folder
from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary
from seq2seq.launch.run_folder import LOCKED_ENV, RunFolder
from seq2seq.machine import usable_cores
from seq2seq.training.ranks import WorldPosition

# Hydra settings a rank above 0 replaces: it must not create a run folder, a log file or a
# ``.hydra/`` copy of the config of its own (rank 0's folder is the run's one folder).
_WORKER_HYDRA = {
    "hydra.run.dir": ".",
    "hydra.output_subdir": "null",
    "hydra/job_logging": "disabled",
    "hydra/hydra_logging": "disabled",
}


def worker_overrides(argv: Sequence[str]) -> list[str]:
    """``argv`` for a rank above 0: the user's overrides minus the Hydra output settings, plus
    the quiet ones of :data:`_WORKER_HYDRA` (so no stray folders or logs appear)."""
    keys = tuple(f"{key}=" for key in _WORKER_HYDRA)
    kept = [a for a in argv if not a.lstrip("+~").startswith(keys)]
    return kept + [f"{key}={value}" for key, value in _WORKER_HYDRA.items()]


def refuse_multirun(position: WorldPosition, multirun: bool) -> None:
    """A Hydra sweep under torchrun is a :class:`UserError` (checked before Hydra starts)."""
    if position.distributed and multirun:
        raise UserError(
            "-m/--multirun cannot run under torchrun (every rank would sweep on its own); "
            "sweep without torchrun, e.g. hydra/launcher=submitit_slurm, or start torchrun "
            "once per setting"
        )


def check_batch_size(processes: int, batch_size: int) -> None:
    """Every one of the run's ``processes`` needs a pair of every global batch; checked before
    anything is written and before any process group."""
    if batch_size < processes:
        raise UserError(
            f"train.batch_size={batch_size} is the global batch and must be at least the "
            f"number of processes ({processes})"
        )


#: The smallest share of the global batch worth a process of its own (per-step overheads
#: dominate below it on the CPU).
MIN_PAIRS_PER_PROCESS = 16
#: Seconds the launcher waits for the workers to stop after a signal before killing them:
#: enough to finish a validation and save ``last.pt``.
SHUTDOWN_TIMEOUT_S = 120


def planned_processes(
    config: Config, *, multirun: bool, cores: int | None = None, gpus: int | None = None
) -> int:
    """How many processes ``train.processes`` asks for here: a number as given (on the CPU, at
    most one per usable core: more would only wait for each other, as ``train.num_threads``
    above the cores is refused too); ``auto`` one per GPU on CUDA, else one per usable core
    up to ``batch_size // MIN_PAIRS_PER_PROCESS`` (at least 1); a sweep's job always 1."""
    wanted = config.train.processes
    if multirun:
        return 1
    device = config.device
    if gpus is None and device != "cpu":
        import torch  # here only: the command line stays quick (--help, bad input)

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    on_gpus = device.startswith("cuda") or (device == "auto" and bool(gpus))
    cores = cores if cores is not None else usable_cores()
    if wanted != "auto":
        count = int(wanted)
        if not on_gpus and count > cores:
            raise UserError(
                f"train.processes={count} is more than the {cores} CPU core"
                f"{'s' * (cores != 1)} this process may use; use at most {cores} (auto = one "
                "per core)"
            )
        return count
    if on_gpus:
        return max(1, gpus or 0)
    return max(1, min(cores, config.train.batch_size // MIN_PAIRS_PER_PROCESS))


class WorkerDied(UserError):
    """A worker was killed (SIGKILL, the OOM killer, a segfault): the run stopped; what is kept
    and how to go on, in one line."""

    def __init__(self, rank: int, world_size: int, signum: int, run_dir: Path) -> None:
        last = run_dir / "checkpoints" / "last.pt"
        kept = "no checkpoint was written yet"
        if last.is_file():
            from seq2seq.model.checkpoint import load_checkpoint  # torch: only on this path

            kept = f"{last} (step {load_checkpoint(last).state.get('step', 0)}) is kept"
        super().__init__(
            f"rank {rank} of {world_size} was killed by {signal.Signals(signum).name}; {kept}: "
            f"continue with the same command and resume=true hydra.run.dir={run_dir}"
        )
        self.exit_code = 128 + signum


def killed_worker(failures: Mapping[int, Any]) -> tuple[int, int] | None:
    """``(rank, signal)`` of the worker whose death by a signal stopped the run, among the
    elastic launcher's ``failures`` (rank -> ``ProcessFailure``), or None when none died so.

    Once one worker is gone the launcher stops the others with SIGTERM, and one caught
    outside the training loop dies of it too; so a death by SIGTERM is the cause only when no
    other signal killed a worker and no worker ended the run with its own one line (an exit
    code of 2 or more: a refused command, a stop it reported); ties go to the earliest
    failure, then the lowest rank."""
    said_why = any(f.exitcode >= 2 for f in failures.values())
    killed = sorted(
        (f.exitcode == -signal.SIGTERM, f.timestamp, rank, -f.exitcode)
        for rank, f in failures.items()
        if f.exitcode < 0 and not (said_why and f.exitcode == -signal.SIGTERM)
    )
    return (killed[0][2], killed[0][3]) if killed else None


def failure_code(failures: Mapping[int, Any]) -> int:
    """The exit code of a run no signal killed (see :func:`killed_worker`): the earliest
    failed worker's own code, then the lowest rank's (a worker the launcher stopped
    after it has none of its own)."""
    own = sorted((f.timestamp, rank, f.exitcode) for rank, f in failures.items() if f.exitcode > 0)
    return own[0][2] if own else 1


def launch_run(
    data: DataConfig, folder: RunFolder, script: str, argv: Sequence[str], processes: int
) -> float:
    """Start ``processes`` workers for the run in ``folder`` and wait; returns the run's test
    BLEU, or exits with the code of the workers' failure (the folder abandoned). The synthetic
    corpus of ``data`` is made here, once, before the workers read it; a missing corpus folder
    is refused before any worker starts."""
    if not data.path:
        corpus_folder(data)
    code = launch_workers(script, argv, processes, folder.path)
    if code:
        folder.abandon()
        raise SystemExit(code)
    return RunSummary.load(folder.path / METRICS_FILE).test.bleu


def launch_workers(script: str, argv: Sequence[str], processes: int, run_dir: Path) -> int:
    """Run ``processes`` copies of ``script argv`` as one DDP run in ``run_dir`` through the
    elastic launcher on this machine; returns the exit code the command should end with
    (the first failed worker's, or 128 + a signal's), or raises :class:`WorkerDied` when a
    worker was killed by a signal (its peers fail then too: the killed one is the cause)."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    _quiet_launcher_logs()
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=processes,
        run_id=str(uuid.uuid4()),
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        monitor_interval=0.1,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
    )
    args = [*argv, f"hydra.run.dir={run_dir}"]
    os.environ[LOCKED_ENV] = str(run_dir)  # inherited by the workers: this process holds it
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # as torchrun sets it; see train.num_threads
    try:
        elastic_launch(config, sys.executable)("-u", script, *args)
    except SignalException as stop:
        return 128 + int(stop.sigval)
    except ChildFailedError as failed:
        cause = killed_worker(failed.failures)
        if cause is not None:
            rank, signum = cause
            raise WorkerDied(rank, processes, signum, run_dir) from None
        return failure_code(failed.failures)
    finally:
        os.environ.pop(LOCKED_ENV, None)
    return 0


def _quiet_launcher_logs() -> None:
    """The workers say what happened (rank 0's one line); the launcher's own reports of a
    signal or a failed worker, and its tracebacks, would only repeat it. Its loggers set
    their own levels when created, so each is silenced by name."""
    prefixes = ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing")
    for name in [*prefixes, *logging.root.manager.loggerDict]:
        if name.startswith(prefixes):
            logging.getLogger(name).setLevel(logging.CRITICAL)
