"""Train one model: ``python scripts/train.py attention=additive`` (see README).

``train.processes`` (auto by default) decides how many processes train the run: one per core
or GPU, started by PyTorch's elastic launcher (see :mod:`seq2seq.launch.processes`). Under
``torchrun`` the same script is one rank of a DDP run::

    torchrun --standalone --nproc-per-node=2 scripts/train.py ...

and across machines the same command on every node with ``--nnodes=N --rdzv-backend=c10d
--rdzv-id=<run name> --rdzv-endpoint=<host of node 0>:29500`` instead of ``--standalone``.
Rank 0 owns the Hydra run folder; the other ranks compose the same config quietly (no folder,
no log) and train in rank 0's folder. The entry and its error handling: :mod:`seq2seq.launch.entry`.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from seq2seq.config.schema import register_configs
from seq2seq.launch.entry import run_job, start

register_configs()
ARGV = sys.argv[1:]  # as the user gave them: the workers of a launch get the same


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float:
    return run_job(cfg, script=__file__, argv=ARGV)


if __name__ == "__main__":
    start(main, ARGV)
