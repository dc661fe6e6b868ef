"""``metrics.json``: the one definition of what a finished run reports.

Training writes it (:func:`seq2seq.training.run.run_summary`), ``scripts/evaluate.py``
rewrites it with another split's scores (:func:`seq2seq.evaluation.report.evaluate_run`),
and ``scripts/compare.py`` reads it; all three go through :class:`RunSummary`, so the
file's keys and their types are stated once, here.

:meth:`RunSummary.to_dict` gives the keys in the order training has always written them;
keys this class does not know (e.g. ``"valid"`` scores added by ``evaluate.py --split
valid``) are kept in :attr:`RunSummary.extra` and written after them, so a rewrite loses
nothing. :meth:`RunSummary.from_dict` checks every field and raises
:class:`~seq2seq.errors.UserError` with one line naming the file and the field.

Files written before a field existed still load: ``decoder`` defaults to ``"bahdanau"``
(the only arrangement before ``model.decoder``), ``num_heads`` to 1, and ``steps``,
``seconds_to_best``, ``bleu_signature`` and ``valid_best`` to ``None``; ``test.bleu_tokenize``
(how BLEU was computed, also visible as ``tok:`` in the signature) may be absent. Rewriting
such a file (``evaluate.py``) writes those defaults out. ``test.alignment_report`` (the
per-word alignment error report) is optional: absent in older files, ``null`` without
attention or gold links.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seq2seq.errors import UserError
from seq2seq.files import write_json

METRICS_FILE = "metrics.json"
#: The decoder arrangement of runs made before ``model.decoder`` existed.
LEGACY_DECODER = "bahdanau"

#: Test scores every summary must have as numbers / may have as a number or ``null``.
NEEDED_SCORES = ("bleu", "chrf", "exact_match")
NULL_SCORES = ("aer", "aer_best_head", "attention_entropy")
#: How test BLEU was computed (``test.bleu_tokenize``; absent in files written before it):
#: ``"13a"`` detokenized text against the original sentences (real corpora, as MT papers
#: report it), ``"none"`` the corpus' own tokens (the synthetic corpus).
BLEU_TOKENIZE = ("13a", "none")
_TOK_WHAT = '"13a", "none" or null'


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_history(value: object) -> bool:
    """A list of validation records, each with a numeric ``step`` and ``valid_loss``."""
    return isinstance(value, list) and all(
        isinstance(h, Mapping) and _is_number(h.get("step")) and _is_number(h.get("valid_loss"))
        for h in value
    )


def _is_bleu_by_length(value: object) -> bool:
    return isinstance(value, Mapping) and all(_is_number(x) for x in value.values())


def _is_alignment_report(value: object) -> bool:
    """The alignment error report (:func:`seq2seq.evaluation.alignment_report.alignment_report`):
    checked as far as readers rely on it, a word count and per-category counts and shares."""
    return (
        isinstance(value, Mapping)
        and _is_integer(value.get("words"))
        and all(
            isinstance(value.get(key), Mapping) and all(_is_number(x) for x in value[key].values())
            for key in ("counts", "shares")
        )
    )


def _optional(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


@dataclass(frozen=True)
class _Field:
    """How one key of ``metrics.json`` is checked; ``default`` applies when it is absent."""

    path: tuple[str, ...]
    check: Callable[[object], bool]
    what: str
    required: bool = True
    default: Any = None


_FIELDS: tuple[_Field, ...] = (
    _Field(("attention",), lambda v: isinstance(v, str) and v != "", "a name"),
    _Field(("num_heads",), lambda v: _is_integer(v) and v >= 0, "a whole number", False, 1),
    _Field(("decoder",), lambda v: isinstance(v, str) and v != "", "a name", False, LEGACY_DECODER),
    _Field(("seed",), _is_integer, "an integer"),
    _Field(("data",), lambda v: isinstance(v, str), "a dataset name"),
    _Field(("parameters",), _is_integer, "an integer"),
    _Field(("steps",), _optional(_is_integer), "an integer or null", False),
    _Field(("best_step",), _is_integer, "an integer"),
    _Field(("train_seconds",), _is_number, "a number"),
    _Field(("seconds_to_best",), _optional(_is_number), "a number or null", False),
    _Field(("bleu_signature",), _optional(lambda v: isinstance(v, str)), "a string or null", False),
    _Field(("test",), lambda v: isinstance(v, Mapping), "an object of test scores"),
    *(_Field(("test", key), _is_number, "a number") for key in NEEDED_SCORES),
    *(_Field(("test", k), _optional(_is_number), "a number or null", False) for k in NULL_SCORES),
    _Field(("test", "bleu_by_length"), _is_bleu_by_length, "an object of bucket -> BLEU"),
    _Field(("test", "bleu_tokenize"), _optional(BLEU_TOKENIZE.__contains__), _TOK_WHAT, False),
    _Field(
        ("test", "alignment_report"),
        _optional(_is_alignment_report),
        "an object with words, counts and shares, or null",
        False,
    ),
    _Field(("valid_best",), _optional(lambda v: isinstance(v, Mapping)), "an object", False),
    _Field(("history",), _is_history, "a list of {step, valid_loss, ...} entries"),
    _Field(
        ("distributed",),
        _optional(lambda v: isinstance(v, Mapping) and _is_integer(v.get("world_size"))),
        "an object with world_size and backend, or null",
        False,
    ),
)


def _lookup(data: Mapping[str, Any], path: Sequence[str]) -> tuple[bool, Any]:
    """``(True, value)`` if ``data[path[0]][path[1]]...`` exists, else ``(False, None)``."""
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror or err}") from err
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path} is not valid JSON ({err}); rerun or remove that run") from err


@dataclass
class RunSummary:
    """What ``metrics.json`` holds: a run's identity, cost, test scores and history.

    ``test`` is the scores dict of :func:`seq2seq.evaluation.scoring.evaluate_dataset`
    (``bleu``, ``chrf``, ``exact_match``, ``aer`` ..., ``bleu_by_length``); ``history``
    the validation records (``step``, ``valid_loss``, ...); ``valid_best`` the record of
    ``best_step``. ``extra`` holds any other top-level keys, in file order.
    """

    attention: str
    seed: int
    data: str
    parameters: int
    best_step: int
    train_seconds: float
    test: dict[str, Any]
    history: list[dict[str, Any]]
    num_heads: int = 1
    decoder: str = LEGACY_DECODER
    steps: int | None = None
    seconds_to_best: float | None = None
    bleu_signature: str | None = None
    valid_best: dict[str, Any] | None = None
    distributed: dict[str, Any] | None = None  # {"world_size": N, "backend": "gloo"|...}
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the order training writes them, then :attr:`extra`."""
        return {
            "attention": self.attention,
            "num_heads": self.num_heads,
            "decoder": self.decoder,
            "seed": self.seed,
            "data": self.data,
            "parameters": self.parameters,
            "steps": self.steps,
            "best_step": self.best_step,
            "train_seconds": self.train_seconds,
            "seconds_to_best": self.seconds_to_best,
            "bleu_signature": self.bleu_signature,
            "test": self.test,
            "valid_best": self.valid_best,
            "history": self.history,
            **({"distributed": self.distributed} if self.distributed is not None else {}),
            **self.extra,
        }

    @classmethod
    def from_dict(cls, data: object, source: str | Path = METRICS_FILE) -> RunSummary:
        """Check ``data`` (a parsed ``metrics.json``) and build the summary.

        Raises :class:`UserError` naming ``source`` and the first missing or ill-typed field.
        """
        if not isinstance(data, Mapping):
            raise UserError(f"{source}: expected a JSON object, got {type(data).__name__}")
        values: dict[str, Any] = {}
        for spec in _FIELDS:
            name = ".".join(spec.path)
            present, value = _lookup(data, spec.path)
            if not present:
                if spec.required:
                    raise UserError(
                        f"{source}: missing key {name!r}; is it a metrics.json from train.py?"
                    )
                value = spec.default
            elif not spec.check(value):
                raise UserError(f"{source}: {name!r} should be {spec.what}, got {value!r}")
            if len(spec.path) == 1:
                values[name] = value
        known = {spec.path[0] for spec in _FIELDS}
        return cls(
            **{key: dict(v) if isinstance(v, Mapping) else v for key, v in values.items()},
            extra={key: value for key, value in data.items() if key not in known},
        )

    @classmethod
    def load(cls, path: str | Path) -> RunSummary:
        """Read and check ``path``; :class:`UserError` naming the file if unreadable or bad."""
        return cls.from_dict(_read_json(Path(path)), path)

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` to ``path`` atomically (pretty-printed UTF-8 JSON)."""
        write_json(path, self.to_dict())

    def with_scores(self, split: str, scores: dict[str, Any]) -> RunSummary:
        """A copy with ``scores`` as the scores of ``split`` (``test`` or an extra key), and
        their ``bleu_signature`` as the summary's (what ``evaluate.py`` records)."""
        updated = RunSummary.from_dict(self.to_dict() | {split: scores})
        updated.bleu_signature = scores.get("bleu_signature")
        return updated


def record_scores(path: str | Path, split: str, scores: dict[str, Any]) -> None:
    """Put ``scores`` of ``split`` into the ``metrics.json`` at ``path`` (``evaluate.py``).

    A full summary is checked and rewritten through :class:`RunSummary`, every other entry
    kept. A run whose training stopped before its test has no summary: the file then holds
    only what evaluations measured (each split's scores and the BLEU signature).
    """
    path = Path(path)
    data = _read_json(path) if path.is_file() else {}
    if isinstance(data, Mapping) and "attention" not in data:  # evaluations only
        write_json(path, {**data, split: scores, "bleu_signature": scores["bleu_signature"]})
        return
    RunSummary.from_dict(data, path).with_scores(split, scores).save(path)
