"""``python scripts/train.py …`` once Hydra has composed the config: check it, claim the run
folder, then train here or on the processes ``train.processes`` asks for.

What every process of a run does, in order (see also :mod:`.run_folder`, :mod:`.launch`,
:mod:`.distributed`):

1. validate the config (on every rank, before any process group: bad input fails fast);
2. the owner of the run folder — this process, or the launcher that started it — claims it;
3. a launching process (``train.processes`` > 1 outside torchrun) makes the corpus once, starts
   the workers and waits; otherwise this process trains, joining torchrun's process group if
   it is one of its ranks;
4. a refused command removes the run folder it made, and a stop by signal says how to resume.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from seq2seq.config.schema import validate as validate_config
from seq2seq.data.loading import ensure_synthetic_corpus
from seq2seq.errors import UserError
from seq2seq.evaluation.summary import METRICS_FILE, RunSummary
from seq2seq.runtime import resolve_device
from seq2seq.training.distributed import process_group
from seq2seq.training.launch import (
    Launch,
    check_batch_size,
    launch_workers,
    planned_processes,
    refuse_multirun,
)
from seq2seq.training.run import train
from seq2seq.training.run_folder import RunFolder
from seq2seq.training.signals import TrainingInterrupted

log = logging.getLogger("seq2seq")


def run_command(
    cfg: DictConfig, hydra: Any, *, script: str, argv: list[str], multirun: bool
) -> float:
    """Train as the command asks; returns the test BLEU (0 on ranks above 0).

    ``hydra``: the job's Hydra config (run folder, overrides, job name); ``script`` and
    ``argv``: how this process was started, for the workers a launch starts.
    """
    launch = Launch.from_env()
    folder = RunFolder(hydra.runtime.output_dir, hydra.job.name)
    try:
        validate_config(cfg)
        refuse_multirun(launch, multirun)
        check_batch_size(launch, cfg.train.batch_size)
        if launch.is_main:
            folder.claim()
        if not launch.launched:
            processes = planned_processes(cfg, multirun=multirun)
            if processes > 1:
                return _launch(cfg, folder, script, argv, processes)
        return _train_here(cfg, hydra, folder, launch)
    except UserError:
        if launch.is_main:  # ranks above 0 see "." as their folder: it is not theirs
            folder.abandon()
        raise
    finally:
        folder.release()


def _launch(
    cfg: DictConfig, folder: RunFolder, script: str, argv: list[str], processes: int
) -> float:
    """Start ``processes`` workers for this run and wait; their exit code is this one's."""
    check_batch_size(Launch(world_size=processes), cfg.train.batch_size)
    if cfg.data.synthetic and not cfg.data.path:
        ensure_synthetic_corpus(cfg.data)  # once, before the workers read it
    code = launch_workers(script, argv, processes, folder.path)
    if code:
        folder.abandon()
        raise SystemExit(code)
    return RunSummary.load(folder.path / METRICS_FILE).test.bleu


def _train_here(cfg: DictConfig, hydra: Any, folder: RunFolder, launch: Launch) -> float:
    with process_group(launch, resolve_device(cfg.device)) as group:
        run_dir = Path(group.broadcast(str(folder.path)))
        try:
            summary = train(cfg, run_dir, group, accept=lambda: folder.accept(cfg, hydra))
        except TrainingInterrupted as stop:
            if launch.is_main:
                log.warning(
                    "stopped by %s; checkpoint saved to %s. Continue with the same command "
                    "and resume=true hydra.run.dir=%s",
                    stop,
                    stop.path,
                    stop.path.parents[1],
                )
            raise SystemExit(128 + stop.signum) from None
        except KeyboardInterrupt:  # Ctrl-C outside the training loop (start-up or final test)
            if launch.is_main:
                log.warning("interrupted; whatever %s holds so far is kept", run_dir)
            raise SystemExit(130) from None
    return summary.test.bleu if summary is not None else 0.0
