"""``metrics.json``: the one definition of what a finished run reports.

Training writes it (:func:`seq2seq.training.run.run_summary`), ``scripts/evaluate.py`` adds
its evaluations beside training's own result (:func:`record_evaluation`: training's ``test``
block is never replaced), and ``scripts/compare.py`` reads it. The file is
:class:`RunSummary` written out (:func:`seq2seq.records.to_plain`) and read back with every
field checked against its type (:func:`seq2seq.records.from_plain`): the keys, their order and
their types are stated once, in the dataclasses below. Keys this module does not know are kept
in :attr:`RunSummary.extra` and written after the others, so a rewrite loses nothing.

Files written before a field existed still load: ``decoder`` defaults to ``"bahdanau"`` (the
only arrangement before ``model.decoder``), ``num_heads`` to 1, the other newer fields to
``None`` or empty (see each field's default); the fields of :data:`OPTIONAL` are written only
when a run has them, so a rewrite of an older file does not add them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from seq2seq.errors import UserError
from seq2seq.evaluation.scores import Explanation, Scores
from seq2seq.files import JSONError, locked, parse_json, write_json
from seq2seq.records import RecordError, from_plain, to_plain

METRICS_FILE = "metrics.json"
#: The decoder arrangement of runs made before ``model.decoder`` existed.
LEGACY_DECODER = "bahdanau"
#: What a test block must have beyond the quick scores: the full evaluation's.
FULL_SCORES = ("chrf", "bleu_by_length")


@dataclass(frozen=True, kw_only=True)
class ValidationRecord:
    """One validation during training: where training stood and what validation scored."""

    step: int
    train_seconds: float = 0.0  # update steps only, validation excluded
    valid_loss: float
    valid_bleu: float = 0.0
    valid_exact_match: float = 0.0

    @classmethod
    def of(cls, step: int, train_seconds: float, scores: Scores) -> ValidationRecord:
        return cls(
            step=step,
            train_seconds=train_seconds,
            valid_loss=scores.loss,
            valid_bleu=scores.bleu,
            valid_exact_match=scores.exact_match,
        )


@dataclass(frozen=True)
class Distributed:
    """How many processes trained the run (DDP) and over which backend: ``world_size`` of its
    last part, ``world_sizes`` of each part in order (a resume on another count adds one)."""

    world_size: int
    backend: str | None = None
    world_sizes: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Compute:
    """How fast training ran: the target tokens (``<eos>`` included) of every update over the
    updates' seconds, on ``processes`` processes. (The machine's peak and a run's share of it
    are ``scripts/bench.py``'s to measure; files written when training measured them carry
    more keys here, which are ignored.)"""

    train_seconds: float
    processes: int
    train_tokens: int | None = None

    @property
    def tokens_per_second(self) -> float | None:
        """Training throughput: target tokens per second of updates (all processes)."""
        return None if self.train_tokens is None else self.train_tokens / self.train_seconds


@dataclass(frozen=True)
class Decoding:
    """How fast training's test was decoded: ``sentences`` in ``seconds`` of search alone
    (greedy for ``beam_size`` 1, else beam search; ``batch_size`` sentences per batch, on one
    process and its threads), scoring and the teacher-forced loss excluded."""

    sentences: int
    seconds: float
    beam_size: int
    batch_size: int

    @property
    def sentences_per_second(self) -> float:
        return self.sentences / max(self.seconds, 1e-9)


@dataclass(frozen=True)
class Evaluation:
    """One ``scripts/evaluate.py`` run: the scores and what produced them."""

    checkpoint: str  # "best.pt", "last.pt", ...
    step: int  # the checkpoint's training step
    split: str
    beam_size: int
    corpus: str  # the corpus scored: data.path, or the folder of {split}.tsv
    corpus_sha256: str | None  # of the file the split was read from
    scores: Scores
    # a Transformer's alignment layer by layer: per decoder layer, "aer" (heads averaged),
    # "aer_per_head", ... (scoring.layer_alignment); empty for one attention
    layers: list[dict[str, Any]] = field(default_factory=list)
    # the attention replaced while decoding (evaluate.py --intervention); None: the model's own
    intervention: str | None = None

    @property
    def key(self) -> str:
        """Where it is kept in :attr:`RunSummary.evaluations`: one entry per checkpoint, split,
        beam, corpus and intervention, so re-running an evaluation replaces only its own
        earlier result."""
        key = f"{self.split} {self.checkpoint} beam={self.beam_size} {self.corpus}"
        return key if self.intervention is None else f"{key} intervention={self.intervention}"


@dataclass(kw_only=True)
class RunSummary:
    """What ``metrics.json`` holds, in file order: the run's identity and cost, training's own
    test scores (``test``: ``test_checkpoint`` at ``best_step``, with ``train.beam_size``),
    the validation history, and evaluations made afterwards (keyed by :attr:`Evaluation.key`).
    """

    attention: str
    num_heads: int = 1
    decoder: str = LEGACY_DECODER
    seed: int
    data: str
    # the corpus files the run read (seq2seq.training.run.corpus_sha256): what tells two corpora
    # of one name apart (two synthetic corpora, two folders of data=tsv)
    corpus_sha256: str | None = None
    parameters: int
    steps: int | None = None
    best_step: int
    train_seconds: float
    seconds_to_best: float | None = None
    bleu_signature: str | None = None  # of the test scores
    test_checkpoint: str | None = None  # None: a file from before it (it was best.pt)
    test: Scores
    valid_best: ValidationRecord | None = None  # the history's record at best_step
    history: list[ValidationRecord]
    distributed: Distributed | None = None
    compute: Compute | None = None
    decoding: Decoding | None = None  # of the test block's search
    config: dict[str, Any] | None = None  # the run's config as plain data (.hydra/config.yaml's)
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    # attention put to the test (evaluate.py --explain), keyed by Explanation.key
    explain: dict[str, Explanation] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def train_tokens_per_second(self) -> float | None:
        return None if self.compute is None else self.compute.tokens_per_second

    @property
    def decoding_sentences_per_second(self) -> float | None:
        return None if self.decoding is None else self.decoding.sentences_per_second

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: the fields in order (the optional ones of :data:`OPTIONAL` only
        when there are any), then :attr:`extra`."""
        data = {k: v for k, v in to_plain(self).items() if k != "extra"}
        for optional in OPTIONAL:
            if not data[optional]:
                del data[optional]
        return data | self.extra

    @classmethod
    def from_dict(cls, data: object, source: str | Path = METRICS_FILE) -> RunSummary:
        """Check ``data`` (a parsed ``metrics.json``) and build the summary.

        Raises :class:`UserError` naming ``source`` and the first missing or ill-typed field.
        """
        if not isinstance(data, Mapping):
            raise UserError(f"{source}: expected a JSON object, got {type(data).__name__}")
        try:
            summary = from_plain(cls, {k: v for k, v in data.items() if k != "extra"})
        except RecordError as err:
            missing = str(err).startswith("missing")
            hint = (
                "; is it a metrics.json from train.py?" if missing else "; rerun or remove that run"
            )
            raise UserError(f"{source}: {err}{hint}") from None
        for name in FULL_SCORES:
            if data["test"].get(name) is None:
                raise UserError(f"{source}: missing key 'test.{name}' (a full test evaluation)")
        if summary.num_heads < 0:
            raise UserError(
                f"{source}: 'num_heads' should be a whole number, got {data['num_heads']}"
            )
        if not summary.attention:
            raise UserError(f"{source}: 'attention' should be a name, got ''")
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        summary.extra = {k: v for k, v in data.items() if k not in known}
        return summary

    @classmethod
    def load(cls, path: str | Path) -> RunSummary:
        """Read and check ``path``; :class:`UserError` naming the file if unreadable or bad."""
        return cls.from_dict(read_json(Path(path)), path)

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` to ``path`` atomically (pretty-printed UTF-8 JSON)."""
        write_json(path, self.to_dict())

    def with_record(self, record: Evaluation | Explanation) -> RunSummary:
        """A copy with ``record`` added to :attr:`evaluations` or :attr:`explain` (replacing an
        earlier one of the same key)."""
        name = RECORDS[type(record)]
        return replace(self, **{name: {**getattr(self, name), record.key: record}})


#: The fields written only when a run has them (older files have none of them).
OPTIONAL = (
    "corpus_sha256", "distributed", "compute", "decoding", "config", "evaluations", "explain",
)  # fmt: skip
#: What evaluate.py adds to a run after training, and the field each kind is kept in.
RECORDS: dict[type, str] = {Evaluation: "evaluations", Explanation: "explain"}


def read_json(path: Path) -> object:
    """Parsed JSON, or a one-line :class:`UserError` naming the file."""
    try:
        return parse_json(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror or err}") from err
    except (JSONError, UnicodeDecodeError) as err:
        raise UserError(f"{path} is not valid JSON ({err}); rerun or remove that run") from err


def recorded(path: str | Path) -> RunSummary | dict[str, dict[str, Any]]:
    """What evaluate.py recorded in ``path`` (a ``metrics.json``, or nothing yet): a full
    summary, or for a run stopped before its test the records alone, by field
    (``{"evaluations": {key: Evaluation}, "explain": {key: Explanation}}``)."""
    path = Path(path)
    data = read_json(path) if path.is_file() else {}
    if not isinstance(data, Mapping):
        raise UserError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if "attention" in data:
        return RunSummary.from_dict(data, path)
    try:
        return {
            name: {k: from_plain(kind, v) for k, v in data.get(name, {}).items()}
            for kind, name in RECORDS.items()
        }
    except (RecordError, AttributeError) as err:
        raise UserError(f"{path}: {err}") from None


def recorded_evaluations(path: str | Path) -> dict[str, Evaluation]:
    """The evaluations ``path`` holds (see :func:`recorded`)."""
    found = recorded(path)
    return found.evaluations if isinstance(found, RunSummary) else found["evaluations"]


def record_evaluation(path: str | Path, record: Evaluation | Explanation) -> None:
    """Add ``record`` (an evaluation, or an explanation of ``--explain``) to the
    ``metrics.json`` at ``path``, keeping training's own ``test`` block and every other entry.

    A run whose training stopped before its test has no summary: the file then holds only
    the records (``{"evaluations": {...}, "explain": {...}}``), and training's summary never
    overwrites one. The file is read and rewritten under its lock
    (:func:`seq2seq.files.locked`), so records written at the same time by other processes
    are all kept.
    """
    path = Path(path)
    with locked(path):
        found = recorded(path)
        if isinstance(found, RunSummary):
            found.with_record(record).save(path)
            return
        found[RECORDS[type(record)]][record.key] = record
        write_json(path, {name: to_plain(v) for name, v in found.items() if v})


def record_summary(path: str | Path, summary: RunSummary) -> None:
    """Write training's ``summary`` to ``path`` with what evaluate.py already recorded there
    (each record names its checkpoint and step), under the same lock as
    :func:`record_evaluation`."""
    with locked(path):
        found = recorded(path)
        kept = (
            {name: getattr(found, name) for name in RECORDS.values()}
            if isinstance(found, RunSummary)
            else found
        )
        replace(summary, **kept).save(path)
