"""Subwords: a sentencepiece unigram model (Kudo 2018) trained on the train split, for the
English side (``data.tgt_subwords``) or the Chinese side (``data.src_subwords``).

A word-level English vocabulary maps every word seen fewer than ``data.min_freq`` times to
``<unk>``, and the model can never spell a word it has not seen. With
``data.tgt_subwords=N`` the English side is segmented into at most ``N`` pieces
(``▁tom ▁is ▁wait ing``) instead: rare words are spelled from pieces, and the output is
joined back into text by the same model. The model is trained in memory on the training
split's English only (the sentences as the corpus wrote them, lowercased when
``data.lowercase_tgt``; one thread, corpus order: the same bytes every time), and it travels
inside the target :class:`~seq2seq.data.vocab.Vocab`, so every checkpoint, ``evaluate.py``
and ``translate.py`` segment and join exactly as training did; the run folder keeps a copy
(``subwords.model``, readable by any sentencepiece tool).

The Chinese side works the same way (``data.src_subwords=N``): the model is trained on the
training split's Chinese (a character-level corpus' characters joined back into the sentence),
travels inside the source vocabulary, and ``translate.py``/``evaluate.py`` segment input with
it; the run folder keeps it as ``source_subwords.model``.

Gold alignments link words, so a corpus that has them (the synthetic one) stays word-level.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from types import ModuleType

from seq2seq.errors import UserError

MODEL_FILE = "subwords.model"  # the English model's copy in the run folder
SOURCE_MODEL_FILE = "source_subwords.model"


def _sentencepiece() -> ModuleType:
    """The sentencepiece module, imported only when subwords are used."""
    try:
        import sentencepiece
    except ImportError:
        raise UserError(
            "data.tgt_subwords needs the sentencepiece package: pip install sentencepiece "
            "(or set data.tgt_subwords=0 for words)"
        ) from None
    return sentencepiece


class Subwords:
    """A trained sentencepiece model: text -> pieces (:meth:`segment`) -> text (:meth:`join`)."""

    def __init__(self, model: bytes) -> None:
        self.model = model
        self._processor = _sentencepiece().SentencePieceProcessor(model_proto=model)

    @classmethod
    def train(
        cls, sentences: Iterable[str], vocab_size: int, option: str = "data.tgt_subwords"
    ) -> Subwords:
        """A unigram model of at most ``vocab_size`` pieces (fewer when the text is too small
        for that many) over ``sentences``, covering every character in them; ``option`` names
        the setting in errors."""
        texts = [s for s in sentences if s.strip()]
        if not texts:
            raise UserError(f"{option}: the training split has no text to learn from")
        model = io.BytesIO()
        try:
            _sentencepiece().SentencePieceTrainer.train(
                sentence_iterator=iter(texts),
                model_writer=model,
                vocab_size=vocab_size,
                model_type="unigram",
                character_coverage=1.0,
                hard_vocab_limit=False,
                num_threads=1,
                unk_id=0,
                bos_id=-1,
                eos_id=-1,
                pad_id=-1,
                minloglevel=2,
            )
        except RuntimeError as err:  # every character is a piece: Chinese needs many
            too_few = re.search(r"smaller than required_chars\. \d+ vs (\d+)", str(err))
            if too_few is None:
                raise
            raise UserError(
                f"{option}={vocab_size} is fewer pieces than the training split has "
                f"characters (each is a piece); choose {option} of at least {too_few.group(1)}"
            ) from None
        return cls(model.getvalue())

    def segment(self, text: str) -> tuple[str, ...]:
        """``"tom is waiting."`` -> ``("▁tom", "▁is", "▁wait", "ing", ".")``."""
        return tuple(self._processor.encode(text, out_type=str))

    def join(self, pieces: Sequence[str]) -> str:
        """Pieces -> text (the inverse of :meth:`segment` on normalised text)."""
        return self._processor.decode_pieces(list(pieces))

    def __len__(self) -> int:
        return self._processor.get_piece_size()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subwords) and self.model == other.model

    def __hash__(self) -> int:
        return hash(self.model)
