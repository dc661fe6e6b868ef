"""What one evaluation of a model on a split measured: :class:`Scores`, the one result type
of :func:`seq2seq.evaluation.scoring.evaluate` for validation, the final test and
``scripts/evaluate.py``.

A quick evaluation (validation during training) has the loss, BLEU and exact match; a full one
adds chrF, token accuracy, BLEU by source length and the BLEU signature, and — for a model with
attention on a split with gold alignments — :class:`AlignmentScores`. In ``metrics.json`` the
scores are one flat object (``test.aer`` beside ``test.bleu``), the layout the file has always
had; :meth:`Scores.to_dict` and :meth:`Scores.from_dict` are that layout's one definition.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from seq2seq.records import RecordError, from_plain, to_plain

#: How BLEU was computed: ``"13a"`` detokenized text against the original sentences (real
#: corpora, as MT papers report it), ``"none"`` the corpus' own tokens (the synthetic corpus).
BLEU_TOKENIZE = ("13a", "none")


@dataclass(frozen=True)
class AlignmentScores:
    """Teacher-forced attention against the gold alignment (see
    :func:`seq2seq.evaluation.metrics.alignment_scores`). Evaluation fills every field; files
    written before a field existed leave it ``None``."""

    aer: float  # head-averaged attention against sure and possible links
    aer_sure_only: float | None = None  # the same with possible = sure
    aer_best_head: float | None = None
    best_head: int | None = None
    best_head_split: str | None = None  # the split the head was picked on: "valid" or "same"
    aer_per_head: list[float] | None = None
    attention_entropy: float | None = None
    alignment_report: dict[str, Any] | None = None  # evaluation.alignment_report's record


@dataclass(frozen=True, kw_only=True)
class Scores:
    """The scores of one model on one split; the optional fields are those of a full
    evaluation (``None`` in a quick one), ``alignment`` only where attention meets gold links."""

    loss: float  # teacher-forced cross-entropy per target token
    bleu: float
    bleu_tokenize: str | None = None  # one of BLEU_TOKENIZE (None: a file from before it)
    exact_match: float
    chrf: float | None = None
    token_accuracy: float | None = None
    bleu_by_length: dict[str, float] | None = None  # source-length bucket -> BLEU
    bucket_sizes: dict[str, int] | None = None  # bucket -> sentences
    bleu_signature: str | None = None  # sacrebleu's reproducibility string
    beam_size: int = 1
    alignment: AlignmentScores | None = None

    @property
    def aer(self) -> float | None:
        return None if self.alignment is None else self.alignment.aer

    def value(self, name: str) -> Any:
        """A score by its ``metrics.json`` name (``bleu``, ``aer``, ``attention_entropy``...);
        None where this evaluation has none (an alignment score without alignment)."""
        if name in _ALIGNMENT_NAMES:
            return None if self.alignment is None else getattr(self.alignment, name)
        return getattr(self, name)

    @property
    def is_full(self) -> bool:
        return self.chrf is not None

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON object: every score, the alignment's ``null`` when there is none."""
        flat = {f.name: to_plain(getattr(self, f.name)) for f in fields(self)}
        alignment = flat.pop("alignment")
        names = [f.name for f in fields(AlignmentScores)]
        return flat | (alignment if alignment is not None else dict.fromkeys(names))

    @classmethod
    def from_dict(cls, data: object, key: str = "") -> Scores:
        """Read :meth:`to_dict`'s layout (older files may lack newer optional keys); raises
        :class:`~seq2seq.records.RecordError` naming the first bad key."""
        if not isinstance(data, dict):
            raise RecordError(key, f"should be an object of scores, got {data!r:.60}")
        names = {f.name for f in fields(AlignmentScores)}
        own = {k: v for k, v in data.items() if k not in names}
        scores = from_plain(cls, own | {"alignment": None}, key)
        if scores.bleu_tokenize not in (*BLEU_TOKENIZE, None):
            raise RecordError(
                f"{key}.bleu_tokenize" if key else "bleu_tokenize",
                f'should be "13a", "none" or null, got {scores.bleu_tokenize!r}',
            )
        if data.get("aer") is None:
            return scores
        alignment = from_plain(AlignmentScores, {k: data[k] for k in names if k in data}, key)
        return replace(scores, alignment=alignment)


_ALIGNMENT_NAMES = frozenset(f.name for f in fields(AlignmentScores))
