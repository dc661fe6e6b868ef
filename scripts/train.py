"""Train one model: ``python scripts/train.py attention=additive`` (see README).

``train.processes`` (auto by default) decides how many processes train the run: one per core
or GPU, started by PyTorch's elastic launcher (see :mod:`seq2seq.training.launch`). Under
``torchrun`` the same script is one rank of a DDP run::

    torchrun --standalone --nproc-per-node=2 scripts/train.py ...

and across machines the same command on every node with ``--nnodes=N --rdzv-backend=c10d
--rdzv-id=<run name> --rdzv-endpoint=<host of node 0>:29500`` instead of ``--standalone``.
Rank 0 owns the Hydra run folder; the other ranks compose the same config quietly (no folder,
no log) and train in rank 0's folder.
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from seq2seq.config.schema import register_configs
from seq2seq.errors import debug_enabled, exit_on_user_error
from seq2seq.training.launch import Launch, refuse_multirun, worker_overrides
from seq2seq.training.workers import quiet_streams, silent_on_workers

register_configs()
ARGV = sys.argv[1:]  # as the user gave them: the workers of a launch get the same


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@exit_on_user_error
@silent_on_workers
def main(cfg: DictConfig) -> float:
    from seq2seq.training.command import run_command  # after Hydra: config errors come fast

    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    return run_command(cfg, hydra_cfg, script=__file__, argv=ARGV, multirun=multirun)


@exit_on_user_error
@silent_on_workers
def start() -> None:
    """Refuse a sweep under torchrun before Hydra makes sweep folders on every rank; start
    ranks above 0 quietly (see :func:`worker_overrides`); run :func:`main`."""
    launch = Launch.from_env()
    multirun = bool({"-m", "--multirun"} & set(sys.argv[1:]))
    refuse_multirun(launch, multirun)
    if not launch.is_main:
        sys.argv = [sys.argv[0], *worker_overrides(sys.argv[1:])]
        if not debug_enabled():
            quiet_streams()
    main()


if __name__ == "__main__":
    start()
