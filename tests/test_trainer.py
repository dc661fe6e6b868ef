"""The trainer's public seams: ``train_step`` (one update, nothing else) and ``fit``'s extra
stop condition, on the tiny toy corpus."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import torch

from seq2seq.analysis.bench.measure import training_batches
from seq2seq.config.compose import load_config
from seq2seq.config.schema import TrainConfig
from seq2seq.data.batching import BucketBatchSampler
from seq2seq.model.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.training.run import fit_and_test, throughput
from seq2seq.training.schedule import PlateauSchedule
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import RunLogger
from seq2seq.training.trainer import Trainer
from tests.helpers.runs import TINY_OVERRIDES


@pytest.fixture
def trainer(tmp_path: Path, toy_corpus: Path) -> Trainer:
    cfg = load_config([*TINY_OVERRIDES, f"data.dir={toy_corpus}", "train.num_threads=1"])
    return Trainer(cfg, tmp_path / "run")


def fit(trainer: Trainer, tmp_path: Path, **kwargs: object) -> str:
    logger = RunLogger(tmp_path / "tb")
    try:
        return trainer.fit(logger, **kwargs)  # type: ignore[arg-type]
    finally:
        logger.close()


def test_train_step_updates_the_weights_and_reports_loss_norm_and_tokens(
    trainer: Trainer,
) -> None:
    indices = trainer.sampler.batches()[0]
    before = [p.detach().clone() for p in trainer.model.parameters()]
    result = trainer.train_step(indices)
    assert result.finite and result.loss > 0 and list(result.losses) == ["loss/train"]
    assert math.isfinite(result.grad_norm) and result.grad_norm > 0
    assert result.tokens == trainer.train_set.collate(indices).num_tgt_tokens > 0
    after = list(trainer.model.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    assert trainer.state.step == 0  # fit owns the position, not the step


def test_adam_takes_its_beta2_from_the_config(tmp_path: Path, toy_corpus: Path) -> None:
    overrides = [*TINY_OVERRIDES, f"data.dir={toy_corpus}"]
    default = Trainer(load_config(overrides), tmp_path / "default")
    assert default.optimizer.param_groups[0]["betas"] == (0.9, TrainConfig().adam_beta2)
    chosen = Trainer(load_config([*overrides, "train.adam_beta2=0.98"]), tmp_path / "chosen")
    assert chosen.optimizer.param_groups[0]["betas"] == (0.9, 0.98)


def test_train_step_lowers_the_loss_on_a_repeated_batch(trainer: Trainer) -> None:
    indices = trainer.sampler.batches()[0]
    first = trainer.train_step(indices).loss
    for _ in range(5):
        last = trainer.train_step(indices).loss
    assert last < first


def test_stop_condition_ends_fit_at_the_step_it_first_holds(
    trainer: Trainer, tmp_path: Path
) -> None:
    seen: list[int] = []

    def at_five(state: TrainState) -> bool:
        seen.append(state.step)
        return state.step >= 5

    fit(trainer, tmp_path, should_stop=at_five)
    assert trainer.state.step == 5  # max_steps is 24
    assert seen[0] == 0 and seen[-1] == 5 and seen == sorted(seen)
    assert [h.step for h in trainer.state.history] == [5]  # the closing validation
    assert (trainer.ckpt_dir / "last.pt").is_file()


def test_fit_without_a_stop_condition_runs_to_max_steps(trainer: Trainer, tmp_path: Path) -> None:
    fit(trainer, tmp_path)
    assert trainer.state.step == trainer.train.max_steps == 24
    assert [h.step for h in trainer.state.history] == [12, 24]


def test_fit_says_why_it_stopped_and_patience_counts_from_the_best(
    trainer: Trainer, tmp_path: Path
) -> None:
    trainer.train.eval_every = 2
    trainer.train.patience = 2
    trainer.train.lr = 1e-9  # nothing improves: patience runs out after the first best
    trainer.optimizer.param_groups[0]["lr"] = 1e-9
    trainer.schedule = PlateauSchedule(trainer.optimizer, factor=0.3, patience=1)  # keeps 1e-9
    reason = fit(trainer, tmp_path)
    state = trainer.state
    assert "train.patience" in reason and state.bad_evals == 2
    assert state.best is not None and state.best.step == state.history[-3].step
    assert state.step == state.history[-1].step < 24


def test_the_exact_match_target_stops_at_the_first_validation_reaching_it(
    trainer: Trainer, tmp_path: Path
) -> None:
    trainer.train.stop_at_exact_match = 0.0
    reason = fit(trainer, tmp_path)
    assert trainer.state.step == 12 and "stop_at_exact_match" in reason


def test_the_process_count_of_every_part_of_a_resumed_run_is_recorded(
    tmp_path: Path, toy_corpus: Path
) -> None:
    """A run started on two processes and resumed on one records both, not one for all."""
    overrides = [*TINY_OVERRIDES, f"data.dir={toy_corpus}"]
    first = Trainer(load_config([*overrides, "train.max_steps=12"]), tmp_path / "run")
    fit(first, tmp_path)
    assert first.state.world_sizes == [1]
    last = tmp_path / "run" / "checkpoints" / "last.pt"
    saved = load_checkpoint(last)
    saved.state["world_sizes"] = [2]  # as a two-process start would have left it
    save_checkpoint(last, saved)
    config = load_config([*overrides, "train.max_steps=24", "resume=true"])
    resumed = Trainer(config, last.parents[1])
    summary = fit_and_test(resumed, config)
    assert resumed.state.world_sizes == [2, 1]
    assert summary is not None and summary.distributed is not None
    assert summary.distributed.world_sizes == [2, 1]


def test_the_run_counts_the_target_tokens_it_trained_on(trainer: Trainer, tmp_path: Path) -> None:
    """The run's throughput is the target tokens of the batches it drew (<eos> included) over
    its update seconds."""
    fit(trainer, tmp_path)
    sampler = BucketBatchSampler(trainer.train_set.src_lengths, trainer.train.batch_size, seed=0)
    batches = training_batches(sampler)
    tokens = sum(
        trainer.train_set.collate(next(batches)).num_tgt_tokens for _ in range(trainer.state.step)
    )
    compute = throughput(trainer.state, 1)
    assert trainer.state.train_tokens == compute.train_tokens == tokens > 0
    assert compute.processes == 1
    assert compute.tokens_per_second == pytest.approx(tokens / compute.train_seconds, rel=1e-2)


def test_the_test_times_its_search_alone(trainer: Trainer, tmp_path: Path) -> None:
    """The test decodes every test sentence once and records how long the search took: less
    than the whole evaluation (scoring, the loss and the alignment passes excluded)."""
    fit(trainer, tmp_path)
    started = time.perf_counter()
    tested, scores, decoding = trainer.test()
    whole = time.perf_counter() - started
    sentences = len(trainer.test_set)
    assert (tested, decoding.sentences, decoding.beam_size) == ("best.pt", sentences, 1)
    assert decoding.batch_size == trainer.train.eval_batch_size
    assert 0 < decoding.seconds < whole
    assert decoding.sentences_per_second == pytest.approx(sentences / decoding.seconds)
    assert scores.is_full
