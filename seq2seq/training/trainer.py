"""The training loop: Adam, clipping, teacher forcing, the learning-rate schedule, early
stopping, TensorBoard and clean stops on Ctrl-C / SIGTERM. Checkpoints and resume live in
:mod:`seq2seq.training.checkpointing`, validation and the final test in
:mod:`seq2seq.training.validation`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from seq2seq.config.schema import validate as validate_config
from seq2seq.data.batching import BucketBatchSampler, ParallelDataset
from seq2seq.data.loading import Corpus, load_corpus
from seq2seq.errors import UserError
from seq2seq.evaluation.scoring import sequence_loss
from seq2seq.model import ModelSpec, Seq2Seq
from seq2seq.runtime import resolve_device, seed_everything, set_threads
from seq2seq.training import checkpointing
from seq2seq.training.distributed import (
    Launch,
    ProcessGroup,
    data_parallel,
    data_parallel_step,
    stop_on_request,
    validate_everywhere,
)
from seq2seq.training.guidance import AlignmentGuide
from seq2seq.training.schedule import build_scheduler
from seq2seq.training.signals import stop_requests
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import RunLogger
from seq2seq.training.validation import evaluate_best, validate

__all__ = ["StepResult", "StopCondition", "TrainState", "Trainer", "model_spec"]

StopCondition = Callable[[TrainState], bool]
"""An extra reason for :meth:`Trainer.fit` to end, asked before and after every update."""

StepResult = tuple[float, float, int]
"""What one update did: the loss, the gradient norm (before clipping) and the target tokens."""


def model_spec(cfg: DictConfig, corpus: Corpus) -> ModelSpec:
    """The model the config describes, sized to the corpus' vocabularies."""
    return ModelSpec(
        src_vocab_size=len(corpus.src_vocab),
        tgt_vocab_size=len(corpus.tgt_vocab),
        attention=cfg.attention.type,
        embed_size=cfg.model.embed_size,
        hidden_size=cfg.model.hidden_size,
        encoder_layers=cfg.model.encoder_layers,
        bidirectional=cfg.model.bidirectional,
        dropout=cfg.model.dropout,
        num_heads=cfg.attention.num_heads if cfg.attention.type == "multihead" else 1,
        attention_hidden_size=cfg.attention.hidden_size,
        decoder=cfg.model.decoder,
    )


class Trainer:
    """Trains one model in one run folder; see :meth:`fit` and :meth:`train_step`.

    With a distributed ``group`` (see :mod:`seq2seq.training.distributed`) every rank builds
    the same trainer; updates run through DDP and only rank 0 validates and saves."""

    def __init__(
        self, cfg: DictConfig, run_dir: str | Path, group: ProcessGroup | None = None
    ) -> None:
        validate_config(cfg)
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.device = resolve_device(cfg.device)
        self.group = group or ProcessGroup(Launch(), None, self.device)
        if self.group.distributed:
            self.device = self.group.device  # cuda:<local rank> under nccl
            if cfg.train.alignment_weight > 0:
                raise UserError(
                    "train.alignment_weight > 0 is not supported under torchrun yet; "
                    "train guided alignment in one process (python scripts/train.py)"
                )
        set_threads(cfg.train.num_threads)
        seed_everything(cfg.seed)
        self.corpus = corpus = load_corpus(cfg.data)
        self.spec = model_spec(cfg, corpus)
        self.model = Seq2Seq(self.spec).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.train.lr)
        self.state = TrainState()
        self.train_set = ParallelDataset(corpus.train, corpus.src_vocab, corpus.tgt_vocab)
        self.valid_set = ParallelDataset(corpus.valid, corpus.src_vocab, corpus.tgt_vocab)
        self.test_set = ParallelDataset(corpus.test, corpus.src_vocab, corpus.tgt_vocab)
        self.sampler = BucketBatchSampler(
            self.train_set.src_lengths, cfg.train.batch_size, seed=cfg.seed
        )
        self.scheduler = build_scheduler(self.optimizer, cfg.train, self.total_steps)
        last = self.ckpt_dir / "last.pt"
        if cfg.resume:
            checkpointing.resume(self, last)
        elif last.exists():
            raise UserError(
                f"{self.run_dir} already holds a training run; pass resume=true to continue it "
                "or choose a new folder with hydra.run.dir=..."
            )
        self.ddp_model = data_parallel(self.model, self.group)

    def train_step(self, indices: list[int]) -> StepResult:
        """One update on the training pairs ``indices``: loss, gradient norm, target tokens.

        With guided alignment (:attr:`guide`) the update minimises the translation loss plus
        the weighted alignment term; the returned loss is the translation loss alone.
        A non-finite loss returns ``(loss, nan, 0)`` without touching the weights, so the
        caller can stop with the last good checkpoint intact. Does not advance the schedule
        or :attr:`state`; :meth:`fit` does that. Under DDP the rank trains on its share of
        ``indices`` and returns the global loss and token count (guidance is refused there)."""
        if self.ddp_model is not None:
            return data_parallel_step(self, indices)
        guide = self.guide
        batch = self.train_set.collate(
            indices, gold=guide.active, possible_weight=guide.possible_weight
        ).to(self.device)
        self.model.train()
        logits, weights = self.model(
            batch.src,
            batch.src_lengths,
            batch.src_mask,
            batch.tgt_in,
            teacher_forcing=self.cfg.train.teacher_forcing,
            keep_weights=guide.active,
        )
        loss = sequence_loss(logits, batch.tgt_out, label_smoothing=self.cfg.train.label_smoothing)
        objective = guide.objective(loss, weights, batch)  # `loss` itself when not guiding
        loss_value = loss.item()
        # a non-finite alignment term stops training as a non-finite loss would
        checked = loss_value if guide.last_loss is None else loss_value + guide.last_loss
        if not math.isfinite(checked):
            return checked, math.nan, 0
        self.optimizer.zero_grad(set_to_none=True)
        objective.backward()
        clip = self.cfg.train.clip_grad_norm or math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        self.optimizer.step()
        return loss_value, grad_norm, batch.num_tgt_tokens

    @cached_property
    def guide(self) -> AlignmentGuide:
        """Guided alignment (``train.alignment_weight``), built on first use; see
        :mod:`seq2seq.training.guidance`."""
        train = self.cfg.train
        return AlignmentGuide(
            train.alignment_weight,
            self.model.attention.has_weights,
            self.train_set.pairs,
            train.alignment_possible_weight,
        )

    @property
    def total_steps(self) -> int:
        """Updates the run is planned for: ``max_steps``, else ``max_epochs`` epochs (or fewer)."""
        t = self.cfg.train
        epochs = t.max_epochs * len(self.sampler) if t.max_epochs > 0 else 0
        return min(s for s in (t.max_steps, epochs) if s > 0)

    def _done(self, should_stop: StopCondition | None) -> bool:
        t, state = self.cfg.train, self.state
        limit = (t.max_steps > 0 and state.step >= t.max_steps) or (
            t.max_epochs > 0 and state.epoch >= t.max_epochs
        )
        return limit or (should_stop is not None and self.group.any(should_stop(state)))

    def _validate(self, logger: RunLogger) -> None:
        validate_everywhere(self, lambda: validate(self, logger))

    def _stop_early(self) -> bool:
        t, history = self.cfg.train, self.state.history
        target = t.stop_at_exact_match
        reached = (
            bool(history) and target is not None and history[-1]["valid_exact_match"] >= target
        )
        return reached or (t.patience > 0 and self.state.bad_evals >= t.patience)

    def fit(self, logger: RunLogger, should_stop: StopCondition | None = None) -> None:
        """Train until max steps/epochs, early stopping, a stop request or ``should_stop``
        (e.g. a wall-clock budget); validates a last time unless the last step just was."""
        t = self.cfg.train
        total = t.max_steps or t.max_epochs * len(self.sampler)
        progress = tqdm(
            total=total,
            initial=self.state.step,
            disable=None if self.group.is_main else True,
            dynamic_ncols=True,
            unit="step",
        )
        window = _Window()
        with logging_redirect_tqdm(), stop_requests() as stops, progress:
            while not self._done(should_stop):
                self.sampler.set_epoch(self.state.epoch)
                for indices in self.sampler.batches()[self.state.batch_in_epoch :]:
                    started = time.perf_counter()
                    loss, grad_norm, tokens = self.train_step(indices)
                    if not math.isfinite(loss):
                        raise checkpointing.non_finite_error(self, loss)
                    if t.lr_schedule == "linear":
                        self.scheduler.step()
                    self.state.train_seconds += time.perf_counter() - started
                    self.state.step += 1
                    self.state.batch_in_epoch += 1
                    window.tokens += tokens
                    step = self.state.step
                    logger.scalars({"loss/train": loss, **self.guide.scalars()}, step)
                    if step % t.log_every == 0:
                        lr = self.optimizer.param_groups[0]["lr"]
                        rate = window.log(logger, step, lr, grad_norm)
                        progress.set_postfix(
                            loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}", refresh=False
                        )
                    progress.update()
                    if step % t.eval_every == 0:
                        self._validate(logger)
                        window.start = time.perf_counter()
                        if self._stop_early():
                            return
                    stop_on_request(self, stops)
                    if self._done(should_stop):
                        break
                else:
                    self.state.epoch += 1
                    self.state.batch_in_epoch = 0
            if not self.state.history or self.state.history[-1]["step"] != self.state.step:
                self._validate(logger)

    def test(self) -> dict[str, Any]:
        """Full test-split metrics of the best checkpoint; see :func:`evaluate_best`."""
        return evaluate_best(self)


class _Window:
    """Target tokens since the last throughput log, and when that window started."""

    def __init__(self) -> None:
        self.tokens, self.start = 0, time.perf_counter()

    def log(self, logger: RunLogger, step: int, lr: float, grad_norm: float) -> float:
        """Log lr, gradient norm and tokens/s of the window; start a new one; return the rate."""
        rate = self.tokens / max(time.perf_counter() - self.start, 1e-9)
        scalars = {"lr": lr, "grad_norm": grad_norm, "throughput/tgt_tokens_per_s": rate}
        logger.scalars(scalars, step)
        self.tokens, self.start = 0, time.perf_counter()
        return rate
