"""One training run from a config to ``metrics.json``: train, test the best checkpoint,
write the summary, log hyperparameters."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

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
from seq2seq.training.distributed import ProcessGroup
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import NullLogger, RunLogger
from seq2seq.training.trainer import Trainer

log = logging.getLogger("seq2seq")


def throughput(state: TrainState, processes: int) -> Compute:
    """How fast the run trained: its target tokens over its update seconds."""
    return Compute(round(state.train_seconds, 2), processes, state.train_tokens)


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
        compute = throughput(trainer.state, trainer.group.world_size)
        log.info(
            "throughput: %.0f target tokens/s over %.0f s of updates on %d process(es)",
            compute.tokens_per_second,
            compute.train_seconds,
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
