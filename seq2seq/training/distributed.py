"""One training run on several processes: data parallelism over ``torch.distributed``
(PyTorch's ``DistributedDataParallel``, :func:`data_parallel`), started by torchrun.

On one machine (gloo on CPU; nccl on CUDA, one GPU per local rank)::

    torchrun --standalone --nproc-per-node=2 scripts/train.py train.num_threads=1 ...

Across machines, the same command on every node, with the node count and a rendezvous point
(a host:port every node reaches; the run folder on a filesystem all nodes share)::

    torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d \
        --rdzv-id=my_run --rdzv-endpoint=node0.example.org:29500 scripts/train.py ...

What the processes share and who does what:

* ``train.batch_size`` is the *global* batch. Every rank builds the same length-bucketed batch
  order (same seed) and takes every ``world_size``-th pair of each batch (:func:`shard`); the
  one update (:mod:`seq2seq.training.step`) divides each loss sum by the global count over
  ``world_size``, so once the gradients are averaged over ranks they equal the one-process
  gradient of the whole batch (guided alignment included). The logged losses are global.
  Dropout masks are drawn by each rank for its own pairs, so with ``model.dropout > 0`` a
  2-process run follows a 1-process run in distribution, not number for number (with
  dropout 0 the two agree to float rounding, tested).
* Rank 0 alone writes: the Hydra run folder, ``train.log``, TensorBoard, checkpoints and
  ``metrics.json``; it tests. Validation is shared: each rank decodes every
  ``world_size``-th valid pair and all ranks gather the shards (:meth:`ProcessGroup.gather`)
  into the same scores, so every rank takes the same decisions from them (schedule, best
  model, patience) and all stop early together.
* The run folder: every rank composes the config with Hydra, but ranks above 0 do so quietly
  with ``hydra.run.dir=.``, no ``.hydra/`` folder and no log file (:func:`worker_overrides`),
  then take rank 0's run folder over the process group (:meth:`ProcessGroup.broadcast`).
  Hydra's timestamped default folder is created once, by rank 0.
* A SIGINT/SIGTERM on any rank is all-reduced after every step: all ranks stop after the same
  step, rank 0 saves ``last.pt`` once, every rank exits with 128 + the signal number.
* Bad input: the config is validated on every rank before the process group starts, and only
  rank 0 prints the error line. The process group has a timeout (``SEQ2SEQ_DDP_TIMEOUT_S``,
  default 1800 s) so a rank whose peers died cannot wait forever; torchrun also stops all
  ranks as soon as one exits with an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TypeVar

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from seq2seq.errors import UserError
from seq2seq.training.ranks import WorldPosition

T = TypeVar("T")

TIMEOUT_ENV = "SEQ2SEQ_DDP_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 1800.0
"""Longest wait in one collective; rank 0's validation must fit in it (others wait)."""


def timeout_s() -> float:
    """The collective timeout: ``SEQ2SEQ_DDP_TIMEOUT_S`` or :data:`DEFAULT_TIMEOUT_S`."""
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise UserError(f"{TIMEOUT_ENV}={raw!r} must be a number of seconds") from None
    if value <= 0:
        raise UserError(f"{TIMEOUT_ENV}={raw!r} must be positive")
    return value


class ProcessGroup:
    """The collectives training needs; each is a no-op (or the identity) on one process."""

    def __init__(self, position: WorldPosition, backend: str | None, device: torch.device) -> None:
        self.position = position
        self.backend = backend
        self.device = device  # where collective tensors live (nccl needs CUDA tensors)

    @property
    def rank(self) -> int:
        return self.position.rank

    @property
    def world_size(self) -> int:
        return self.position.world_size

    @property
    def is_main(self) -> bool:
        return self.position.is_main

    @property
    def distributed(self) -> bool:
        return self.position.distributed

    def describe(self) -> str:
        """``world size 2, backend gloo, device cpu`` for ``train.log`` (the device's type:
        under DDP each process has a GPU of its own)."""
        return (
            f"world size {self.world_size}, backend {self.backend or 'none'}, "
            f"device {self.device.type}"
        )

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sum over ranks (float64)."""
        if not self.distributed:
            return list(values)
        tensor = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor.tolist()

    def max(self, value: int) -> int:
        """The largest ``value`` over ranks."""
        if not self.distributed:
            return value
        tensor = torch.tensor([value], dtype=torch.int64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return int(tensor.item())

    def any(self, flag: bool) -> bool:
        """True on every rank when ``flag`` is true on one."""
        return bool(self.max(int(flag)))

    def gather(self, obj: T) -> list[T]:
        """Every rank's ``obj``, in rank order, on every rank (pickled)."""
        if not self.distributed:
            return [obj]
        gathered: list[T | None] = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered  # type: ignore[return-value]

    def broadcast(self, obj: T) -> T:
        """Rank 0's ``obj`` on every rank (pickled)."""
        if not self.distributed:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0, device=self.device)
        return box[0]

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def from_main(self, compute: Callable[[], T]) -> T:
        """Rank 0 runs ``compute``; every rank returns its result, or raises its
        :class:`UserError` (e.g. a non-finite validation loss), so all ranks go on alike."""
        if not self.distributed:
            return compute()
        outcome: tuple[T | None, str | None] = (None, None)
        if self.is_main:
            try:
                outcome = (compute(), None)
            except UserError as err:
                outcome = (None, str(err))
        value, error = self.broadcast(outcome)
        if error is not None:
            raise UserError(error)
        return value  # type: ignore[return-value]


@contextmanager
def process_group(position: WorldPosition, device: torch.device) -> Iterator[ProcessGroup]:
    """Join torchrun's process group for the duration (gloo on CPU, nccl on CUDA with one GPU
    per local rank); on one process nothing is started. Call after the config is validated."""
    if not position.distributed:
        yield ProcessGroup(position, None, device)
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        gpus = torch.cuda.device_count()
        if gpus < position.local_world_size:  # every rank sees this: rank 0 reports it
            raise UserError(
                f"torchrun started {position.local_world_size} processes on this node but only "
                f"{gpus} GPU(s) are visible; use --nproc-per-node={gpus} or device=cpu"
            )
        torch.cuda.set_device(position.local_rank)
        device = torch.device("cuda", position.local_rank)
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s()))
    try:
        yield ProcessGroup(position, backend, device)
    finally:
        dist.destroy_process_group()


def shard(indices: Sequence[int], rank: int, world_size: int) -> tuple[list[int], float]:
    """This rank's pairs of a global batch, and the weight of its loss (1, or 0 when the batch
    has fewer pairs than ranks: the rank then runs its first pair with weight 0 so every rank
    still takes part in the gradient all-reduce). Strided, so every rank gets similar
    lengths from a length-sorted batch."""
    own = list(indices[rank::world_size])
    return (own, 1.0) if own else (list(indices[:1]), 0.0)


def data_parallel(model: torch.nn.Module, group: ProcessGroup) -> torch.nn.Module:
    """What each update runs forward: on several processes ``model`` inside PyTorch's
    ``DistributedDataParallel`` (rank 0's weights broadcast once; the gradients averaged over
    the ranks during backward), on one process ``model`` itself."""
    if not group.distributed:
        return model
    device_ids = [group.device.index] if group.device.type == "cuda" else None
    # the models' buffers are constants (the Transformer's position table), equal on every
    # rank from construction: nothing to broadcast before each forward
    return DistributedDataParallel(model, device_ids=device_ids, broadcast_buffers=False)
