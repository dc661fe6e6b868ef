"""One training run from a config to ``metrics.json``: train, test the best checkpoint,
write the summary, log hyperparameters."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import torch

from seq2seq.config.schema import Config, to_plain
from seq2seq.data.batching import padding_share
from seq2seq.data.subwords import MODEL_FILE as SUBWORD_MODEL_FILE
from seq2seq.data.subwords import SOURCE_MODEL_FILE as SOURCE_SUBWORD_MODEL_FILE
from seq2seq.evaluation.scores import Scores
from seq2seq.evaluation.scoring import bleu_description
from seq2seq.evaluation.summary import (
    METRICS_FILE,
    Compute,
    Decoding,
    Distributed,
    RunSummary,
    record_summary,
)
from seq2seq.files import atomic_write_bytes
from seq2seq.runtime import measure_gemm
from seq2seq.training.distributed import ProcessGroup
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import NullLogger, RunLogger
from seq2seq.training.trainer import Trainer

log = logging.getLogger("seq2seq")


#: The fp32 GEMM that measures the machine's rate after training (bench's size), for
#: :data:`GEMM_SHARE` of the run's update seconds, within ``GEMM_SECONDS`` (min, max): a run of
#: minutes measures for 1 s, a run of seconds (the tests') does not spend a second on it.
GEMM_SIZE, GEMM_SHARE, GEMM_SECONDS = 1024, 0.01, (0.2, 1.0)


def gemm_seconds(train_seconds: float) -> float:
    """How long the GEMM rate of a run with ``train_seconds`` of updates is measured."""
    low, high = GEMM_SECONDS
    return min(high, max(low, GEMM_SHARE * train_seconds))


def measure_compute(state: TrainState, processes: int, device: torch.device) -> Compute:
    """The run's FLOP rate over its update seconds against an fp32 GEMM measured now, on this
    process' device and threads (one process' share of the machine)."""
    gemm = measure_gemm(device, GEMM_SIZE, gemm_seconds(state.train_seconds))["gflops"]
    gflops = state.train_flops / max(state.train_seconds, 1e-9) / 1e9
    return Compute(
        train_flops=state.train_flops,
        train_seconds=round(state.train_seconds, 2),
        gflops=gflops,
        gemm_gflops_per_process=gemm,
        processes=processes,
        fraction_of_peak=gflops / (gemm * processes),
        train_tokens=state.train_tokens,
    )


def run_summary(
    trainer: Trainer,
    config: Config,
    tested: str,
    test_scores: Scores,
    compute: Compute | None = None,
    decoding: Decoding | None = None,
) -> RunSummary:
    """Everything ``metrics.json`` holds (see :mod:`seq2seq.evaluation.summary`)."""
    state = trainer.state
    best = state.best
    return RunSummary(
        attention=trainer.spec.attention,
        num_heads=trainer.model.attention.num_heads,
        decoder=trainer.model.decoder.arrangement,
        seed=config.seed,
        data=config.data.name,
        parameters=trainer.model.parameter_counts()["total"],
        steps=state.step,
        best_step=state.best_step,
        train_seconds=round(state.train_seconds, 2),
        seconds_to_best=best.train_seconds if best else None,
        bleu_signature=test_scores.bleu_signature,
        test_checkpoint=tested,
        test=test_scores,
        valid_best=best,
        history=list(state.history),
        distributed=Distributed(
            trainer.group.world_size, trainer.group.backend, list(state.world_sizes)
        ),
        compute=compute,
        decoding=decoding,
    )


def train(
    config: Config,
    run_dir: str | Path,
    group: ProcessGroup | None = None,
    accept: Callable[[], None] | None = None,
) -> RunSummary | None:
    """Train, test the best checkpoint, write ``metrics.json``; returns its content.

    ``accept`` is called (on rank 0) once the trainer is built, i.e. once the command is known
    to be accepted, before anything is written (see :mod:`seq2seq.training.run_folder`).
    Under DDP (``group``) every rank trains; rank 0 alone logs, tests and writes, and the
    other ranks return None once training ends."""
    run_dir = Path(run_dir)
    trainer = Trainer(config, run_dir, group)
    if trainer.group.is_main and accept is not None:
        accept()
    if not trainer.group.is_main:
        trainer.fit(NullLogger())
        return None
    log.info("run folder: %s", run_dir.resolve())
    log.info("BLEU/chrF (validation and test) score %s", bleu_description(trainer.test_set.pairs))
    log.info("processes: %s", trainer.group.describe())
    log.info("%s", trainer.model.summary())
    if trainer.spec.attention == "additive":
        log.info(
            "additive energies: tanh computed as %s (model.tanh=%s; kept by a resumed run)",
            trainer.spec.tanh,
            config.model.tanh,
        )
    for side, vocab, name in (
        ("English", trainer.corpus.tgt_vocab, SUBWORD_MODEL_FILE),
        ("Chinese", trainer.corpus.src_vocab, SOURCE_SUBWORD_MODEL_FILE),
    ):
        if vocab.subwords is not None:
            atomic_write_bytes(run_dir / name, vocab.subwords.model)
            log.info("%s subwords: %d pieces, model in %s", side, len(vocab.subwords), name)
    log.info(
        "corpus: %d train / %d valid / %d test pairs, vocab %d zh / %d en, padding share %.1f%%",
        len(trainer.train_set),
        len(trainer.valid_set),
        len(trainer.test_set),
        len(trainer.corpus.src_vocab),
        len(trainer.corpus.tgt_vocab),
        100 * padding_share(trainer.sampler.batches(), trainer.train_set.src_lengths),
    )
    # Events after the checkpoint's step (written before an interruption) are dropped.
    logger = RunLogger(run_dir / "tb", purge_step=trainer.state.step + 1 if config.resume else None)
    try:
        trainer.fit(logger)
        compute = measure_compute(trainer.state, trainer.group.world_size, trainer.device)
        log.info(
            "compute: %.1f TFLOP in %.0f s of updates = %.1f GFLOP/s; fp32 GEMM %.1f GFLOP/s "
            "per process now, so %.0f%% of %d process(es)' peak",
            compute.train_flops / 1e12,
            compute.train_seconds,
            compute.gflops,
            compute.gemm_gflops_per_process,
            100 * compute.fraction_of_peak,
            compute.processes,
        )
        tested, test_scores, decoding = trainer.test()
        summary = run_summary(trainer, config, tested, test_scores, compute, decoding)
        record_summary(run_dir / METRICS_FILE, summary)  # keeps what evaluate.py recorded
        final = {
            "hparam/test_bleu": test_scores.bleu,
            "hparam/test_exact_match": test_scores.exact_match,
        }
        if test_scores.aer is not None:
            final["hparam/test_aer"] = test_scores.aer
        logger.hparams(hparams_of(config), final)
    finally:
        logger.close()
    log.info(
        "test BLEU %.2f  exact match %.3f  AER %s  -> %s",
        test_scores.bleu,
        test_scores.exact_match,
        "n/a" if test_scores.aer is None else f"{test_scores.aer:.3f}",
        run_dir / METRICS_FILE,
    )
    return summary


def hparams_of(config: Config) -> dict[str, object]:
    """The config flattened to ``group.key`` entries (for TensorBoard's hparams plugin)."""
    flat: dict[str, object] = {}

    def walk(prefix: str, node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}{key}.", value)
        elif not isinstance(node, list):
            flat[prefix[:-1]] = node

    walk("", to_plain(config))
    return flat
