"""The training loop: Adam, clipping, teacher forcing, the learning-rate schedule, early
stopping, TensorBoard, atomic checkpoints, resume, and clean stops on Ctrl-C / SIGTERM."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from seq2seq.config.schema import to_plain, validate
from seq2seq.data.batching import BucketBatchSampler, ParallelDataset
from seq2seq.data.corpus import Pair, tokenize_src
from seq2seq.data.loading import Corpus, load_corpus
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.evaluation.extract import extract_attention_weights
from seq2seq.evaluation.scoring import evaluate_dataset, sequence_loss
from seq2seq.model import ModelSpec, Seq2Seq
from seq2seq.model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from seq2seq.model.search import greedy_decode
from seq2seq.runtime import (
    resolve_device,
    restore_rng_states,
    rng_states,
    seed_everything,
    set_threads,
)
from seq2seq.training.resume import frozen_differences
from seq2seq.training.schedule import build_scheduler
from seq2seq.training.signals import TrainingInterrupted, stop_requests
from seq2seq.training.tblog import RunLogger, translations_markdown
from seq2seq.viz import plot_attention

log = logging.getLogger("seq2seq")


@dataclass
class TrainState:
    """Where training stands; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_bleu: float = -1.0
    best_loss: float = math.inf
    best_step: int = 0
    bad_evals: int = 0
    train_seconds: float = 0.0
    history: list[dict[str, float]] = field(default_factory=list)


def model_spec(cfg: DictConfig, corpus: Corpus) -> ModelSpec:
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
    """Trains one model in one run folder; see :meth:`fit`."""

    def __init__(self, cfg: DictConfig, run_dir: str | Path) -> None:
        validate(cfg)
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.device = resolve_device(cfg.device)
        set_threads(cfg.train.num_threads)
        seed_everything(cfg.seed)
        self.corpus = load_corpus(cfg.data)
        self.spec = model_spec(cfg, self.corpus)
        self.model = Seq2Seq(self.spec).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.train.lr)
        self.state = TrainState()
        self.train_set = ParallelDataset(
            self.corpus.train, self.corpus.src_vocab, self.corpus.tgt_vocab
        )
        self.valid_set = ParallelDataset(
            self.corpus.valid, self.corpus.src_vocab, self.corpus.tgt_vocab
        )
        self.test_set = ParallelDataset(
            self.corpus.test, self.corpus.src_vocab, self.corpus.tgt_vocab
        )
        self.sampler = BucketBatchSampler(
            self.train_set.src_lengths, cfg.train.batch_size, seed=cfg.seed
        )
        self.scheduler = build_scheduler(self.optimizer, cfg.train, self.total_steps)
        last = self.ckpt_dir / "last.pt"
        if cfg.resume:
            self._resume(last)
        elif last.exists():
            raise UserError(
                f"{self.run_dir} already holds a training run; pass resume=true to continue it "
                "or choose a new folder with hydra.run.dir=..."
            )

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint(self) -> Checkpoint:
        return Checkpoint(
            model=self.model.state_dict(),
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            rng=rng_states(),
            state=asdict(self.state),
            model_spec=asdict(self.spec),
            vocab={"src": self.corpus.src_vocab.to_dict(), "tgt": self.corpus.tgt_vocab.to_dict()},
            config=to_plain(self.cfg),
            max_src_len=max(len(p.src) for p in self.corpus.train),
        )

    def _save(self, name: str) -> Path:
        path = self.ckpt_dir / name
        save_checkpoint(path, self._checkpoint())
        return path

    def _resume(self, path: Path) -> None:
        if not path.is_file():
            raise UserError(
                f"resume=true but {path} does not exist; point hydra.run.dir at the run folder "
                "to continue"
            )
        saved_run = load_checkpoint(path, map_location=self.device)
        saved = saved_run.config
        now = to_plain(self.cfg)
        changed = frozen_differences(saved, now)
        if changed:
            raise UserError(
                f"cannot resume: {'; '.join(changed[:3])}; resume with the checkpoint's settings"
            )
        if (
            Vocab.from_dict(saved_run.vocab["src"]) != self.corpus.src_vocab
            or Vocab.from_dict(saved_run.vocab["tgt"]) != self.corpus.tgt_vocab
        ):
            raise UserError("cannot resume: the corpus vocabulary differs from the checkpoint's")
        self.model.load_state_dict(saved_run.model)
        self.optimizer.load_state_dict(saved_run.optimizer)
        self.scheduler.load_state_dict(saved_run.scheduler)
        self.state = TrainState(**saved_run.state)
        restore_rng_states(saved_run.rng)
        log.info("resumed from %s at step %d", path, self.state.step)

    # ------------------------------------------------------------------ training
    def _train_step(self, indices: list[int]) -> tuple[float, float, int]:
        """One update; returns loss, gradient norm and the number of target tokens."""
        batch = self.train_set.collate(indices).to(self.device)
        self.model.train()
        logits, _ = self.model(
            batch.src,
            batch.src_lengths,
            batch.src_mask,
            batch.tgt_in,
            teacher_forcing=self.cfg.train.teacher_forcing,
        )
        loss = sequence_loss(logits, batch.tgt_out)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            return loss_value, math.nan, 0
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip = self.cfg.train.clip_grad_norm or math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip))
        self.optimizer.step()
        return loss_value, grad_norm, batch.num_tgt_tokens

    @property
    def total_steps(self) -> int:
        """Updates the run is planned for: ``max_steps``, else ``max_epochs`` epochs (or fewer)."""
        t = self.cfg.train
        epochs = t.max_epochs * len(self.sampler) if t.max_epochs > 0 else 0
        return min(s for s in (t.max_steps, epochs) if s > 0)

    def _done(self) -> bool:
        t = self.cfg.train
        return (t.max_steps > 0 and self.state.step >= t.max_steps) or (
            t.max_epochs > 0 and self.state.epoch >= t.max_epochs
        )

    def _stop_early(self) -> bool:
        target = self.cfg.train.stop_at_exact_match
        reached = (
            bool(self.state.history)
            and target is not None
            and (self.state.history[-1]["valid_exact_match"] >= target)
        )
        return reached or (
            self.cfg.train.patience > 0 and self.state.bad_evals >= self.cfg.train.patience
        )

    def _non_finite(self, loss: float, which: str = "training") -> UserError:
        """The error for a NaN/inf loss, raised before anything of that step is saved."""
        last = self.ckpt_dir / "last.pt"
        kept = (
            f"the last good checkpoint is {last}" if last.exists() else "no checkpoint was written"
        )
        step = self.state.step + (which == "training")
        return UserError(
            f"{which} loss became {loss} at step {step}; {kept}. "
            f"Lower train.lr (now {self.cfg.train.lr}) or set train.clip_grad_norm (now "
            f"{self.cfg.train.clip_grad_norm})"
        )

    def fit(self, logger: RunLogger) -> None:
        """Train until max steps/epochs, early stopping or a stop request."""
        t = self.cfg.train
        total = t.max_steps or t.max_epochs * len(self.sampler)
        progress = tqdm(
            total=total, initial=self.state.step, disable=None, dynamic_ncols=True, unit="step"
        )
        window_tokens, window_start = 0, time.perf_counter()
        with logging_redirect_tqdm(), stop_requests() as stops, progress:
            while not self._done():
                self.sampler.set_epoch(self.state.epoch)
                batches = self.sampler.batches()[self.state.batch_in_epoch :]
                for indices in batches:
                    started = time.perf_counter()
                    loss, grad_norm, tokens = self._train_step(indices)
                    if not math.isfinite(loss):
                        raise self._non_finite(loss)
                    if t.lr_schedule == "linear":
                        self.scheduler.step()
                    self.state.train_seconds += time.perf_counter() - started
                    self.state.step += 1
                    self.state.batch_in_epoch += 1
                    window_tokens += tokens
                    step = self.state.step
                    logger.scalars({"loss/train": loss}, step)
                    if step % t.log_every == 0:
                        elapsed = time.perf_counter() - window_start
                        rate = window_tokens / max(elapsed, 1e-9)
                        logger.scalars(
                            {
                                "lr": self.optimizer.param_groups[0]["lr"],
                                "grad_norm": grad_norm,
                                "throughput/tgt_tokens_per_s": rate,
                            },
                            step,
                        )
                        progress.set_postfix(
                            loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}", refresh=False
                        )
                        window_tokens, window_start = 0, time.perf_counter()
                    progress.update()
                    if step % t.eval_every == 0:
                        self._validate(logger)
                        window_start = time.perf_counter()
                        if self._stop_early():
                            return
                    if stops:
                        path = self._save("last.pt")
                        raise TrainingInterrupted(stops[0], path)
                    if self._done():
                        break
                else:
                    self.state.epoch += 1
                    self.state.batch_in_epoch = 0
            if not self.state.history or self.state.history[-1]["step"] != self.state.step:
                self._validate(logger)

    def _validate(self, logger: RunLogger) -> None:
        """Valid loss, greedy BLEU and exact match; heatmaps; best/last checkpoints."""
        step = self.state.step
        started = time.perf_counter()
        scores, _ = evaluate_dataset(
            self.model,
            self.valid_set,
            self.corpus.tgt_vocab,
            batch_size=self.cfg.train.eval_batch_size,
            device=self.device,
            full=False,
        )
        if not math.isfinite(scores["loss"]):
            raise self._non_finite(scores["loss"], "validation")
        if self.cfg.train.lr_schedule == "plateau":
            self.scheduler.step(scores["loss"])
        logger.scalars(
            {
                "loss/valid": scores["loss"],
                "valid/bleu": scores["bleu"],
                "valid/exact_match": scores["exact_match"],
            },
            step,
        )
        self._log_samples(logger, step)
        self.state.history.append(
            {
                "step": step,
                "train_seconds": self.state.train_seconds,
                "valid_loss": scores["loss"],
                "valid_bleu": scores["bleu"],
                "valid_exact_match": scores["exact_match"],
            }
        )
        better = (scores["bleu"], -scores["loss"]) > (self.state.best_bleu, -self.state.best_loss)
        if better:
            self.state.best_bleu, self.state.best_loss = scores["bleu"], scores["loss"]
            self.state.best_step, self.state.bad_evals = step, 0
        else:
            self.state.bad_evals += 1
        if better:
            self._save("best.pt")
        self._save("last.pt")
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

    def sample_sources(self) -> list[tuple[str, ...]]:
        """The configured sample sentences, tokenized like the corpus."""
        return [tokenize_src(s, self.cfg.data.char_level_src) for s in self.cfg.data.samples]

    def _log_samples(self, logger: RunLogger, step: int) -> None:
        sources = self.sample_sources()
        if not sources:
            return
        dataset = ParallelDataset(
            [Pair(s, ()) for s in sources], self.corpus.src_vocab, self.corpus.tgt_vocab
        )
        batch = dataset.collate(range(len(dataset))).to(self.device)
        output = greedy_decode(self.model, batch.src, batch.src_lengths, batch.src_mask)
        translations = [self.corpus.tgt_vocab.decode(ids) for ids in output.tokens.tolist()]
        logger.text(
            "samples",
            translations_markdown(
                [(" ".join(s), " ".join(t)) for s, t in zip(sources, translations, strict=True)]
            ),
            step,
        )
        if not self.model.attention.has_weights:
            return
        weights = extract_attention_weights(self.model, batch, reference=False, trim=True)
        for k, (src, hyp, array) in enumerate(zip(sources, translations, weights, strict=True)):
            figure = plot_attention(array, [*src, "<eos>"], [*hyp, "<eos>"][: array.shape[1]])
            logger.figure(f"attention/sample_{k}", figure, step)

    # ------------------------------------------------------------------ final evaluation
    def test(self) -> dict[str, Any]:
        """Evaluate ``best.pt`` on the test split (full metrics); ``last.pt`` if the run folder
        has lost ``best.pt`` (e.g. a resumed copy of ``last.pt`` alone)."""
        path = self.ckpt_dir / "best.pt"
        if not path.exists() and (self.ckpt_dir / "last.pt").exists():
            log.warning("%s is missing; testing %s instead", path, path.with_name("last.pt"))
            path = path.with_name("last.pt")
        best = load_checkpoint(path, map_location=self.device)
        self.model.load_state_dict(best.model)
        scores, _ = evaluate_dataset(
            self.model,
            self.test_set,
            self.corpus.tgt_vocab,
            batch_size=self.cfg.train.eval_batch_size,
            device=self.device,
            beam_size=self.cfg.train.beam_size,
        )
        return scores
