"""A corpus's splits in subword pieces (``data.src_subwords`` / ``data.tgt_subwords``): a
model trained on the training split's Chinese or English (:class:`~.subwords.Subwords`), every
split re-tokenized into its pieces. Only where nothing links words: not on the synthetic
corpus, not with gold alignments."""

from __future__ import annotations

from dataclasses import replace

from seq2seq.data.config import DataConfig
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
    train = splits["train"]
    src_subwords: Subwords | None = None
    tgt_subwords: Subwords | None = None
    if data.src_subwords:
        chinese = (chinese_text(p, data.char_level_src) for p in train)
        src_subwords = Subwords.train(chinese, data.src_subwords, "data.src_subwords")
    if data.tgt_subwords:
        english = map(english_text, train)
        tgt_subwords = Subwords.train(english, data.tgt_subwords, "data.tgt_subwords")
    splits = resegment(splits, src_subwords, tgt_subwords, data.char_level_src)
    return splits, src_subwords, tgt_subwords


def resegment(
    splits: Splits, src_subwords: Subwords | None, tgt_subwords: Subwords | None, char_level: bool
) -> Splits:
    """Every split with its Chinese re-tokenized into ``src_subwords``' pieces and its English
    into ``tgt_subwords``' (a side whose model is None kept as it is); ``char_level``: how the
    corpus tokenized its Chinese (``data.char_level_src``)."""
    models = {"data.src_subwords": src_subwords, "data.tgt_subwords": tgt_subwords}
    for option, subwords in models.items():
        if subwords is not None:
            _check_word_level_not_needed(splits, option)

    def in_pieces(pair: Pair) -> Pair:
        src, tgt = pair.src, pair.tgt
        if src_subwords is not None:
            src = src_subwords.segment(chinese_text(pair, char_level))
        if tgt_subwords is not None:
            tgt = tgt_subwords.segment(english_text(pair))
        return replace(pair, src=src, tgt=tgt)

    return {split: [in_pieces(p) for p in pairs] for split, pairs in splits.items()}


def chinese_text(pair: Pair, char_level: bool) -> str:
    """The Chinese a subword model sees: the tokens joined as the corpus wrote them (without
    spaces for a character-level corpus, with them for a segmented one)."""
    return join_chinese(pair.src, char_level)


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
