"""Scoring a model on a split: loss, decoding, BLEU/chrF, exact match, BLEU by length, AER
and the alignment error report."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from tqdm import tqdm

from seq2seq.data.batching import Batch, BucketBatchSampler, ParallelDataset
from seq2seq.data.corpus import Pair
from seq2seq.data.detokenize import join_english
from seq2seq.data.subwords import Subwords
from seq2seq.data.vocab import Vocab
from seq2seq.evaluation import alignment_report, metrics
from seq2seq.evaluation.extract import ALL_LAYERS, extract_attention_weights
from seq2seq.evaluation.scores import AlignmentScores, Scores
from seq2seq.model.networks import Network
from seq2seq.model.search import decode


def eval_batches(
    dataset: ParallelDataset, batch_size: int, device: torch.device
) -> Iterator[Batch]:
    """Length-sorted batches in a fixed order (little padding, deterministic)."""
    sampler = BucketBatchSampler(dataset.src_lengths, batch_size, shuffle=False)
    for indices in sampler:
        yield dataset.collate(indices).to(device)


def sequence_loss(
    logits: torch.Tensor,
    tgt_out: torch.Tensor,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy over real target tokens: logits (B, T_t, V), tgt_out (B, T_t);
    ``label_smoothing`` (training only) spreads that share of each target over the vocabulary."""
    return F.cross_entropy(
        logits.flatten(0, 1),
        tgt_out.flatten(),
        ignore_index=Vocab.pad_id,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


@torch.no_grad()
def validation_loss_sum(
    model: Network, dataset: ParallelDataset, batch_size: int, device: torch.device
) -> tuple[float, int]:
    """Teacher-forced cross-entropy summed over the target tokens, and their number."""
    model.eval()
    total, tokens = 0.0, 0
    for batch in eval_batches(dataset, batch_size, device):
        logits, _ = model(batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in)
        total += float(sequence_loss(logits, batch.tgt_out, reduction="sum"))
        tokens += batch.num_tgt_tokens
    return total, tokens


@torch.no_grad()
def translate_dataset(
    model: Network,
    dataset: ParallelDataset,
    tgt_vocab: Vocab,
    *,
    batch_size: int,
    device: torch.device,
    beam_size: int = 1,
    progress: bool = False,
) -> list[list[str]]:
    """Decoded English of every pair, in dataset order.

    ``progress`` draws a progress bar on stderr (sentences decoded; tqdm, which stays off
    when stderr is not a terminal): ``scripts/evaluate.py`` asks for it, training's
    validation never does.
    """
    hypotheses: list[list[str]] = [[] for _ in range(len(dataset))]
    with tqdm(
        total=len(dataset), desc="translating", unit="sentence", leave=False, file=sys.stderr,
        disable=None if progress else True,
    ) as bar:  # fmt: skip
        for batch in eval_batches(dataset, batch_size, device):
            output = decode(model, batch.src, batch.src_lengths, batch.src_mask, beam_size)
            for index, ids in zip(batch.indices.tolist(), output.tokens.tolist(), strict=True):
                hypotheses[index] = tgt_vocab.decode(ids)
            bar.update(len(batch.indices))
    return hypotheses


@dataclass
class GoldAttention:
    """Teacher-forced attention of a split beside its gold links, in batch order:
    ``weights[k]`` (heads, t_k, s_k) trimmed to sentence ``k``'s real tokens."""

    weights: list = field(default_factory=list)
    sources: list[tuple[str, ...]] = field(default_factory=list)
    targets: list[tuple[str, ...]] = field(default_factory=list)
    sure: list = field(default_factory=list)
    possible: list = field(default_factory=list)

    def scores(self, head: int | None = None) -> dict[str, float | int | list[float]]:
        """AER, per-head AER and entropy; see :func:`metrics.alignment_scores`."""
        src_lens = [len(s) for s in self.sources]
        tgt_lens = [len(t) for t in self.targets]
        return metrics.alignment_scores(
            self.weights, src_lens, tgt_lens, self.sure, self.possible, head
        )

    def report(self) -> dict:
        """Per-word link categories; see :func:`alignment_report.alignment_report`."""
        return alignment_report.alignment_report(
            self.weights, self.sources, self.targets, self.possible
        )


def gold_attention(
    model: Network,
    dataset: ParallelDataset,
    *,
    batch_size: int,
    device: torch.device,
    layer: int | str | None = None,
) -> GoldAttention:
    """Run teacher-forced attention over ``dataset`` once and keep it with the gold links
    (``layer``: that Transformer decoder layer's cross-attention, else the reported one)."""
    collected = GoldAttention()
    for batch in eval_batches(dataset, batch_size, device):
        trimmed = extract_attention_weights(model, batch, reference=True, trim=True, layer=layer)
        for index, array in zip(batch.indices.tolist(), trimmed, strict=True):
            pair = dataset.pairs[index]
            collected.weights.append(array)
            collected.sources.append(pair.src)
            collected.targets.append(pair.tgt)
            collected.sure.append(pair.alignment or ())
            collected.possible.append(pair.possible_links)
    return collected


def attention_scores(
    model: Network,
    dataset: ParallelDataset,
    *,
    batch_size: int,
    device: torch.device,
    head: int | None = None,
) -> dict[str, float | int | list[float]]:
    """AER (against sure and possible gold links, and sure only), per-head AER and entropy of
    teacher-forced attention; see :func:`metrics.alignment_scores` (``head``: the head to
    report as best, chosen on another split)."""
    return gold_attention(model, dataset, batch_size=batch_size, device=device).scores(head)


def layer_alignment(
    model: Network, dataset: ParallelDataset, *, batch_size: int, device: torch.device
) -> list[dict[str, float | int | list[float]]]:
    """A Transformer's AER layer by layer: for each decoder layer's cross-attention, the
    scores of :func:`attention_scores` (heads averaged, and ``aer_per_head``); empty for a
    model with one attention."""
    if not model.decoder_layer_count:
        return []
    every = gold_attention(model, dataset, batch_size=batch_size, device=device, layer=ALL_LAYERS)
    return [
        replace(every, weights=[w[k] for w in every.weights]).scores()
        for k in range(model.decoder_layer_count)
    ]


@dataclass(frozen=True)
class BleuInputs:
    """What BLEU/chrF score and how: ``tokenize`` is sacrebleu's tokenizer (``"none"``:
    our tokens, space-joined; ``"13a"``: detokenized text against the original sentences)."""

    hypotheses: Sequence[Any]
    references: Sequence[Any]
    bleu: Callable[[Sequence[Any], Sequence[Any]], metrics.BleuResult]
    chrf: Callable[[Sequence[Any], Sequence[Any]], metrics.BleuResult]
    tokenize: str


def bleu_inputs(
    hypotheses: Sequence[Sequence[str]], pairs: Sequence[Pair], subwords: Subwords | None = None
) -> BleuInputs:
    """Paper-style scoring when every pair kept its untokenized target (real corpora):
    hypotheses detokenized by undoing exactly our own tokenization (joining ``subwords``'
    pieces when the English is subwords), references the original
    sentences, 13a, ``case:lc`` for a lowercased corpus. Otherwise (the synthetic corpus,
    whose references are token sequences by construction) tokens against tokens."""
    raws = [p.tgt_raw for p in pairs]
    first = raws[0] if raws else None
    if first is None or any(r is None for r in raws):
        references = [list(p.tgt) for p in pairs]
        return BleuInputs(hypotheses, references, metrics.corpus_bleu, metrics.corpus_chrf, "none")
    return BleuInputs(
        hypotheses=[join_english(h, first.split_punct, subwords) for h in hypotheses],
        references=[r.text for r in raws if r is not None],
        bleu=partial(metrics.text_bleu, lowercase=first.lowercased),
        chrf=partial(metrics.text_chrf, lowercase=first.lowercased),
        tokenize="13a",
    )


def bleu_description(pairs: Sequence[Pair]) -> str:
    """One line for the run log: which BLEU/chrF validation and test report on ``pairs``."""
    if bleu_inputs([p.tgt for p in pairs], pairs).tokenize == "13a":
        return "detokenized English against the original sentences (sacrebleu 13a, as papers do)"
    return "tokenized text (tok:none) on purpose; sacrebleu's warning is off"


@dataclass(frozen=True)
class DecodedShard:
    """One process's shard of a split, decoded (what validation needs): the greedy (or
    beam) hypotheses of its pairs, in their order, and their teacher-forced loss summed over
    ``tokens`` target tokens. Parts of the shards ``pairs[r::n]`` combine into the split's
    :class:`Scores` (:func:`split_scores`)."""

    hypotheses: list[list[str]]
    loss_sum: float
    tokens: int
    decode_seconds: float = 0.0  # the search alone (greedy or beam), wall time


def decode_shard(
    model: Network,
    dataset: ParallelDataset,
    tgt_vocab: Vocab,
    *,
    batch_size: int,
    device: torch.device,
    beam_size: int = 1,
    progress: bool = False,
) -> DecodedShard:
    """The :class:`DecodedShard` of ``dataset`` (a whole split, or one process's shard of it)."""
    started = time.perf_counter()
    hypotheses = translate_dataset(
        model, dataset, tgt_vocab, batch_size=batch_size, device=device, beam_size=beam_size,
        progress=progress,
    )  # fmt: skip
    decode_seconds = time.perf_counter() - started
    loss_sum, tokens = validation_loss_sum(model, dataset, batch_size, device)
    return DecodedShard(hypotheses, loss_sum, tokens, decode_seconds)


def split_scores(
    parts: Sequence[DecodedShard], pairs: Sequence[Pair], tgt_vocab: Vocab, beam_size: int = 1
) -> Scores:
    """Loss, BLEU and exact match of the split ``pairs`` from the parts of its shards:
    ``parts[r]`` holds ``pairs[r::len(parts)]`` (one part: the whole split). BLEU is a corpus
    statistic, so it is computed here, over every hypothesis, never averaged over shards."""
    hypotheses: list[list[str]] = [[] for _ in pairs]
    for rank, part in enumerate(parts):
        hypotheses[rank :: len(parts)] = part.hypotheses
    references = [list(p.tgt) for p in pairs]
    scored = bleu_inputs(hypotheses, pairs, tgt_vocab.subwords)
    return Scores(
        loss=sum(p.loss_sum for p in parts) / max(sum(p.tokens for p in parts), 1),
        bleu=scored.bleu(scored.hypotheses, scored.references).score,
        exact_match=metrics.exact_match(hypotheses, references),
        bleu_tokenize=scored.tokenize,
        beam_size=beam_size,
    )


class SplitEvaluation(NamedTuple):
    """:func:`evaluate`'s result: the scores and the hypotheses they were computed from."""

    scores: Scores
    hypotheses: list[list[str]]  # (N,) output tokens of each pair of the split, in its order


def evaluate(
    model: Network,
    dataset: ParallelDataset,
    tgt_vocab: Vocab,
    *,
    batch_size: int,
    device: torch.device,
    beam_size: int = 1,
    full: bool = True,
    select_head_on: tuple[str, ParallelDataset] | None = None,
    progress: bool = False,
) -> SplitEvaluation:
    """The :class:`Scores` of ``model`` on ``dataset``: quick (loss, BLEU, exact match; what
    validation needs) or ``full`` (plus chrF, token accuracy, BLEU by source length, the BLEU
    signature and, when the model has attention and every pair a gold alignment, the
    :class:`AlignmentScores` with the alignment error report).

    The best head is picked on ``select_head_on`` = (name, split) — pass
    ``("valid", valid_set)`` when scoring test, so the reported head is not chosen on test —
    and reported on ``dataset``; ``best_head_split`` names the split it was picked on
    (``"same"``: ``dataset`` itself, used without ``select_head_on`` or when that split
    has no gold links). ``hypotheses``: the output tokens the scores were computed from
    (``scripts/evaluate.py`` lists the misses). ``progress``: a progress bar while decoding (see
    :func:`translate_dataset`).
    """
    part = decode_shard(
        model, dataset, tgt_vocab, batch_size=batch_size, device=device, beam_size=beam_size,
        progress=progress,
    )  # fmt: skip
    if not full:
        return SplitEvaluation(
            split_scores([part], dataset.pairs, tgt_vocab, beam_size), part.hypotheses
        )
    scores = full_scores(
        model, dataset, tgt_vocab, part, batch_size=batch_size, device=device,
        beam_size=beam_size, select_head_on=select_head_on,
    )  # fmt: skip
    return SplitEvaluation(scores, part.hypotheses)


def full_scores(
    model: Network,
    dataset: ParallelDataset,
    tgt_vocab: Vocab,
    part: DecodedShard,
    *,
    batch_size: int,
    device: torch.device,
    beam_size: int = 1,
    select_head_on: tuple[str, ParallelDataset] | None = None,
) -> Scores:
    """The full :class:`Scores` of :func:`evaluate` from ``part``, the :func:`decode_shard` of
    the whole of ``dataset`` (decoded with ``beam_size``)."""
    quick = split_scores([part], dataset.pairs, tgt_vocab, beam_size)
    hypotheses, references = part.hypotheses, [list(p.tgt) for p in dataset.pairs]
    scored = bleu_inputs(hypotheses, dataset.pairs, tgt_vocab.subwords)
    bleu = scored.bleu(scored.hypotheses, scored.references)
    src_lengths = [len(p.src) for p in dataset.pairs]
    alignment = None
    if model.attention.has_weights and _has_gold(dataset):
        alignment = _alignment_scores(model, dataset, batch_size, device, select_head_on)
    return replace(
        quick,
        chrf=scored.chrf(scored.hypotheses, scored.references).score,
        token_accuracy=metrics.token_accuracy(hypotheses, references),
        bleu_by_length=metrics.bleu_by_length(
            scored.hypotheses, scored.references, src_lengths, score=scored.bleu
        ),
        bucket_sizes={k: len(v) for k, v in metrics.bucket_indices(src_lengths).items()},
        bleu_signature=bleu.signature,
        alignment=alignment,
    )


def _alignment_scores(
    model: Network,
    dataset: ParallelDataset,
    batch_size: int,
    device: torch.device,
    select_head_on: tuple[str, ParallelDataset] | None,
) -> AlignmentScores:
    head, head_split = None, "same"
    if select_head_on is not None:
        name, selection = select_head_on
        if selection.pairs and _has_gold(selection):
            chosen = attention_scores(model, selection, batch_size=batch_size, device=device)
            head, head_split = int(chosen["best_head"]), name
    collected = gold_attention(model, dataset, batch_size=batch_size, device=device)
    scores = collected.scores(head)
    return AlignmentScores(
        aer=float(scores["aer"]),
        aer_sure_only=float(scores["aer_sure_only"]),
        aer_best_head=float(scores["aer_best_head"]),
        best_head=int(scores["best_head"]),
        best_head_split=head_split,
        aer_per_head=[float(x) for x in scores["aer_per_head"]],  # type: ignore[union-attr]
        attention_entropy=float(scores["entropy"]),
        alignment_report=collected.report(),
    )


def _has_gold(dataset: ParallelDataset) -> bool:
    return all(p.alignment is not None for p in dataset.pairs)
