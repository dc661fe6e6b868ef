"""The ``data`` section of the run's config: which corpus, where it lies, how it is read and
tokenized (:class:`DataConfig`). The data room owns it, so that the loaders take their own
section without reaching up to the config package; :mod:`seq2seq.config.schema` composes it
with the other sections. The synthetic corpus' sizes and lengths default to the generator's
own (:class:`~seq2seq.data.synthetic.generator.CorpusSpec`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seq2seq.data.synthetic.generator import CorpusSpec
from seq2seq.options import at_least, check, option
from seq2seq.records import from_plain

#: The synthetic corpus' default folder, keyed by its generator settings (relative interpolation
#: within ``data``; checkpoints store it resolved).
SYNTHETIC_DIR = (
    "data/synthetic/seed${.seed}-${.train_size}-${.valid_size}-${.test_size}"
    "-len${.min_len}-${.max_len}"
)


@dataclass
class DataConfig:
    name: str = option("synthetic", "Name of the corpus (shown in run names and reports).")
    seed: int = option(
        0,
        "Seed of the synthetic corpus and of the split of a single-file corpus (`path`); "
        "separate from the top-level `seed`, so runs over initialisation seeds share one corpus.",
    )
    dir: str | None = option(
        SYNTHETIC_DIR,
        "Folder holding train.tsv, valid.tsv and test.tsv. The default is named after the "
        "synthetic corpus' settings (seed, sizes, lengths), so another spec gets its own folder; "
        "data=tsv has none: give it.",
    )
    synthetic: bool = option(
        True,
        "Generate the synthetic splits into `dir` when it is missing. Its corpus.json records "
        "the generator settings and a hash of data/grammar.yaml; a folder holding another "
        "corpus is never used (choose another `dir`, or delete the folder to regenerate it). "
        "A folder of an older version (no corpus.json) is adopted only if its files equal "
        "what these settings generate.",
    )
    path: str | None = option(
        None, "A single TSV to split into train/valid/test instead of reading `dir` (e.g. Tatoeba)."
    )
    valid_size: int = option(
        CorpusSpec.valid_size,
        "Validation size: pairs of the synthetic corpus; of a single file (`path`), distinct "
        "source sentences, each with all its translations (so a few more pairs).",
    )
    test_size: int = option(
        CorpusSpec.test_size,
        "Test size: pairs of the synthetic corpus (stratified by source length); of a single "
        "file (`path`), distinct source sentences, as for valid_size.",
    )
    train_size: int = option(CorpusSpec.train_size, "Training pairs of the synthetic corpus.")
    min_len: int = option(CorpusSpec.min_len, "Shortest synthetic source sentence (tokens).")
    max_len: int = option(CorpusSpec.max_len, "Longest synthetic source sentence (tokens).")
    src_column: int = option(0, "0-based TSV column of the Chinese source.")
    tgt_column: int = option(1, "0-based TSV column of the English target.")
    alignment_column: int | None = option(2, "0-based TSV column of gold alignments, or null.")
    char_level_src: bool = option(False, "Split unsegmented Chinese into characters.")
    lowercase_tgt: bool = option(False, "Lowercase the English side.")
    split_tgt_punct: bool = option(False, "Detach punctuation from English words.")
    min_freq: int = option(1, "Tokens seen fewer times in training map to <unk>.")
    tgt_subwords: int = option(
        0,
        "English as subwords: the vocabulary size of a sentencepiece unigram model trained on "
        "the train split's English (saved in the run and its checkpoints); 0 = words. Real "
        "corpora without gold alignments only.",
    )
    src_subwords: int = option(
        0,
        "Chinese as subwords: the vocabulary size of a sentencepiece unigram model trained on "
        "the train split's Chinese (a character-level corpus' characters joined), carried in "
        "the run like the English one; 0 = characters or words. Real corpora without gold "
        "alignments only.",
    )
    samples: list[str] = option(
        [
            "我 爱 中国",
            "我 昨天 在 北京 吃 了 苹果",
            "你 喜欢 猫 吗 ？",
            # Long, with reordering: relative clause, time and place phrases (32 words).
            "他 爱 的 护士 明晚 会 在 超市 需要 这 本 新 的 杂志 ， 这 个 老 的 医生 昨天 "
            "在 中国 帮助 了 累 的 男孩 ， 朋友 是 作家",
        ],
        "Source sentences whose attention heatmaps and translations are logged.",
    )

    def __post_init__(self) -> None:
        check(
            bool(self.synthetic or self.path or self.dir),
            f"data={self.name} reads train.tsv, valid.tsv and test.tsv from a folder: give it "
            "with data.dir=FOLDER",
        )
        for name, zero in (("tgt_subwords", "words"), ("src_subwords", "characters or words")):
            pieces = getattr(self, name)
            check(
                pieces == 0 or pieces >= 8,
                f"data.{name} must be 0 ({zero}) or at least 8 pieces, got {pieces}",
            )
        for name in ("train_size", "valid_size", "test_size", "min_freq"):
            at_least(f"data.{name}", getattr(self, name), 1)
        check(
            1 <= self.min_len <= self.max_len,
            f"data.min_len ({self.min_len}) must be between 1 and data.max_len ({self.max_len})",
        )
        columns = {"src_column": self.src_column, "tgt_column": self.tgt_column}
        if self.alignment_column is not None:
            columns["alignment_column"] = self.alignment_column
        for name, column in columns.items():
            check(
                column >= 0,
                f"data.{name} must not be negative"
                + (" (null = no alignments)" if name == "alignment_column" else "")
                + f", got {column}",
            )
        names = list(columns)
        for k, first in enumerate(names):
            for second in names[k + 1 :]:
                check(
                    columns[first] != columns[second],
                    f"data.{first} and data.{second} are both column {columns[first]}; "
                    "give each its own (0-based) TSV column",
                )

    @property
    def corpus_spec(self) -> CorpusSpec:
        """The synthetic corpus this section asks for (the generator's fields, by name)."""
        shared = [f.name for f in dataclasses.fields(CorpusSpec) if hasattr(self, f.name)]
        return CorpusSpec(**{name: getattr(self, name) for name in shared})

    @classmethod
    def from_plain(
        cls, stored: Mapping[str, Any], seed: int | None = None, key: str = "data"
    ) -> DataConfig:
        """A checkpoint's stored ``data`` (plain, resolved data: read as it is, never
        interpolated again); fields it lacks take today's defaults, fields no longer known are
        dropped. ``seed``: the run's seed, the corpus seed of checkpoints older than
        ``data.seed``. Each field's type is checked (:func:`seq2seq.records.from_plain`:
        :class:`~seq2seq.records.RecordError` naming ``key.field``), then its value (a
        :class:`~seq2seq.errors.UserError`, as for a config)."""
        values = dict(stored)
        if "seed" not in values and seed is not None:
            values["seed"] = seed
        return from_plain(cls, values, key)
