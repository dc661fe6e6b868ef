"""One training run, top to bottom: build the trainer, fit, test the best checkpoint, write
``metrics.json`` and return its summary.

The launcher (:func:`seq2seq.launch.command.run_command`) takes the steps in order, with the
run folder's record between the first two::

    trainer = Trainer(config, run_dir, group)  # resume checks, corpus, model: nothing written
    folder.accept(config, hydra)               # accepted: .hydra/ and train.log
    summary = fit_and_test(trainer, config)    # fit, test, metrics.json

:func:`train` is the same without a run folder's record (the notebook, tests).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from seq2seq.config.schema import Config, to_plain
from seq2seq.data.batching import padding_share
from seq2seq.data.config import DataConfig
from seq2seq.data.corpus import SPLITS
from seq2seq.data.loading import Corpus
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
from seq2seq.files import atomic_write_bytes, file_sha256
from seq2seq.model.networks import Network
from seq2seq.training.distributed import ProcessGroup
from seq2seq.training.state import TrainState
from seq2seq.training.tblog import NullLogger, RunLogger
from seq2seq.training.trainer import Trainer

log = logging.getLogger("seq2seq")


def train(
    config: Config, run_dir: str | Path, group: ProcessGroup | None = None
) -> RunSummary | None:
    """Build, fit, test and summarise one run in ``run_dir`` (see :func:`fit_and_test`)."""
    return fit_and_test(Trainer(config, run_dir, group), config)


def fit_and_test(trainer: Trainer, config: Config) -> RunSummary | None:
    """Train, test the best checkpoint, write ``metrics.json``; returns its content.

    ``trainer`` is built from ``config`` and its command accepted: this writes into its run
    folder. Under DDP every rank trains; rank 0 alone logs, tests and writes, and the other
    ranks return None once training ends."""
    if not trainer.group.is_main:
        trainer.fit(NullLogger())
        return None
    run_dir = trainer.run_dir
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
        state = trainer.state
        compute = throughput(state, trainer.group.world_size)
        log.info(
            "throughput: %.0f target tokens/s over %.0f s of updates on %d process(es)",
            compute.tokens_per_second,
            compute.train_seconds,
            compute.processes,
        )
        tested, test_scores, decoding = trainer.test()
        summary = run_summary(
            config,
            trainer.model,
            state,
            tested=tested,
            test_scores=test_scores,
            distributed=Distributed(
                trainer.group.world_size, trainer.group.backend, list(state.world_sizes)
            ),
            compute=compute,
            decoding=decoding,
            corpus_sha256=corpus_sha256(config.data, trainer.corpus),
        )
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


def throughput(state: TrainState, processes: int) -> Compute:
    """How fast the run trained: its target tokens over its update seconds."""
    return Compute(round(state.train_seconds, 2), processes, state.train_tokens)


def corpus_sha256(data: DataConfig, corpus: Corpus) -> str:
    """A fingerprint of the corpus files the run read: ``data.path``'s SHA-256 (the one file
    its splits were cut from), or one over the SHA-256 of the folder's train, valid and test
    TSV files. Two corpora of one name (two synthetic ones, two folders of ``data=tsv``) differ
    in it; a copy of a corpus elsewhere does not."""
    if corpus.file_sha256 is not None:
        return corpus.file_sha256
    folder = Path(data.dir or "")
    listing = "".join(f"{split}.tsv {file_sha256(folder / f'{split}.tsv')}\n" for split in SPLITS)
    return hashlib.sha256(listing.encode()).hexdigest()


def run_summary(
    config: Config,
    model: Network,
    state: TrainState,
    *,
    tested: str,
    test_scores: Scores,
    distributed: Distributed | None = None,
    compute: Compute | None = None,
    decoding: Decoding | None = None,
    corpus_sha256: str | None = None,
) -> RunSummary:
    """Everything ``metrics.json`` holds (see :mod:`seq2seq.evaluation.summary`): the run's
    identity from its ``config`` and ``model``, where training stands (``state``), training's
    own test (``tested``: the checkpoint's name, ``test_scores``, ``decoding``), the processes
    and the speed."""
    best = state.best
    return RunSummary(
        attention=config.attention.type.value,
        num_heads=model.attention.num_heads,
        decoder=model.decoder.arrangement,
        seed=config.seed,
        data=config.data.name,
        corpus_sha256=corpus_sha256,
        parameters=model.parameter_counts()["total"],
        steps=state.step,
        best_step=state.best_step,
        train_seconds=round(state.train_seconds, 2),
        seconds_to_best=best.train_seconds if best else None,
        bleu_signature=test_scores.bleu_signature,
        test_checkpoint=tested,
        test=test_scores,
        valid_best=best,
        history=list(state.history),
        distributed=distributed,
        compute=compute,
        decoding=decoding,
        config=to_plain(config),
    )


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
