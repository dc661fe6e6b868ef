"""One trained run behind the explorer: a sentence in; out its translation, the translation
with the attention replaced by each intervention, and the maps of where each output word came
from.

A map is ``(T_t, T_s)`` over ``source + <eos>`` (columns) for every target token (rows,
``<eos>`` last), each row summing to 1, one of :data:`~seq2seq.explorer.inputs.MAPS`:

* ``attention`` — every head's weights (every decoder layer's, for a Transformer);
* ``grad_x_input``, ``integrated_gradients`` — Captum's attribution of each row's word
  (its log-probability, teacher-forced) to the source words, each row as shares of its total
  (:mod:`seq2seq.evaluation.attributions`); integrated gradients with :data:`PAGE_IG_STEPS`
  steps;
* ``gold`` — a test sentence's gold links: a reference word's row uniform over its sure links
  (else its possible ones), a word without links on ``<eos>`` (what AER reads as unaligned).

A :class:`View` holds the maps of one target sequence. For a typed sentence that is the
model's own output: the attention it decoded with, and the attributions of each word it
emitted (teacher-forced along its output). For one of the run's test sentences, the gold links
and each map's sentence AER are on the output's view when the output is the reference, else on
a second view, of the reference (teacher-forced, as the metrics score AER).

Beside the model's own translation come those with its attention replaced
(:mod:`seq2seq.evaluation.interventions`: uniform, shuffle, argmax, each head); ``gold``
exists along the reference only, so it is not among them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from seq2seq.data.batching import Batch, ParallelDataset, gold_distribution
from seq2seq.data.corpus import Alignment, Pair, join_chinese
from seq2seq.data.loading import make_corpus_command, synthetic_corpus_missing
from seq2seq.errors import UserError
from seq2seq.evaluation.attributions import ATTRIBUTIONS, Rows, attribution_maps, row_shares
from seq2seq.evaluation.extract import ALL_LAYERS, extract_attention_weights
from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.interventions import Intervention, every_intervention
from seq2seq.evaluation.metrics import alignment_error_rate, hard_alignment
from seq2seq.evaluation.run_files import finished_run_metrics
from seq2seq.evaluation.summary import RunSummary
from seq2seq.explorer.inputs import MAPS, RequestError, check_sentence

EOS = "<eos>"
#: How many test sentences the page's pick-list offers, spread over the source lengths.
EXAMPLES = 40
#: Weights are sent with this many decimals: rows still sum to 1 within 5e-5 per cell.
DECIMALS = 5
#: Integrated gradients' steps in the page: fewer than ``evaluate.py --explain``'s 32
#: (:data:`~seq2seq.evaluation.attributions.IG_STEPS`), so a sentence is answered at once.
PAGE_IG_STEPS = 4
#: The attribution maps' titles on the page.
TITLES = {
    "grad_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "gold": "gold links",
}
assert ("attention", *ATTRIBUTIONS, "gold") == MAPS, "a map per attribution method"


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
class HeatMap:
    """One map, (T_t, T_s) as nested lists: ``method`` one of :data:`MAPS`; ``head`` and
    ``layer`` an attention head's (``layer`` None for a one-layer model); ``aer`` the
    sentence's AER of this map alone, where the gold links are known; ``convergence_delta``
    integrated gradients' mean absolute completeness error (Captum's, per row)."""

    method: str
    title: str
    weights: list[list[float]]
    head: int | None = None
    layer: int | None = None
    aer: float | None = None
    convergence_delta: float | None = None


@dataclass
class View:
    """The maps of one target sequence: ``rows`` its tokens (``<eos>`` last), read as the
    model's ``output`` or the ``reference``; ``sure``/``possible`` the gold
    ``(src_index, tgt_index)`` links and ``aer`` each method's sentence AER (attention: the
    reported layer's heads averaged), when known."""

    reading: str
    rows: list[str]
    maps: list[HeatMap]
    sure: list[tuple[int, int]] | None = None
    possible: list[tuple[int, int]] | None = None
    aer: dict[str, float] | None = None


@dataclass
class InterventionTranslation:
    """The translation with the attention replaced by intervention ``name`` (``label``: what
    the page calls it; heads counted from 1 as on the maps)."""

    name: str
    label: str
    output: list[str]
    text: str


@dataclass
class Answer:
    """A run's answer to one sentence. ``source`` ends with ``<eos>``; ``views`` hold the
    maps asked for; ``interventions`` the translations with the attention replaced (none for
    a model without attention); ``reference`` is the gold English of a test sentence."""

    run: str
    source: list[str]
    unknown: list[str]
    output: list[str]
    text: str
    views: list[View]
    reference: list[str] | None = None
    interventions: list[InterventionTranslation] = field(default_factory=list)
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

    @cached_property
    def interventions(self) -> list[Intervention]:
        """The interventions the page translates with: every free-running one this model
        takes (the rules, then each head; none without attention)."""
        if not self.has_attention:
            return []
        return [i for i in every_intervention(self.run.model.spec) if i.free_running]

    def describe(self) -> dict[str, object]:
        """What the page says about this run before any sentence: kind, heads, its scores,
        its interventions and the steps of integrated gradients."""
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
            "interventions": [i.name for i in self.interventions],
            "ig_steps": PAGE_IG_STEPS,
            "notes": self.notes,
        }

    def example(self, source: Sequence[str]) -> Example | None:
        """The test sentence with these source tokens, if there is one with gold links."""
        for example in self.examples:
            if example.source == tuple(source) and example.sure is not None:
                return example
        return None

    def explain(
        self,
        text: str,
        beam_size: int = 1,
        method: str | None = None,
        intervention: str | None = None,
    ) -> Answer:
        """Translate ``text`` with its maps (``method``: that map alone, None: every one) and
        under its interventions (``intervention``: that one alone, None: every one this model
        takes); :class:`RequestError` (422) for a sentence this run cannot take: too long for
        it, or none of its words known."""
        text = check_sentence(text)
        methods = MAPS if method is None else (method,)
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
            answer = Answer(
                run=self.name,
                source=[*source, EOS],
                unknown=translation.unknown,
                output=translation.output,
                text=translation.text,
                views=[],
            )
            example = self.example(source)
            if example is not None:
                answer.reference = list(example.reference)
            answer.views = self._views(source, translation.output, translation.weights,
                                       example, methods)  # fmt: skip
            answer.interventions = [
                self._translate_with(source, beam_size, chosen)
                for chosen in self.interventions
                if intervention is None or chosen.name == intervention
            ]
            answer.milliseconds = round((time.perf_counter() - started) * 1000, 2)
        return answer

    def _views(
        self,
        source: list[str],
        output: list[str],
        decoded: np.ndarray | None,
        example: Example | None,
        methods: Sequence[str],
    ) -> list[View]:
        """The output's view (``decoded``: the attention it was decoded with, (heads, T_t,
        T_s)); with a test sentence, the gold and AER on it (output = reference) or on a
        second view, of the reference. Both views' maps come from one batch."""
        targets = [output]
        if example is not None and tuple(output) != example.reference:
            targets.append(list(example.reference))
        batch = self._batch(source, targets)
        attention = None
        if "attention" in methods and self.has_attention:
            attention = self._attention(batch, decoded)
        attributions = {
            method: self._attributions(batch, method)
            for method in ATTRIBUTIONS
            if method in methods
        }
        views = []
        for k, target in enumerate(targets):
            gold = example if example is not None and tuple(target) == example.reference else None
            maps = {method: found[k] for method, found in attributions.items()}
            every = None if attention is None else attention[k]
            views.append(self._view("reference" if k else "output", target, every, maps, gold,
                                    methods))  # fmt: skip
        return views

    def _view(
        self,
        reading: str,
        target: list[str],
        every: np.ndarray | None,
        attributions: dict[str, tuple[np.ndarray, float | None]],
        example: Example | None,
        methods: Sequence[str],
    ) -> View:
        """The view of ``target``: its attention ``every`` (L, heads, T_t, T_s) and its
        ``attributions`` (method -> the map as row shares, and integrated gradients' mean
        absolute convergence delta); with ``example`` (whose reference ``target`` is) its
        gold links, the gold map and every map's AER."""
        maps: list[HeatMap] = []
        arrays: list[np.ndarray] = []  # each map's own values, for its AER
        scored: dict[str, np.ndarray] = {}  # the map each method's sentence AER is scored on
        if every is not None:
            maps += attention_maps(every, self.run.model.decoder_layer_count is not None)
            arrays += list(every.reshape(-1, *every.shape[2:]))
            scored["attention"] = self._reported(every).mean(0)
        for method, (shares, delta) in attributions.items():
            maps.append(HeatMap(method, TITLES[method], rounded(shares), convergence_delta=delta))
            arrays.append(shares)
            scored[method] = shares
        view = View(reading, [*target, EOS], maps)
        if example is None:
            return view
        view.sure = [tuple(link) for link in example.sure or ()]
        view.possible = [tuple(link) for link in example.possible]
        for heat_map, values in zip(maps, arrays, strict=True):
            heat_map.aer = round(sentence_aer(values, example), 4)
        view.aer = {name: round(sentence_aer(m, example), 4) for name, m in scored.items()}
        if "gold" in methods:
            view.maps.append(HeatMap("gold", TITLES["gold"], rounded(gold_map(example))))
        return view

    def _batch(self, source: list[str], targets: list[list[str]]) -> Batch:
        """Each of ``targets`` read from ``source``, as one batch on the model's device."""
        pairs = [Pair(tuple(source), tuple(target)) for target in targets]
        dataset = ParallelDataset(pairs, self.run.src_vocab, self.run.tgt_vocab)
        return dataset.collate(range(len(pairs))).to(next(self.run.model.parameters()).device)

    def _attention(self, batch: Batch, decoded: np.ndarray | None) -> list[np.ndarray]:
        """The attention of each of ``batch``'s targets: (L, heads, t, s), every decoder layer
        of a Transformer (teacher-forced), the one attention (L = 1) of a GRU: for the first
        target, its own output, the weights it was ``decoded`` with; else teacher-forced."""
        model = self.run.model
        if model.decoder_layer_count is not None:
            return list(extract_attention_weights(model, batch, trim=True, layer=ALL_LAYERS))
        found = [decoded[None]] if decoded is not None else []
        if len(batch.src) > len(found):
            forced = extract_attention_weights(model, batch, reference=True, trim=True)
            found += [weights[None] for weights in forced[len(found) :]]
        return found

    def _attributions(self, batch: Batch, method: str) -> list[tuple[np.ndarray, float | None]]:
        """The ``method`` map of each of ``batch``'s targets as row shares (t, s), with
        integrated gradients' mean absolute convergence delta (None for gradient × input)."""
        found, delta = attribution_maps(self.run.model, batch, method, steps=PAGE_IG_STEPS)
        shares = row_shares(found).float().cpu().numpy()
        rows = Rows.of(batch).sentence
        t_lengths, s_lengths = batch.tgt_mask.sum(1).tolist(), batch.src_lengths.tolist()
        maps = []
        for k, (t, s) in enumerate(zip(t_lengths, s_lengths, strict=True)):
            mean = None if delta is None else round(float(delta[rows == k].abs().mean()), 4)
            maps.append((shares[k, :t, :s], mean))
        return maps

    def _reported(self, every: np.ndarray) -> np.ndarray:
        """The heads AER is scored on, (heads, T_t, T_s): the reported layer's."""
        model = self.run.model
        return every[model.decoder.weights_layer if model.decoder_layer_count else 0]

    def _translate_with(
        self, source: list[str], beam_size: int, intervention: Intervention
    ) -> InterventionTranslation:
        (translation,) = self.run.translate_tokens([source], beam_size, intervention=intervention)
        return InterventionTranslation(
            intervention.name, intervention_label(intervention), translation.output,
            translation.text,
        )  # fmt: skip


def run_names(run_dirs: Sequence[Path]) -> list[str]:
    """Each run's folder name, with its parent's when two would read the same."""
    names = [path.resolve().name for path in run_dirs]
    if len(set(names)) < len(names):
        names = [f"{path.resolve().parent.name}/{path.resolve().name}" for path in run_dirs]
    return names


def check_intervention(name: str | None, explorers: Sequence[RunExplorer]) -> None:
    """Refuse (400, one line with the valid ones) an intervention that no run here takes."""
    if name is None:
        return
    valid = list(dict.fromkeys(i.name for e in explorers for i in e.interventions))
    if name in valid:
        return
    if not valid:
        raise RequestError(
            f"intervention {name!r:.60}: no run here has attention weights to replace; "
            "leave the field out",
            400,
        )
    if name == "gold":
        raise RequestError(
            "intervention 'gold' exists along a reference translation only; the page "
            f"translates freely: use one of {', '.join(valid)}",
            400,
        )
    try:
        Intervention.parse(name)
    except UserError:
        raise RequestError(
            f"unknown intervention {name!r:.60}; use one of {', '.join(valid)}", 400
        ) from None
    raise RequestError(
        f"no run here takes intervention {name!r}; use one of {', '.join(valid)}", 400
    )


def intervention_label(intervention: Intervention) -> str:
    """What the page calls an intervention: heads and layers counted from 1, as on the maps."""
    labels = {"uniform": "uniform weights", "shuffle": "shuffled weights",
              "argmax": "argmax (hard attention)"}  # fmt: skip
    if intervention.rule != "head":
        return labels[intervention.rule]
    head = f"head {(intervention.head or 0) + 1}"
    if intervention.layer is not None:
        head = f"layer {intervention.layer + 1} · {head}"
    return f"{head} uniform"


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


def attention_maps(weights: np.ndarray, layered: bool = False) -> list[HeatMap]:
    """(L, heads, T_t, T_s) -> one attention :class:`HeatMap` per layer and head, titled per
    head (``head 2``), with the layer where a model has layers (``layer 1 · head 2``)."""
    layers, heads = weights.shape[:2]
    maps = []
    for layer in range(layers):
        for head in range(heads):
            title = "attention" if heads == 1 else f"head {head + 1}"
            if layered:
                title = f"layer {layer + 1} · head {head + 1}"
            maps.append(HeatMap("attention", title, rounded(weights[layer, head]), head,
                                layer if layered else None))  # fmt: skip
    return maps


def rounded(values: np.ndarray) -> list[list[float]]:
    """A map as nested lists of :data:`DECIMALS` decimals."""
    return np.round(np.asarray(values, dtype=np.float64), DECIMALS).tolist()


def gold_map(example: Example) -> np.ndarray:
    """The gold links as a map of the reference (T_t, T_s): a word's row uniform over its sure
    links, else its possible ones; a word without links, and ``<eos>``, on ``<eos>``."""
    pair = Pair(example.source, example.reference, example.sure, example.possible)
    steps = (len(example.reference) + 1, len(example.source) + 1)
    gold = gold_distribution([pair], *steps, possible_weight=1.0)[0]
    gold[gold.sum(-1) == 0, -1] = 1.0
    return gold.numpy()


def sentence_aer(weights: np.ndarray, example: Example) -> float:
    """AER of one sentence from one map (T_t, T_s): each reference word's most attended
    source position against the gold links (``<eos>`` meaning unaligned)."""
    predicted = hard_alignment(weights, len(example.source), len(example.reference))
    return alignment_error_rate([predicted], [example.sure or ()], [example.possible])
