"""From a ``data`` config (:class:`~seq2seq.data.config.DataConfig`) to train/valid/test
pairs and vocabularies. A checkpoint's stored ``data`` comes back through
:meth:`DataConfig.from_plain <seq2seq.data.config.DataConfig.from_plain>`: plain,
already-resolved data read as it is, never interpolated again.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from seq2seq.data.config import DataConfig
from seq2seq.data.corpus import SPLITS, Pair, TsvFormat, read_tsv
from seq2seq.data.segmentation import in_subwords
from seq2seq.data.subwords import Subwords
from seq2seq.data.synthetic.generator import CorpusSpec
from seq2seq.data.synthetic.store import CORPUS_FILE, Outcome, ensure_corpus
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.files import file_sha256


@dataclass
class Corpus:
    """The three splits and the vocabularies built from the training split only;
    ``file_sha256`` fingerprints the one file the splits were cut from (``data.path``), so a
    later evaluation can tell whether re-splitting it still gives the same splits."""

    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    src_vocab: Vocab
    tgt_vocab: Vocab
    file_sha256: str | None = None


def tsv_format(data: DataConfig) -> TsvFormat:
    """How to read the configured corpus (the format's fields, by name). Real corpora keep
    their untokenized targets for paper-style BLEU; the synthetic one is scored on its tokens
    (see evaluation.scoring)."""
    shared = [f.name for f in dataclasses.fields(TsvFormat) if hasattr(data, f.name)]
    return TsvFormat(**{name: getattr(data, name) for name in shared}, keep_raw=not data.synthetic)


def ensure_synthetic_corpus(data: DataConfig) -> Path:
    """Generate the synthetic splits into ``data.dir`` unless it holds them already; raise
    :class:`UserError` when it holds a corpus of another spec (see :mod:`.synthetic.store`)."""
    directory = Path(data.dir)
    spec = data.corpus_spec
    if ensure_corpus(directory, spec) is Outcome.GENERATED:
        logging.getLogger(__name__).info(
            "generated the synthetic corpus (data.seed=%d) into %s: %d train / %d valid / "
            "%d test pairs",
            spec.seed,
            directory,
            spec.train_size,
            spec.valid_size,
            spec.test_size,
        )
    return directory


def synthetic_corpus_missing(data: DataConfig) -> bool:
    """Whether ``data`` asks for a synthetic corpus whose folder is missing or empty, so that
    reading its splits would generate it (:func:`ensure_synthetic_corpus`)."""
    directory = Path(data.dir or "")
    on_disk = directory.is_dir() and any(directory.iterdir())
    return data.synthetic and not data.path and not on_disk


def make_corpus_command(data: DataConfig) -> str:
    """The command that writes ``data``'s synthetic corpus: ``scripts/make_corpus.py`` with
    its folder and each generator setting that is not the default."""
    spec, default = data.corpus_spec, CorpusSpec()
    settings = [
        f"data.{field.name}={getattr(spec, field.name)}"
        for field in dataclasses.fields(CorpusSpec)
        if hasattr(data, field.name) and getattr(spec, field.name) != getattr(default, field.name)
    ]
    return shlex.join(["python", "scripts/make_corpus.py", f"data.dir={data.dir}", *settings])


def split_single_file(pairs: list[Pair], valid_size: int, test_size: int, seed: int) -> dict:
    """Shuffle (by ``seed``) and cut one corpus into splits; a source never spans two splits."""
    by_source: dict[tuple[str, ...], list[Pair]] = {}
    for pair in pairs:
        by_source.setdefault(pair.src, []).append(pair)
    groups = list(by_source.values())
    random.Random(seed).shuffle(groups)
    if len(groups) <= valid_size + test_size:
        raise UserError(
            f"the corpus has only {len(groups)} distinct sources, too few for "
            f"data.valid_size={valid_size} and data.test_size={test_size}; lower them"
        )
    flat = [
        groups[:valid_size],
        groups[valid_size : valid_size + test_size],
        groups[valid_size + test_size :],
    ]
    valid, test, train = ([p for g in part for p in g] for part in flat)
    return {"train": train, "valid": valid, "test": test}


def check_same_file(data: DataConfig, expected_sha256: str | None) -> None:
    """Raise :class:`UserError` when ``data.path`` no longer holds the bytes a run was trained
    on (``expected_sha256``): splitting another file would give other splits, silently."""
    path = data.path
    if not path or expected_sha256 is None or not Path(path).is_file():
        return  # nothing recorded (a folder corpus, an older run) or reported by the reader
    if file_sha256(path) != expected_sha256:
        raise UserError(
            f"{path} has changed since this run was trained (its SHA-256 differs), so its "
            "valid/test split would not be the run's; restore the file, or evaluate a folder "
            "of train/valid/test.tsv with --data-dir"
        )


def corpus_folder(data: DataConfig) -> Path:
    """The folder ``data.dir`` of train/valid/test.tsv, the synthetic corpus generated into it
    first when configured; a :class:`UserError` when there is no such folder."""
    if data.synthetic:
        ensure_synthetic_corpus(data)
    directory = Path(data.dir or "")
    if not directory.is_dir():
        raise UserError(
            f"data folder {directory} does not exist; set data.dir to a folder with "
            "train.tsv, valid.tsv and test.tsv"
        )
    return directory


def load_splits(data: DataConfig) -> dict[str, list[Pair]]:
    """Read train/valid/test (generating the synthetic corpus first when configured).

    A single file (``data.path``: plain, ``.xz`` or ``.gz``, e.g. the shipped Tatoeba
    corpus) is split here, in memory, on every call, from its contents, ``data.seed`` and
    the sizes: no split is cached on disk, so one of another seed or file is never reused.
    """
    fmt = tsv_format(data)
    if data.path:
        splits = split_single_file(
            read_tsv(data.path, fmt), data.valid_size, data.test_size, data.seed
        )
    else:
        directory = corpus_folder(data)
        if (directory / CORPUS_FILE).is_file():  # a synthetic corpus, e.g. evaluate --data-dir
            fmt = replace(fmt, keep_raw=False)
        splits = {split: read_tsv(directory / f"{split}.tsv", fmt) for split in SPLITS}
    for split in SPLITS:
        if not splits[split]:
            raise UserError(f"the {split} split of {data.path or data.dir} is empty")
    return splits


def load_corpus(data: DataConfig) -> Corpus:
    """The splits plus vocabularies built from the training split (with
    ``data.tgt_subwords`` / ``data.src_subwords``: English / Chinese pieces of a model trained
    on it, every piece kept)."""
    splits = load_splits(data)
    splits, src_subwords, tgt_subwords = in_subwords(splits, data)

    def min_freq(subwords: Subwords | None) -> int:
        return 1 if subwords is not None else data.min_freq  # every piece is kept

    train = splits["train"]
    return Corpus(
        **splits,
        src_vocab=Vocab.build((p.src for p in train), min_freq(src_subwords), src_subwords),
        tgt_vocab=Vocab.build((p.tgt for p in train), min_freq(tgt_subwords), tgt_subwords),
        file_sha256=file_sha256(data.path) if data.path else None,
    )
