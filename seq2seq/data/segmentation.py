"""A corpus's splits in subword pieces (``data.src_subwords`` / ``data.tgt_subwords``): a
model trained on the training split's Chinese or English (:class:`~.subwords.Subwords`), every
split re-tokenized into its pieces. Only where nothing links words: not on the synthetic
corpus, not with gold alignments."""

from __future__ import annotations

from dataclasses import replace

from seq2seq.config.schema import DataConfig
from seq2seq.data.corpus import Pair, join_chinese
from seq2seq.data.subwords import Subwords
from seq2seq.errors import UserError

Splits = dict[str, list[Pair]]


def in_subwords(
    splits: Splits, data: DataConfig
) -> tuple[Splits, Subwords | None, Subwords | None]:
    """``splits`` re-tokenized as ``data`` asks, with the Chinese and English subword models
    trained on their training split (None for a side kept in words)."""
    for option in ("src_subwords", "tgt_subwords"):
        if getattr(data, option):
            _check_word_level_not_needed(splits, f"data.{option}", data.synthetic)
    src_subwords, tgt_subwords = None, None
    if data.src_subwords:
        train_texts = (chinese_text(p, data.char_level_src) for p in splits["train"])
        src_subwords = Subwords.train(train_texts, data.src_subwords, "data.src_subwords")
        splits = segment_sources(splits, src_subwords, data.char_level_src)
    if data.tgt_subwords:
        train_texts = map(english_text, splits["train"])
        tgt_subwords = Subwords.train(train_texts, data.tgt_subwords, "data.tgt_subwords")
        splits = segment_targets(splits, tgt_subwords)
    return splits, src_subwords, tgt_subwords


def chinese_text(pair: Pair, char_level: bool) -> str:
    """The Chinese a subword model sees: the tokens joined as the corpus wrote them (without
    spaces for a character-level corpus, with them for a segmented one)."""
    return join_chinese(pair.src, char_level)


def segment_sources(splits: Splits, subwords: Subwords, char_level: bool) -> Splits:
    """Every split with its Chinese re-tokenized into ``subwords``' pieces."""
    _check_word_level_not_needed(splits, "data.src_subwords")
    return {
        split: [replace(p, src=subwords.segment(chinese_text(p, char_level))) for p in pairs]
        for split, pairs in splits.items()
    }


def _check_word_level_not_needed(splits: Splits, option: str, synthetic: bool = False) -> None:
    """Subwords (``option``) only where nothing links words: not on the synthetic corpus, not
    with gold alignments."""
    if synthetic:
        raise UserError(
            f"{option} needs a real corpus: the synthetic one is scored and aligned word by "
            f"word; set {option}=0"
        )
    if any(p.alignment is not None for pairs in splits.values() for p in pairs):
        raise UserError(
            f"{option}: this corpus has gold alignments, which link words, not subwords; set "
            f"data.alignment_column=null to drop them, or {option}=0"
        )


def english_text(pair: Pair) -> str:
    """The English a subword model sees: the sentence as the corpus wrote it, lowercased
    when the corpus is (``data.lowercase_tgt``)."""
    raw = pair.tgt_raw
    if raw is None:
        raise UserError(
            "data.tgt_subwords needs a real corpus: the synthetic one is scored and aligned "
            "word by word; set data.tgt_subwords=0"
        )
    return raw.text.lower() if raw.lowercased else raw.text


def segment_targets(splits: Splits, subwords: Subwords) -> Splits:
    """Every split with its English re-tokenized into ``subwords``' pieces."""
    _check_word_level_not_needed(splits, "data.tgt_subwords")
    return {
        split: [replace(p, tgt=subwords.segment(english_text(p))) for p in pairs]
        for split, pairs in splits.items()
    }
