"""``python scripts/train.py …`` once Hydra has composed the config: claim the run folder,
then train here or on the processes ``train.processes`` asks for.

What every process of a run does, in order (see also :mod:`.run_folder`, :mod:`.processes`,
:mod:`seq2seq.training.distributed`):

1. the config arrives checked (:func:`seq2seq.config.schema.to_config`, on every rank, before
   any process group: bad input fails fast);
2. the owner of the run folder — this process, or the launcher that started it — claims it;
3. a launching process (``train.processes`` > 1 outside torchrun) makes the corpus once, starts
   the workers and waits; otherwise this process trains, joining torchrun's process group if
   it is one of its ranks: it builds the trainer (the command is accepted once it is built),
   rank 0 records the run in its folder (:meth:`RunFolder.accept`), then it fits and tests
   (:func:`seq2seq.training.run.fit_and_test`);
4. a refused command removes the run folder it made, and a stop by signal says how to resume.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch.distributed as dist

from seq2seq.config.schema import Config
from seq2seq.errors import UserError
from seq2seq.launch.processes import check_batch_size, launch_run, planned_processes
from seq2seq.launch.run_folder import LOCKED_ENV, RunFolder
from seq2seq.runtime import resolve_device
from seq2seq.training.distributed import process_group
from seq2seq.training.ranks import WorldPosition
from seq2seq.training.signals import TrainingInterrupted

log = logging.getLogger("seq2seq")


def run_command(
    config: Config,
    hydra: Any,
    folder: RunFolder,
    *,
    script: str,
    argv: list[str],
    multirun: bool,
) -> float:
    """Train as the command asks; returns the test BLEU (0 on ranks above 0).

    ``hydra``: the job's Hydra config (overrides, job name); ``folder``: its run folder, not yet
    claimed; ``script`` and
    ``argv``: how this process was started, for the workers a launch starts.
    """
    position = WorldPosition.from_env()
    try:
        processes = (
            position.world_size
            if position.launched
            else planned_processes(config, multirun=multirun)
        )
        check_batch_size(processes, config.train.batch_size)
        if position.is_main:
            folder.claim()
        if processes > 1 and not position.launched:
            return launch_run(config.data, folder, script, argv, processes)
        # only a process that trains loads the trainer (matplotlib, TensorBoard, the model): a
        # launcher starts its workers that much sooner (1.5 s of imports on a slow 2-core machine)
        from seq2seq.training.run import fit_and_test
        from seq2seq.training.trainer import Trainer

        with process_group(position, resolve_device(config.device)) as group:
            run_dir = Path(group.broadcast(str(folder.path)))
            with _stops_explained(position, run_dir, group.distributed):
                trainer = Trainer(config, run_dir, group)  # built: the command is accepted
                if position.is_main:
                    folder.accept(config, hydra)
                summary = fit_and_test(trainer, config)
        return summary.test.bleu if summary is not None else 0.0
    except UserError:
        if position.is_main:  # ranks above 0 see "." as their folder: it is not theirs
            folder.abandon()
        raise
    finally:
        folder.release()


@contextlib.contextmanager
def _stops_explained(position: WorldPosition, run_dir: Path, distributed: bool) -> Iterator[None]:
    """A stop of the training this process runs as the one line and exit code it deserves:
    a signal (how to resume), a lost peer, Ctrl-C outside the loop (what is kept)."""
    try:
        yield
    except TrainingInterrupted as stop:
        if position.is_main:
            log.warning(
                "stopped by %s; checkpoint saved to %s. Continue with the same command "
                "and resume=true hydra.run.dir=%s",
                stop,
                stop.path,
                stop.path.parents[1],
            )
        raise SystemExit(128 + stop.signum) from None
    except RuntimeError as err:
        if distributed and _peer_lost(err):
            raise PeerLost(position) from None
        raise
    except KeyboardInterrupt:  # Ctrl-C outside the training loop (start-up or final test)
        if position.is_main:
            log.warning("interrupted; whatever %s holds so far is kept", run_dir)
        raise SystemExit(130) from None


class PeerLost(UserError):
    """Another process of the run died, so a collective of this one failed. Under this
    project's launcher the launcher says which one and why (:class:`WorkerDied`), so this
    process stays silent; under torchrun it says so in one line."""

    exit_code = 1

    def __init__(self, position: WorldPosition) -> None:
        super().__init__(
            f"rank {position.rank} lost a peer process of the run (it died or was stopped); the "
            "launcher's log says which; resume with resume=true once it is restarted"
        )
        self.silent = os.environ.get(LOCKED_ENV) is not None


def _peer_lost(err: RuntimeError) -> bool:
    """Whether ``err`` is a collective failing because its peer went away (gloo and nccl say
    so in their messages; torch's DistError family is the typed form)."""
    if isinstance(err, dist.DistError):
        return True
    text = str(err)
    return any(s in text for s in ("Connection reset by peer", "Connection closed by peer",
                                   "Broken pipe", "NCCL communicator was aborted"))  # fmt: skip
