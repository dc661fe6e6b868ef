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

from dataclasses import dataclass, field, fields, replace
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


@dataclass(frozen=True)
class InterventionScores:
    """What one intervention on the attention did to a split
    (:mod:`seq2seq.evaluation.interventions`): free-running ``bleu`` and ``exact_match``
    (greedy; None for ``gold``, which exists along the reference only), teacher-forced
    ``loss`` (per target token) and ``token_accuracy`` (the reference token is the most
    probable one). ``intervention`` "none" is the model's own attention."""

    intervention: str
    loss: float
    token_accuracy: float
    bleu: float | None = None
    exact_match: float | None = None


@dataclass(frozen=True)
class MapScores:
    """How well one map of where the output came from aligns with the gold links
    (:mod:`seq2seq.evaluation.attributions`): ``aer`` of the map (heads averaged, for
    attention), ``aer_per_head`` where a map has heads, on ``sentences`` sentences; for
    integrated gradients its ``steps`` and the mean absolute ``convergence_delta`` Captum
    reports (the attributions' sum against the output's change from the baseline)."""

    method: str  # "attention", "grad_x_input", "integrated_gradients", "shift_att"
    aer: float
    sentences: int
    layer: int | None = None  # a Transformer decoder layer (attention and Shift-Att)
    aer_per_head: list[float] | None = None
    steps: int | None = None
    convergence_delta: float | None = None


#: The methods a map may come from, in table order.
MAP_METHODS = ("attention", "grad_x_input", "integrated_gradients", "shift_att")


@dataclass(frozen=True)
class Explanation:
    """What ``evaluate.py --explain`` measured on one split with one checkpoint
    (:func:`seq2seq.evaluation.explain.explain`): the interventions and the maps."""

    checkpoint: str
    step: int
    split: str
    interventions: list[InterventionScores] = field(default_factory=list)
    maps: list[MapScores] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def key(self) -> str:
        """Where it is kept in ``metrics.json``'s ``explain``: one per split and checkpoint."""
        return f"{self.split} {self.checkpoint}"

    def intervention(self, name: str) -> InterventionScores | None:
        return next((s for s in self.interventions if s.intervention == name), None)

    def map(self, method: str, layer: int | None = None) -> MapScores | None:
        return next((m for m in self.maps if (m.method, m.layer) == (method, layer)), None)
