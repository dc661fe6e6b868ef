"""The trainer's checkpoints: what one holds, checking one can be resumed, and the error for a
non-finite loss (which names the last good checkpoint). Functions of what they are given;
the trainer alone applies a checkpoint to its state."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from seq2seq.config.schema import TrainConfig
from seq2seq.data.config import DataConfig
from seq2seq.data.loading import Corpus
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.model import ModelSpec
from seq2seq.model.checkpoint import Checkpoint, bad_checkpoint, load_checkpoint
from seq2seq.records import RecordError
from seq2seq.training.resume import frozen_differences
from seq2seq.training.schedule import Schedule
from seq2seq.training.state import TrainState

LAST, BEST = "last.pt", "best.pt"
log = logging.getLogger("seq2seq")


def make_checkpoint(
    *,
    rng: dict[str, Any],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: Schedule,
    state: TrainState,
    spec: ModelSpec,
    corpus: Corpus,
    config: dict[str, Any],
) -> Checkpoint:
    """Everything a resumed run needs to continue exactly: weights, optimizer, schedule, RNG
    streams and position, plus what inference needs (spec, vocabularies, and ``config``: the
    run's config as plain data, :func:`seq2seq.config.schema.to_plain`)."""
    return Checkpoint(
        model=model.state_dict(),
        optimizer=optimizer.state_dict(),
        scheduler=schedule.state_dict(),
        rng=rng,
        state=state.to_dict(),
        model_spec=asdict(spec),
        vocab={"src": corpus.src_vocab.to_dict(), "tgt": corpus.tgt_vocab.to_dict()},
        config=config,
        max_src_len=max(len(p.src) for p in corpus.train),
        corpus_sha256=corpus.file_sha256,
    )


def rng_record(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """The RNG streams a checkpoint keeps: rank 0's, and under DDP every rank's (``ranks``),
    so that each rank of a resumed run continues its own dropout stream."""
    return {**ranks[0], "ranks": ranks} if len(ranks) > 1 else ranks[0]


def rng_of_rank(saved: Checkpoint, rank: int, world_size: int) -> dict[str, Any]:
    """This rank's RNG streams from ``saved`` (rank 0's when the run had another size)."""
    ranks = saved.rng.get("ranks")
    if ranks is not None and len(ranks) == world_size:
        return ranks[rank]
    if world_size > 1 or ranks is not None:
        log.warning(
            "the checkpoint was written by %s process(es), this run has %d: every process "
            "continues from rank 0's random streams (dropout differs from an uninterrupted run)",
            len(ranks) if ranks is not None else 1,
            world_size,
        )
    return {k: v for k, v in saved.rng.items() if k != "ranks"}


def resume_point(
    ckpt_dir: Path, resume: bool, config: dict[str, Any], device: torch.device
) -> Checkpoint | None:
    """What a run continues from: None for a new run (refused where ``ckpt_dir`` holds one
    already), else (``resume``) ``last.pt`` loaded after refusing a checkpoint whose frozen
    settings differ from today's ``config`` (as plain data, :func:`~seq2seq.config.schema.
    to_plain`: continuing it would silently train another model). Needs no corpus: checked
    first."""
    path = ckpt_dir / LAST
    if not resume:
        if path.exists():
            raise UserError(
                f"{ckpt_dir.parent} already holds a training run; pass resume=true to continue "
                "it or choose a new folder with hydra.run.dir=..."
            )
        return None
    if not path.is_file():
        raise UserError(
            f"resume=true but {path} does not exist; point hydra.run.dir at the run folder "
            "to continue"
        )
    saved = load_checkpoint(path, map_location=device, purpose="resume")
    try:
        TrainState.from_dict(saved.state, "state")  # what the trainer continues from
    except RecordError as err:
        raise bad_checkpoint(path, err, purpose="resume") from None
    changed = frozen_differences(saved.config, config)
    if changed:
        raise UserError(
            f"cannot resume: {'; '.join(changed[:3])}; resume with the checkpoint's settings"
        )
    return saved


def check_same_corpus(saved: Checkpoint, data: DataConfig, corpus: Corpus) -> None:
    """Refuse to resume on a corpus whose vocabulary or file differs from the checkpoint's."""
    if (
        Vocab.from_dict(saved.vocab["src"]) != corpus.src_vocab
        or Vocab.from_dict(saved.vocab["tgt"]) != corpus.tgt_vocab
    ):
        raise UserError("cannot resume: the corpus vocabulary differs from the checkpoint's")
    if saved.corpus_sha256 not in (None, corpus.file_sha256):
        raise UserError(
            f"cannot resume: {data.path} has changed since the checkpoint was "
            "written (its SHA-256 differs), so the splits would differ; restore the file"
        )


def non_finite_error(
    loss: float, step: int, ckpt_dir: Path, train: TrainConfig, which: str = "training"
) -> UserError:
    """The error for a NaN/inf loss at ``step``, raised before anything of it is saved."""
    last = ckpt_dir / LAST
    kept = f"the last good checkpoint is {last}" if last.exists() else "no checkpoint was written"
    return UserError(
        f"{which} loss became {loss} at step {step}; {kept}. "
        f"Lower train.lr (now {train.lr}) or set train.clip_grad_norm (now "
        f"{train.clip_grad_norm})"
    )
