"""Train one model: ``python scripts/train.py attention=additive`` (see README).

On several processes (PyTorch DDP, see :mod:`seq2seq.training.distributed`)::

    torchrun --standalone --nproc-per-node=2 scripts/train.py train.num_threads=1 ...

and across machines the same command on every node with ``--nnodes=N --rdzv-backend=c10d
--rdzv-id=<run name> --rdzv-endpoint=<host of node 0>:29500`` instead of ``--standalone``.
Rank 0 owns the Hydra run folder; the other ranks compose the same config quietly (no folder,
no log) and train in rank 0's folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from seq2seq.config.schema import register_configs
from seq2seq.config.schema import validate as validate_config
from seq2seq.errors import debug_enabled, exit_on_user_error
from seq2seq.training.distributed import (
    Launch,
    check_batch_size,
    refuse_multirun,
    worker_overrides,
)
from seq2seq.training.workers import quiet_streams, silent_on_workers

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@exit_on_user_error
@silent_on_workers
def main(cfg: DictConfig) -> float:
    from seq2seq.runtime import resolve_device
    from seq2seq.training.distributed import process_group
    from seq2seq.training.run import train  # after Hydra: config errors come fast
    from seq2seq.training.signals import TrainingInterrupted

    launch = Launch.from_env()
    validate_config(cfg)  # on every rank, before any process group: bad input fails fast
    refuse_multirun(launch, HydraConfig.get().mode == RunMode.MULTIRUN)
    check_batch_size(launch, cfg.train.batch_size)
    with process_group(launch, resolve_device(cfg.device)) as group:
        run_dir = Path(group.broadcast(str(Path(HydraConfig.get().runtime.output_dir).resolve())))
        try:
            summary = train(cfg, run_dir, group)
        except TrainingInterrupted as stop:
            if launch.is_main:
                again = (
                    "the same torchrun command" if launch.distributed else "python scripts/train.py"
                )
                print(
                    f"stopped by {stop}; checkpoint saved to {stop.path}. Continue with: "
                    f"{again} resume=true hydra.run.dir={stop.path.parents[1]}",
                    file=sys.stderr,
                )
            raise SystemExit(128 + stop.signum) from None
        except KeyboardInterrupt:  # Ctrl-C outside the training loop (start-up or final test)
            if launch.is_main:
                print(f"interrupted; whatever {run_dir} holds so far is kept", file=sys.stderr)
            raise SystemExit(130) from None
    return summary.test.bleu if summary is not None else 0.0


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
