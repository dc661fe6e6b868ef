"""The trainer's checkpoints: what one holds, checking one can be resumed, and the error for a
non-finite loss (which names the last good checkpoint). Functions of what they are given;
the trainer alone applies a checkpoint to its state."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch
from omegaconf import DictConfig

from seq2seq.config.schema import to_plain
from seq2seq.data.loading import Corpus
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.model import ModelSpec
from seq2seq.model.checkpoint import Checkpoint, load_checkpoint
from seq2seq.runtime import rng_states
from seq2seq.training.resume import frozen_differences
from seq2seq.training.schedule import Schedule
from seq2seq.training.state import TrainState

LAST, BEST = "last.pt", "best.pt"


def make_checkpoint(
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: Schedule,
    state: TrainState,
    spec: ModelSpec,
    corpus: Corpus,
    cfg: DictConfig,
) -> Checkpoint:
    """Everything a resumed run needs to continue exactly: weights, optimizer, schedule, RNG
    streams and position, plus what inference needs (spec, vocabularies, config)."""
    return Checkpoint(
        model=model.state_dict(),
        optimizer=optimizer.state_dict(),
        scheduler=schedule.state_dict(),
        rng=rng_states(),
        state=state.to_dict(),
        model_spec=asdict(spec),
        vocab={"src": corpus.src_vocab.to_dict(), "tgt": corpus.tgt_vocab.to_dict()},
        config=to_plain(cfg),
        max_src_len=max(len(p.src) for p in corpus.train),
        corpus_sha256=corpus.file_sha256,
    )


def load_for_resume(
    path: Path, cfg: DictConfig, corpus: Corpus, device: torch.device
) -> Checkpoint:
    """``path`` loaded, after refusing a checkpoint whose frozen settings, vocabulary or corpus
    file differ from today's (continuing it would silently train another model)."""
    if not path.is_file():
        raise UserError(
            f"resume=true but {path} does not exist; point hydra.run.dir at the run folder "
            "to continue"
        )
    saved = load_checkpoint(path, map_location=device, purpose="resume")
    changed = frozen_differences(saved.config, to_plain(cfg))
    if changed:
        raise UserError(
            f"cannot resume: {'; '.join(changed[:3])}; resume with the checkpoint's settings"
        )
    if (
        Vocab.from_dict(saved.vocab["src"]) != corpus.src_vocab
        or Vocab.from_dict(saved.vocab["tgt"]) != corpus.tgt_vocab
    ):
        raise UserError("cannot resume: the corpus vocabulary differs from the checkpoint's")
    if saved.corpus_sha256 not in (None, corpus.file_sha256):
        raise UserError(
            f"cannot resume: {cfg.data.path} has changed since the checkpoint was "
            "written (its SHA-256 differs), so the splits would differ; restore the file"
        )
    return saved


def non_finite_error(
    loss: float, step: int, ckpt_dir: Path, train: DictConfig, which: str = "training"
) -> UserError:
    """The error for a NaN/inf loss at ``step``, raised before anything of it is saved."""
    last = ckpt_dir / LAST
    kept = f"the last good checkpoint is {last}" if last.exists() else "no checkpoint was written"
    return UserError(
        f"{which} loss became {loss} at step {step}; {kept}. "
        f"Lower train.lr (now {train.lr}) or set train.clip_grad_norm (now "
        f"{train.clip_grad_norm})"
    )
