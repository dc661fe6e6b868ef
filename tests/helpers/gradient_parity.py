"""Two gloo processes (this one and one it starts) compute one model's gradients on
different batches, averaged once by PyTorch's ``DistributedDataParallel`` and once by
:class:`GradientAverage`; rank 0 writes whether every gradient is equal bit for bit.
``python -m tests.helpers.gradient_parity OUT`` (``tests/test_distributed.py`` runs it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from seq2seq.training.distributed import GradientAverage, ProcessGroup
from seq2seq.training.ranks import WorldPosition
from tests.helpers.models import tiny_model, toy_batch

WORLD_SIZE = 2


def _gradients(model: torch.nn.Module, seed: int, average) -> list[torch.Tensor]:
    """The gradients of ``model``'s loss on this rank's batch (``seed``), averaged."""
    src, lengths, mask, tgt_in = toy_batch(seed=seed)
    model.zero_grad(set_to_none=True)
    logits, _ = model(src, lengths, mask, tgt_in)
    (logits.logsumexp(-1).sum() / 7).backward()
    average()
    return [p.grad.clone() for p in model.parameters()]


def _rank(rank: int, store: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    launch = WorldPosition(rank, rank, WORLD_SIZE, WORLD_SIZE, launched=True)
    group = ProcessGroup(launch, "gloo", torch.device("cpu"))
    try:
        results = {}
        for attention in ("additive", "multihead"):
            # each rank starts from other weights: both ways first take rank 0's
            reference_model = tiny_model(attention, seed=rank).train()
            ddp = torch.nn.parallel.DistributedDataParallel(reference_model)
            reference = _gradients(ddp, 10 + rank, lambda: None)
            model = tiny_model(attention, seed=rank).train()
            ours = _gradients(model, 10 + rank, GradientAverage(model, group))
            pairs = list(zip(reference_model.parameters(), model.parameters(), strict=True))
            results[attention] = {
                "weights": all(torch.equal(a, b) for a, b in pairs),
                "gradients": [torch.equal(a, b) for a, b in zip(reference, ours, strict=True)],
                "nonzero": all(bool(g.any()) for g in ours),
            }
        if rank == 0:
            Path(out).write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    target = Path(sys.argv[1])
    args = (str(target.with_suffix(".store")), str(target))
    peer = mp.get_context("spawn").Process(target=_rank, args=(1, *args))  # rank 1
    peer.start()
    try:
        _rank(0, *args)  # this process is rank 0
    finally:
        peer.join(timeout=120)
        if peer.is_alive():
            peer.kill()
    sys.exit(peer.exitcode or 0)
