"""One trained run behind the explorer: a sentence in, its translation and attention maps out.

A map is one head's weights ``(T_t, T_s)`` over ``source + <eos>`` (columns) for every
emitted token ``output + <eos>`` (rows); each row sums to 1. When the sentence is one of
the run's test sentences with gold links, the explanation carries them and the sentence's
AER — on the maps of the output when it is the reference, else on a second set of maps,
the attention while the model reads the reference (teacher forcing, as the metrics score it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seq2seq.data.batching import ParallelDataset
from seq2seq.data.corpus import Alignment, Pair, join_chinese
from seq2seq.data.loading import make_corpus_command, synthetic_corpus_missing
from seq2seq.errors import UserError
from seq2seq.evaluation.extract import ALL_LAYERS, extract_attention_weights
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.metrics import alignment_error_rate, hard_alignment
from seq2seq.evaluation.run_files import finished_run_metrics
from seq2seq.evaluation.summary import RunSummary
from seq2seq.explorer.inputs import RequestError, check_sentence

EOS = "<eos>"
#: How many test sentences the page's pick-list offers, spread over the source lengths.
EXAMPLES = 40
#: Weights are sent with this many decimals: rows still sum to 1 within 5e-5 per cell.
DECIMALS = 5


@dataclass(frozen=True)
class Example:
    """A test sentence of the run's corpus: its text as typed, tokens and gold links."""

    text: str
    source: tuple[str, ...]
    reference: tuple[str, ...]
    sure: Alignment | None
    possible: Alignment = ()


def pick_examples(pairs: Sequence[Pair], char_level: bool, count: int = EXAMPLES) -> list[Example]:
    """``count`` pairs spread evenly over the source lengths (shortest to longest), as
    :class:`Example` in length order; the text is the Chinese as the corpus writes it."""
    if not pairs:
        return []
    ordered = sorted(range(len(pairs)), key=lambda k: (len(pairs[k].src), k))
    picks = sorted(
        {ordered[round(k * (len(ordered) - 1) / max(count - 1, 1))] for k in range(count)}
    )
    chosen = sorted((pairs[k] for k in picks), key=lambda p: len(p.src))
    return [
        Example(join_chinese(p.src, char_level), p.src, p.tgt, p.alignment, p.possible)
        for p in chosen
    ]


@dataclass
class AttentionMap:
    """One head's weights, (T_t, T_s) as nested lists; ``layer`` None for a one-layer model."""

    title: str
    head: int
    weights: list[list[float]]
    layer: int | None = None


@dataclass
class View:
    """The maps of one target sequence: ``rows`` its tokens (``<eos>`` last), read as the
    model's ``output`` or the ``reference``; ``sure``/``possible`` the gold
    ``(src_index, tgt_index)`` links and ``aer`` (heads averaged) / ``head_aer`` when known."""

    reading: str
    rows: list[str]
    maps: list[AttentionMap]
    sure: list[tuple[int, int]] | None = None
    possible: list[tuple[int, int]] | None = None
    aer: float | None = None
    head_aer: list[float] | None = None


@dataclass
class Explanation:
    """A run's answer to one sentence. ``source`` ends with ``<eos>``; ``views`` is empty
    for a model without attention; ``reference`` is the gold English of a test sentence."""

    run: str
    source: list[str]
    unknown: list[str]
    output: list[str]
    text: str
    views: list[View]
    reference: list[str] | None = None
    milliseconds: float = 0.0


@dataclass
class RunExplorer:
    """A loaded run with its test sentences, answering one request at a time (a lock: the
    model is never run by two threads at once, and the cores serve one sentence)."""

    name: str
    run: TrainedRun
    summary: RunSummary
    examples: list[Example]
    notes: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(
        cls, name: str, run_dir: str | Path, checkpoint: str = "best.pt", device: str = "cpu"
    ) -> RunExplorer:
        """Load a *finished* run (its ``metrics.json`` holds the test scores) and read its
        test sentences once; a corpus that is gone or changed only leaves the list empty
        (said in :attr:`notes`). Raises :class:`UserError` for a folder that is not a finished
        run or a checkpoint that does not load."""
        metrics = finished_run_metrics(run_dir, checkpoint)
        run = TrainedRun.load(run_dir, checkpoint, device=device)
        summary = RunSummary.load(metrics)
        test, notes = read_test_split(run)
        return cls(name, run, summary, pick_examples(test, run.data.char_level_src), notes)

    @property
    def has_attention(self) -> bool:
        return bool(self.run.model.attention.has_weights)

    def describe(self) -> dict[str, object]:
        """What the page says about this run before any sentence: kind, heads, its scores."""
        test = self.summary.test
        return {
            "name": self.name,
            "attention": self.summary.attention,
            "heads": int(self.run.model.attention.num_heads),
            "decoder": self.summary.decoder,
            "step": self.run.step,
            "test_bleu": test.bleu,
            "test_exact_match": test.exact_match,
            "input_limit": self.run.input_limit,
            "notes": self.notes,
        }

    def example(self, source: Sequence[str]) -> Example | None:
        """The test sentence with these source tokens, if there is one with gold links."""
        for example in self.examples:
            if example.source == tuple(source) and example.sure is not None:
                return example
        return None

    def explain(self, text: str, beam_size: int = 1) -> Explanation:
        """Translate ``text`` with its maps; :class:`RequestError` (422) for a sentence this
        run cannot take: too long for it, or none of its words known."""
        text = check_sentence(text)
        with self._lock:
            started = time.perf_counter()
            source = self.run.tokenize(text)
            try:
                self.run.check_source(source, text)
            except UserError as err:
                raise RequestError(f"{self.name}: {err}") from None
            if len(self.run.src_vocab.unknown(source)) == len(source):
                raise RequestError(
                    f"none of these words is in the vocabulary of {self.name}; "
                    "pick a test sentence from the list, or use its words"
                )
            (translation,) = self.run.translate_tokens([source], beam_size)
            explanation = Explanation(
                run=self.name,
                source=[*source, EOS],
                unknown=translation.unknown,
                output=translation.output,
                text=translation.text,
                views=[],
            )
            example = self.example(source)
            if example is not None:
                explanation.reference = list(example.reference)
            if translation.weights is not None:
                explanation.views = self._views(
                    translation.weights, translation.output, example, source
                )
            explanation.milliseconds = round((time.perf_counter() - started) * 1000, 2)
        return explanation

    def _views(
        self, weights: np.ndarray, output: list[str], example: Example | None, source: list[str]
    ) -> list[View]:
        """The output's maps; with a test sentence, gold and AER on them (output = reference)
        or on a second view of the teacher-forced maps (output ≠ reference)."""
        layered = self.run.model.decoder_layer_count is not None
        # a Transformer: every layer's cross-attention, teacher-forced on its own output
        every = self._forced(source, output) if layered else weights[None]
        view = View("output", [*output, EOS], maps_of(every, layered))
        if example is None:
            return [view]
        if tuple(output) == example.reference:
            return [with_gold(view, self._reported(every), every, example)]
        forced = self._forced(list(example.source), list(example.reference))
        reading = View("reference", [*example.reference, EOS], maps_of(forced, layered))
        return [view, with_gold(reading, self._reported(forced), forced, example)]

    def _forced(self, source: list[str], target: list[str]) -> np.ndarray:
        """Teacher-forced attention of ``target`` read from ``source``: (L, heads, T_t, T_s),
        every decoder layer of a Transformer, the one attention (L = 1) of a GRU."""
        pair = Pair(tuple(source), tuple(target))
        batch = ParallelDataset([pair], self.run.src_vocab, self.run.tgt_vocab).collate([0])
        model = self.run.model
        if model.decoder_layer_count is None:
            (forced,) = extract_attention_weights(model, batch, reference=True, trim=True)
            return forced[None]
        (every,) = extract_attention_weights(model, batch, trim=True, layer=ALL_LAYERS)
        return every

    def _reported(self, every: np.ndarray) -> np.ndarray:
        """The heads AER is scored on, (heads, T_t, T_s): the reported layer's."""
        model = self.run.model
        return every[model.decoder.weights_layer if model.decoder_layer_count else 0]


def read_test_split(run: TrainedRun) -> tuple[list[Pair], list[str]]:
    """The run's test split and, when there is none to read, a note saying why. The explorer
    writes nothing: a synthetic corpus that is gone is not generated again (reading its
    splits would), the note says how to."""
    data = run.data
    if synthetic_corpus_missing(data):
        return [], [
            f"no test sentences to pick from: the synthetic corpus {data.dir} is gone; "
            f"{make_corpus_command(data)} writes it again"
        ]
    try:
        return run.splits()["test"], []
    except UserError as err:
        return [], [f"no test sentences to pick from: {err}"]


def maps_of(weights: np.ndarray, layered: bool = False) -> list[AttentionMap]:
    """(L, heads, T_t, T_s) -> one :class:`AttentionMap` per layer and head, titled per head
    (``head 2``), with the layer where a model has layers (``layer 1 · head 2``)."""
    layers, heads = weights.shape[:2]
    maps = []
    for layer in range(layers):
        for head in range(heads):
            title = "attention" if heads == 1 else f"head {head + 1}"
            if layered:
                title = f"layer {layer + 1} · head {head + 1}"
            values = np.round(weights[layer, head].astype(np.float64), DECIMALS).tolist()
            maps.append(AttentionMap(title, head, values, layer if layered else None))
    return maps


def sentence_aer(weights: np.ndarray, example: Example) -> float:
    """AER of one sentence from one map (T_t, T_s): each reference word's most attended
    source position against the gold links (``<eos>`` meaning unaligned)."""
    predicted = hard_alignment(weights, len(example.source), len(example.reference))
    return alignment_error_rate([predicted], [example.sure or ()], [example.possible])


def with_gold(view: View, reported: np.ndarray, every: np.ndarray, example: Example) -> View:
    """``view`` with the gold links, the AER of the ``reported`` heads' mean (heads, T_t,
    T_s) and of each map of ``every`` (L, heads, T_t, T_s), in the order of the maps."""
    view.sure = [tuple(link) for link in example.sure or ()]
    view.possible = [tuple(link) for link in example.possible]
    view.aer = round(sentence_aer(reported.mean(0), example), 4)
    maps = every.reshape(-1, *every.shape[2:])
    view.head_aer = [round(sentence_aer(w, example), 4) for w in maps]
    return view
