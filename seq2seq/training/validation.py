"""Evaluation during and after training: the periodic validation (scores, TensorBoard, sample
translations and heatmaps, best/last checkpoints) and the final test of the best checkpoint."""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Pair, tokenize_src
from seq2seq.data.detokenize import join_english
from seq2seq.evaluation.extract import extract_attention_weights
from seq2seq.evaluation.scoring import evaluate_dataset
from seq2seq.model.checkpoint import load_checkpoint
from seq2seq.model.search import greedy_decode
from seq2seq.training.checkpointing import non_finite_error, save
from seq2seq.training.tblog import RunLogger, translations_markdown
from seq2seq.viz import plot_attention

if TYPE_CHECKING:  # the trainer imports this module; only its type is needed here
    from seq2seq.training.trainer import Trainer

log = logging.getLogger("seq2seq")


def validate(trainer: Trainer, logger: RunLogger) -> None:
    """Valid loss, greedy BLEU and exact match; heatmaps; best/last checkpoints.

    Appends to ``trainer.state.history`` and updates best/patience counters, so early stopping
    and resume see every validation."""
    state, cfg = trainer.state, trainer.cfg
    step = state.step
    started = time.perf_counter()
    scores, _ = evaluate_dataset(
        trainer.model,
        trainer.valid_set,
        trainer.corpus.tgt_vocab,
        batch_size=cfg.train.eval_batch_size,
        device=trainer.device,
        full=False,
    )
    if not math.isfinite(scores["loss"]):
        raise non_finite_error(trainer, scores["loss"], "validation")
    if cfg.train.lr_schedule == "plateau":
        trainer.scheduler.step(scores["loss"])
    logger.scalars(
        {
            "loss/valid": scores["loss"],
            "valid/bleu": scores["bleu"],
            "valid/exact_match": scores["exact_match"],
        },
        step,
    )
    log_samples(trainer, logger, step)
    state.history.append(
        {
            "step": step,
            "train_seconds": state.train_seconds,
            "valid_loss": scores["loss"],
            "valid_bleu": scores["bleu"],
            "valid_exact_match": scores["exact_match"],
        }
    )
    better = (scores["bleu"], -scores["loss"]) > (state.best_bleu, -state.best_loss)
    if better:
        state.best_bleu, state.best_loss = scores["bleu"], scores["loss"]
        state.best_step, state.bad_evals = step, 0
        save(trainer, "best.pt")
    else:
        state.bad_evals += 1
    save(trainer, "last.pt")
    logger.flush()
    log.info(
        "step %d  valid loss %.4f  BLEU %.2f  exact match %.3f  (%.1fs)%s",
        step,
        scores["loss"],
        scores["bleu"],
        scores["exact_match"],
        time.perf_counter() - started,
        "  *best*" if better else "",
    )


def sample_sources(cfg: DictConfig) -> list[tuple[str, ...]]:
    """The configured sample sentences, tokenized like the corpus."""
    return [tokenize_src(s, cfg.data.char_level_src) for s in cfg.data.samples]


def log_samples(trainer: Trainer, logger: RunLogger, step: int) -> None:
    """Greedy translations of the sample sentences, and their attention heatmaps (when the
    model's attention has weights), so TensorBoard shows how alignment forms over training."""
    sources = sample_sources(trainer.cfg)
    if not sources:
        return
    src_vocab, tgt_vocab = trainer.corpus.src_vocab, trainer.corpus.tgt_vocab
    dataset = ParallelDataset([Pair(s, ()) for s in sources], src_vocab, tgt_vocab)
    batch = dataset.collate(range(len(dataset))).to(trainer.device)
    output = greedy_decode(trainer.model, batch.src, batch.src_lengths, batch.src_mask)
    translations = [tgt_vocab.decode(ids) for ids in output.tokens.tolist()]
    logger.text(
        "samples",
        translations_markdown(
            [
                (" ".join(s), join_english(t, trainer.cfg.data.split_tgt_punct, tgt_vocab.subwords))
                for s, t in zip(sources, translations, strict=True)
            ]
        ),
        step,
    )
    if not trainer.model.attention.has_weights:
        return
    weights = extract_attention_weights(trainer.model, batch, reference=False, trim=True)
    for k, (src, hyp, array) in enumerate(zip(sources, translations, weights, strict=True)):
        figure = plot_attention(array, [*src, "<eos>"], [*hyp, "<eos>"][: array.shape[1]])
        logger.figure(f"attention/sample_{k}", figure, step)


def evaluate_best(trainer: Trainer) -> dict[str, Any]:
    """Evaluate ``best.pt`` on the test split (full metrics); ``last.pt`` if the run folder
    has lost ``best.pt`` (e.g. a resumed copy of ``last.pt`` alone). Loads it into
    ``trainer.model``."""
    path = trainer.ckpt_dir / "best.pt"
    if not path.exists() and (trainer.ckpt_dir / "last.pt").exists():
        log.warning("%s is missing; testing %s instead", path, path.with_name("last.pt"))
        path = path.with_name("last.pt")
    best = load_checkpoint(path, map_location=trainer.device)
    trainer.model.load_state_dict(best.model)
    scores, _ = evaluate_dataset(
        trainer.model,
        trainer.test_set,
        trainer.corpus.tgt_vocab,
        batch_size=trainer.cfg.train.eval_batch_size,
        device=trainer.device,
        beam_size=trainer.cfg.train.beam_size,
        select_head_on=("valid", trainer.valid_set),
    )
    return scores
