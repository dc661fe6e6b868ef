"""The training loop and the one owner of training state.

:class:`Trainer` wires the parts of a run that :func:`.build.build_run` makes (the model,
optimizer, schedule, objective and data) and :meth:`Trainer.fit` is the only code that changes
where training stands (:class:`TrainState`); its collaborators take what they need and return
values: the update (:mod:`.step`, with the loss terms of :mod:`.objective`), the schedule
(:mod:`.schedule`), the best-model rule (:mod:`.selection`), the stop rules (:mod:`.stopping`),
checkpoints (:mod:`.checkpointing`), the sample heatmaps (:mod:`.samples`) and, on several
processes, the process group (:mod:`.distributed`).
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from seq2seq.config.schema import Config
from seq2seq.evaluation.scores import Scores
from seq2seq.evaluation.scoring import decode_shard, full_scores, split_scores
from seq2seq.evaluation.summary import Decoding, ValidationRecord
from seq2seq.model.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.runtime import restore_rng_states, rng_states
from seq2seq.training import build, checkpointing
from seq2seq.training.checkpointing import BEST, LAST
from seq2seq.training.distributed import ProcessGroup
from seq2seq.training.samples import log_samples
from seq2seq.training.selection import is_better
from seq2seq.training.signals import TrainingInterrupted, stop_requests
from seq2seq.training.state import TrainState
from seq2seq.training.step import StepResult
from seq2seq.training.stopping import StopCondition, StopRules
from seq2seq.training.tblog import RunLogger

__all__ = ["StepResult", "StopCondition", "TrainState", "Trainer"]

log = logging.getLogger("seq2seq")

#: TensorBoard tag of the guided-alignment weight of the logged update (guidance on only).
ALIGNMENT_WEIGHT = "alignment_weight"


class Trainer:
    """Trains one model in one run folder; see :meth:`fit`.

    The parts come from :mod:`.build`, each from its config section; this class wires them
    and owns :class:`TrainState`. With a distributed ``group`` (see
    :mod:`seq2seq.training.distributed`) every rank builds the same trainer; updates run
    through DDP and only rank 0 validates and saves."""

    def __init__(self, config: Config, run_dir: str | Path, group: ProcessGroup | None = None):
        self.train = config.train  # the one section the loop reads
        self.split_punct = config.data.split_tgt_punct
        self.run_dir = Path(run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        parts = build.build_run(config, self.ckpt_dir, group)
        self.group, self.device = parts.group, parts.group.device
        self.stored_config, self.samples = parts.stored_config, parts.samples
        self.corpus, self.spec, self.model = parts.corpus, parts.spec, parts.model
        data = parts.data
        self.train_set, self.valid_set, self.test_set = data.train, data.valid, data.test
        self.valid_shard, self.sampler = data.valid_shard, data.sampler
        self.total_steps = parts.total_steps
        training = parts.training
        self.optimizer, self.schedule = training.optimizer, training.schedule
        self.guide, self.updater = training.guide, training.updater
        self.state = TrainState()
        if parts.saved is not None:
            self._restore(parts.saved)

    def _restore(self, saved: checkpointing.Checkpoint) -> None:
        """Continue where ``saved`` stopped: weights, optimizer, schedule, position, RNG."""
        self.model.load_state_dict(saved.model)
        self.optimizer.load_state_dict(saved.optimizer)
        self.schedule.load_state_dict(saved.scheduler)
        self.state = TrainState.from_dict(saved.state)
        restore_rng_states(checkpointing.rng_of_rank(saved, self.group.rank, self.group.world_size))
        log.info("resumed from %s at step %d", self.ckpt_dir / LAST, self.state.step)

    def train_step(self, indices: list[int]) -> StepResult:
        """One update on the training pairs ``indices`` as the run's next (see
        :meth:`Updater.update`); does not advance the schedule or :attr:`state`, :meth:`fit`
        does that."""
        return self.updater.update(self.train_set, indices, self.state.step)

    # ------------------------------------------------------------------ the loop

    def fit(self, logger: RunLogger, should_stop: StopCondition | None = None) -> str:
        """Train until a stop rule holds (max steps/epochs, early stopping, a signal, or
        ``should_stop``, e.g. a wall-clock budget); validates a last time unless the last step
        just was. Returns why it stopped; a signal raises :class:`TrainingInterrupted` after
        ``last.pt`` is saved."""
        t, state = self.train, self.state
        if not state.world_sizes or state.world_sizes[-1] != self.group.world_size:
            state.world_sizes.append(self.group.world_size)
        rules = StopRules(t, should_stop)
        progress = tqdm(
            total=self.total_steps,
            initial=state.step,
            disable=None if self.group.is_main else True,
            dynamic_ncols=True,
            unit="step",
        )
        window = ThroughputWindow()
        with logging_redirect_tqdm(), stop_requests() as stops, progress:
            reason = rules.after_update(state, self.group)
            while reason is None:
                self.sampler.set_epoch(state.epoch)
                for indices in self.sampler.batches()[state.batch_in_epoch :]:
                    started = time.perf_counter()
                    result = self.train_step(indices)
                    if not result.finite:
                        raise checkpointing.non_finite_error(
                            result.first_non_finite, state.step + 1, self.ckpt_dir, t
                        )
                    self.schedule.after_update()
                    state.train_seconds += time.perf_counter() - started
                    state.train_tokens += result.tokens
                    state.step += 1
                    state.batch_in_epoch += 1
                    window.tokens += result.tokens
                    logger.scalars(result.losses, state.step)
                    if state.step % t.log_every == 0:
                        rate = window.log(logger, state.step, self.schedule.lr, result.grad_norm)
                        if self.guide.active:  # the weight this update's term had
                            weight = self.guide.weight_at(state.step - 1)
                            logger.scalars({ALIGNMENT_WEIGHT: weight}, state.step)
                        progress.set_postfix(
                            loss=f"{result.loss:.3f}", tok_s=f"{rate:,.0f}", refresh=False
                        )
                    progress.update()
                    if state.step % t.eval_every == 0:
                        self._validate(logger)
                        window.start = time.perf_counter()
                        reason = rules.after_validation(state)
                        if reason is not None:
                            break
                    self._stop_on_signal(stops)
                    reason = rules.after_update(state, self.group)
                    if reason is not None:
                        break
                else:
                    state.epoch += 1
                    state.batch_in_epoch = 0
                    reason = rules.limit_reached(state)
            last = state.last_validation
            if last is None or last.step != state.step:
                self._validate(logger)
        log.info("training stopped at step %d: %s", state.step, reason)
        return reason

    def _validate(self, logger: RunLogger) -> None:
        """Score the valid split (rank 0; every rank takes the scores), then update the
        schedule, the history and the best model from them; rank 0 logs and saves."""
        started = time.perf_counter()
        scores = self._valid_scores()
        state = self.state
        if not math.isfinite(scores.loss):
            raise checkpointing.non_finite_error(
                scores.loss, state.step, self.ckpt_dir, self.train, "validation"
            )
        self.schedule.after_validation(scores.loss)
        record = ValidationRecord.of(state.step, state.train_seconds, scores)
        improved = is_better(self.train.select_best, record, state.best)
        state.history.append(record)
        if improved:
            state.best_step, state.bad_evals = state.step, 0
        else:
            state.bad_evals += 1
        rng = self._rng_record()  # every rank takes part
        if not self.group.is_main:
            return
        logger.scalars(
            {
                "loss/valid": scores.loss,
                "valid/bleu": scores.bleu,
                "valid/exact_match": scores.exact_match,
            },
            state.step,
        )
        log_samples(
            self.model,
            self.samples,
            self.corpus.src_vocab,
            self.corpus.tgt_vocab,
            logger,
            state.step,
            self.split_punct,
        )
        self._save(rng, *([BEST] if improved else []), LAST)
        logger.flush()
        log.info(
            "step %d  valid loss %.4f  BLEU %.2f  exact match %.3f  (%.1fs)%s",
            state.step,
            scores.loss,
            scores.bleu,
            scores.exact_match,
            time.perf_counter() - started,
            "  *best*" if improved else "",
        )

    def _valid_scores(self) -> Scores:
        """Loss, greedy BLEU and exact match of the valid split, each process decoding its
        shard (every ``world_size``-th pair) and every process combining all shards into the
        same scores (a collective: all ranks call it together)."""
        part = decode_shard(
            self.model,
            self.valid_shard,
            self.corpus.tgt_vocab,
            batch_size=self.train.eval_batch_size,
            device=self.device,
        )
        return split_scores(self.group.gather(part), self.valid_set.pairs, self.corpus.tgt_vocab)

    def _stop_on_signal(self, stops: list[int]) -> None:
        """After a step: on a SIGINT/SIGTERM that reached any rank, rank 0 saves ``last.pt``
        and every rank raises :class:`TrainingInterrupted`."""
        signum = self.group.max(stops[0] if stops else 0)
        if not signum:
            return
        path = self.ckpt_dir / LAST
        rng = self._rng_record()
        if self.group.is_main:
            path = self._save(rng, LAST)
        self.group.barrier()  # nobody exits (torchrun would stop the others) before the save
        raise TrainingInterrupted(signum, path)

    def _rng_record(self) -> dict[str, Any]:
        """Every rank's RNG streams (a collective under DDP: all ranks call it together)."""
        return checkpointing.rng_record(self.group.gather(rng_states()))

    def _save(self, rng: dict[str, Any], *names: str) -> Path:
        """Write the current checkpoint as each of ``checkpoints/<names>`` (atomically; e.g.
        ``last.pt`` and, when this validation is the best, ``best.pt``); returns the first
        path."""
        checkpoint = checkpointing.make_checkpoint(
            rng=rng,
            model=self.model,
            optimizer=self.optimizer,
            schedule=self.schedule,
            state=self.state,
            spec=self.spec,
            corpus=self.corpus,
            config=self.stored_config,
        )
        paths = [self.ckpt_dir / name for name in names]
        for path in paths:
            save_checkpoint(path, checkpoint)
        return paths[0]

    # ------------------------------------------------------------------ the test

    def test(self) -> tuple[str, Scores, Decoding]:
        """Full test-split metrics of ``best.pt`` (``last.pt`` if the run folder has lost
        ``best.pt``, e.g. a resumed copy of ``last.pt`` alone), loaded into :attr:`model`;
        returns the checkpoint's name, the scores and how fast the search decoded."""
        name = BEST
        if not (self.ckpt_dir / BEST).exists() and (self.ckpt_dir / LAST).exists():
            log.warning("%s is missing; testing %s instead", self.ckpt_dir / BEST, LAST)
            name = LAST
        self.model.load_state_dict(load_checkpoint(self.ckpt_dir / name, self.device).model)
        tgt_vocab, batch_size, beam_size = (
            self.corpus.tgt_vocab, self.train.eval_batch_size, self.train.beam_size,
        )  # fmt: skip
        part = decode_shard(
            self.model, self.test_set, tgt_vocab, batch_size=batch_size, device=self.device,
            beam_size=beam_size,
        )  # fmt: skip
        scores = full_scores(
            self.model, self.test_set, tgt_vocab, part, batch_size=batch_size,
            device=self.device, beam_size=beam_size, select_head_on=("valid", self.valid_set),
        )  # fmt: skip
        seconds = round(part.decode_seconds, 3)
        return name, scores, Decoding(len(self.test_set), seconds, beam_size, batch_size)


class ThroughputWindow:
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
