"""The trainer's checkpoints: what one holds, saving it atomically, resuming from it, and the
error for a non-finite loss (which names the last good checkpoint)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from seq2seq.config.schema import to_plain
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from seq2seq.runtime import restore_rng_states, rng_states
from seq2seq.training.resume import frozen_differences
from seq2seq.training.state import TrainState

if TYPE_CHECKING:  # the trainer imports this module; only its type is needed here
    from seq2seq.training.trainer import Trainer

log = logging.getLogger("seq2seq")


def trainer_checkpoint(trainer: Trainer) -> Checkpoint:
    """Everything a resumed run needs to continue exactly: weights, optimizer, schedule, RNG
    streams and position, plus what inference needs (spec, vocabularies, config)."""
    corpus = trainer.corpus
    return Checkpoint(
        model=trainer.model.state_dict(),
        optimizer=trainer.optimizer.state_dict(),
        scheduler=trainer.scheduler.state_dict(),
        rng=rng_states(),
        state=asdict(trainer.state),
        model_spec=asdict(trainer.spec),
        vocab={"src": corpus.src_vocab.to_dict(), "tgt": corpus.tgt_vocab.to_dict()},
        config=to_plain(trainer.cfg),
        max_src_len=max(len(p.src) for p in corpus.train),
        corpus_sha256=corpus.file_sha256,
    )


def save(trainer: Trainer, name: str) -> Path:
    """Write ``checkpoints/<name>`` of the trainer's run folder (atomically); returns its path."""
    path = trainer.ckpt_dir / name
    save_checkpoint(path, trainer_checkpoint(trainer))
    return path


def resume(trainer: Trainer, path: Path) -> None:
    """Load ``path`` into the trainer, refusing a checkpoint whose frozen settings or
    vocabulary differ from the trainer's (continuing it would silently train another model)."""
    if not path.is_file():
        raise UserError(
            f"resume=true but {path} does not exist; point hydra.run.dir at the run folder "
            "to continue"
        )
    saved_run = load_checkpoint(path, map_location=trainer.device)
    changed = frozen_differences(saved_run.config, to_plain(trainer.cfg))
    if changed:
        raise UserError(
            f"cannot resume: {'; '.join(changed[:3])}; resume with the checkpoint's settings"
        )
    if (
        Vocab.from_dict(saved_run.vocab["src"]) != trainer.corpus.src_vocab
        or Vocab.from_dict(saved_run.vocab["tgt"]) != trainer.corpus.tgt_vocab
    ):
        raise UserError("cannot resume: the corpus vocabulary differs from the checkpoint's")
    if saved_run.corpus_sha256 not in (None, trainer.corpus.file_sha256):
        raise UserError(
            f"cannot resume: {trainer.cfg.data.path} has changed since the checkpoint was "
            "written (its SHA-256 differs), so the splits would differ; restore the file"
        )
    trainer.model.load_state_dict(saved_run.model)
    trainer.optimizer.load_state_dict(saved_run.optimizer)
    trainer.scheduler.load_state_dict(saved_run.scheduler)
    trainer.state = TrainState(**saved_run.state)
    restore_rng_states(saved_run.rng)
    log.info("resumed from %s at step %d", path, trainer.state.step)


def non_finite_error(trainer: Trainer, loss: float, which: str = "training") -> UserError:
    """The error for a NaN/inf loss, raised before anything of that step is saved."""
    last = trainer.ckpt_dir / "last.pt"
    kept = f"the last good checkpoint is {last}" if last.exists() else "no checkpoint was written"
    step = trainer.state.step + (which == "training")
    train = trainer.cfg.train
    return UserError(
        f"{which} loss became {loss} at step {step}; {kept}. "
        f"Lower train.lr (now {train.lr}) or set train.clip_grad_norm (now "
        f"{train.clip_grad_norm})"
    )
