"""Interventions on attention at inference: replace where the model looks and see whether what it
says changes (no retraining).

Jain & Wallace (2019) permute or replace attention weights and often see the prediction
unchanged; Wiegreffe & Pinter (2019) answer with a uniform baseline; Michel et al. (2019)
drop heads one at a time. Each :class:`Intervention` replaces the weights a mechanism computed
(:meth:`~seq2seq.model.attention.Attention.weights`) before the context is read from them
(:meth:`~seq2seq.model.attention.Attention.read`):

* ``uniform`` — every real source position ``1/T_s`` (padding stays exactly 0);
* ``shuffle`` — each row's weights permuted among its real positions (seeded): the same
  multiset of weights, on other words;
* ``argmax`` — one-hot at the row's maximum: hard attention;
* ``gold`` — target word ``j``'s row uniform over its gold links (sure ones, else possible
  ones); rows without links (unaligned words, ``<eos>``) keep the model's own. Gold links
  exist along the reference only, so it is teacher-forced only;
* ``head:H`` (multi-head GRU) or ``head:L.H`` (Transformer decoder layer ``L``) — that one
  head's row uniform, the others the model's own.

``uniform``, ``shuffle``, ``argmax`` and ``gold`` act on every head, and on the Transformer on
every decoder layer's cross-attention. While an intervention is active the GRU decoder runs
its textbook recurrence (the fused one computes its own weights). :func:`intervention_scores`
reports what each does to a split: free-running BLEU and exact match (greedy; not for
``gold``), teacher-forced loss and token accuracy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from seq2seq.data.batching import ParallelDataset, gold_distribution
from seq2seq.data.vocab import Vocab
from seq2seq.errors import UserError
from seq2seq.evaluation.scores import InterventionScores
from seq2seq.model.attention import Attention, Memory
from seq2seq.model.networks import Network
from seq2seq.model.spec import ModelSpec
from seq2seq.model.transformer import Transformer

#: The rules that act on every head (and every Transformer layer).
RULES = ("uniform", "shuffle", "argmax", "gold")
#: What ``--intervention`` accepts, for messages.
SYNTAX = "uniform, shuffle, argmax, gold, head:H (multi-head GRU) or head:L.H (Transformer)"
_HEAD = re.compile(r"head:(?:(\d+)\.)?(\d+)")


@dataclass(frozen=True)
class Intervention:
    """One replacement of the attention weights; ``layer`` and ``head`` for a head ablation."""

    rule: str  # one of RULES, or "head"
    head: int | None = None
    layer: int | None = None  # a Transformer decoder layer (head ablation only)
    seed: int = 0  # shuffle's generator

    @classmethod
    def parse(cls, text: str, seed: int = 0) -> Intervention:
        """``uniform`` ... ``head:2``, ``head:1.3``; anything else is a one-line UserError."""
        if text in RULES:
            return cls(text, seed=seed)
        match = _HEAD.fullmatch(text)
        if match is None:
            raise UserError(f"unknown intervention {text!r}; use {SYNTAX}")
        layer, head = match.groups()
        return cls("head", head=int(head), layer=None if layer is None else int(layer))

    @property
    def name(self) -> str:
        if self.rule != "head":
            return self.rule
        return f"head:{self.head}" if self.layer is None else f"head:{self.layer}.{self.head}"

    @property
    def free_running(self) -> bool:
        """Whether it can steer a free-running decode (gold exists along the reference only)."""
        return self.rule != "gold"

    def check(self, spec: ModelSpec) -> None:
        """Refuse, in one line, an intervention the model ``spec`` describes cannot take."""
        if spec.attention == "none":
            raise UserError(
                f"intervention {self.name}: attention=none has no attention weights to replace"
            )
        if self.rule != "head":
            return
        transformer = spec.kind == "transformer"
        if spec.num_heads < 2:
            raise UserError(
                f"intervention {self.name}: the model has one head; head ablation needs "
                "attention=multihead or the Transformer"
            )
        if transformer and self.layer is None:
            raise UserError(
                f"intervention {self.name}: name the Transformer's decoder layer too, as "
                f"head:L.H with L from 0 to {spec.decoder_layers - 1}"
            )
        if not transformer and self.layer is not None:
            raise UserError(f"intervention {self.name}: the GRU has one attention; use head:H")
        if self.layer is not None and not 0 <= self.layer < spec.decoder_layers:
            raise UserError(
                f"intervention {self.name}: layer {self.layer} does not exist; use 0 to "
                f"{spec.decoder_layers - 1}"
            )
        if not 0 <= (self.head or 0) < spec.num_heads:
            raise UserError(
                f"intervention {self.name}: head {self.head} does not exist; use 0 to "
                f"{spec.num_heads - 1}"
            )

    def replace(
        self, weights: Tensor, mask: Tensor, gold: Tensor | None, generator: torch.Generator
    ) -> Tensor:
        """weights (B, h, T_q, T_s) with the mask (B, T_s) -> the replaced weights; ``gold``
        (B, T_q, T_s): the gold rows of these queries (``gold`` only)."""
        real = mask.unsqueeze(1).unsqueeze(1).expand_as(weights)  # (B, h, T_q, T_s)
        if self.rule == "uniform":
            return uniform_weights(real, weights.dtype)
        if self.rule == "shuffle":
            return shuffled_weights(weights, real, generator)
        if self.rule == "argmax":
            return argmax_weights(weights, real)
        if self.rule == "gold":
            assert gold is not None
            linked = gold.sum(-1, keepdim=True) > 0  # (B, T_q, 1)
            return torch.where(linked.unsqueeze(1), gold.unsqueeze(1).to(weights), weights)
        replaced = weights.clone()  # one head
        replaced[:, self.head] = uniform_weights(real[:, self.head], weights.dtype)
        return replaced


def uniform_weights(real: Tensor, dtype: torch.dtype) -> Tensor:
    """``1/T_s`` on every real position of each row, exactly 0 elsewhere: real (..., T_s)."""
    counts = real.sum(-1, keepdim=True).clamp(min=1)
    return real.to(dtype) / counts


def shuffled_weights(weights: Tensor, real: Tensor, generator: torch.Generator) -> Tensor:
    """Each row's weights permuted among its real positions: weights, real (..., T_s).

    Random keys sort each row's real positions first in a random order (``order``); the
    real positions in their own order (``places``) receive them: weight ``order[k]`` goes to
    position ``places[k]``, and past the real count both index padding, whose weight is 0."""
    keys = torch.rand(weights.shape, generator=generator, device=weights.device)
    order = keys.masked_fill(~real, 2.0).argsort(dim=-1)
    positions = torch.arange(weights.size(-1), device=weights.device).expand_as(weights)
    places = positions.masked_fill(~real, weights.size(-1)).argsort(dim=-1)
    return torch.zeros_like(weights).scatter(-1, places, weights.gather(-1, order))


def argmax_weights(weights: Tensor, real: Tensor) -> Tensor:
    """One-hot at each row's largest weight (a row without real positions stays 0)."""
    hot = torch.zeros_like(weights).scatter(-1, weights.argmax(-1, keepdim=True), 1.0)
    return hot * real.any(-1, keepdim=True)


class Intervened(Attention):
    """``inner`` whose weights an :class:`Intervention` replaces before they are read.

    It counts the queries it has answered since :meth:`prepare` (a new batch), so a step-by-step
    decoder gets, at step ``t``, the gold row of target word ``t``."""

    def __init__(
        self, inner: Attention, intervention: Intervention, gold: Tensor | None = None
    ) -> None:
        super().__init__()
        self.inner = inner
        self.intervention = intervention
        self.gold = gold  # (B, T_t, T_s) for ``gold``
        self.num_heads, self.context_size = inner.num_heads, inner.context_size
        self.answered = 0
        self.generator: torch.Generator | None = None

    @classmethod
    def build(cls, query_dim: int, key_dim: int, spec: ModelSpec) -> Attention:
        raise TypeError("an intervention wraps a built mechanism")

    def prepare(self, keys: Tensor, mask: Tensor) -> Memory:
        self.answered = 0
        return self.inner.prepare(keys, mask)

    def weights(self, query: Tensor, memory: Memory) -> Tensor:
        weights = self.inner.weights(query, memory)
        rows = slice(self.answered, self.answered + query.size(1))
        self.answered += query.size(1)
        gold = None if self.gold is None else self.gold[:, rows]
        if self.generator is None:
            self.generator = torch.Generator(device=weights.device)
            self.generator.manual_seed(self.intervention.seed)
        return self.intervention.replace(weights, memory.mask, gold, self.generator)

    def read(self, weights: Tensor, memory: Memory) -> Tensor:
        return self.inner.read(weights, memory)


def _attention_places(model: Network, intervention: Intervention) -> list[tuple[nn.Module, str]]:
    """Where the attention modules to wrap sit: (owner, attribute name)."""
    if isinstance(model, Transformer):
        layers = list(model.decoder.layers)
        if intervention.layer is not None:
            layers = [layers[intervention.layer]]
        return [(layer, "cross_attention") for layer in layers]
    return [(model.decoder, "attention")]


@contextmanager
def intervening(
    model: Network, intervention: Intervention | None, gold: Tensor | None = None
) -> Iterator[None]:
    """Run ``model`` with ``intervention`` (None: as it is) until the block ends; ``gold``
    (B, T_t, T_s): the batch's gold rows, for ``gold``."""
    if intervention is None:
        yield
        return
    intervention.check(model.spec)
    places = _attention_places(model, intervention)
    originals = [getattr(owner, name) for owner, name in places]
    try:
        for (owner, name), inner in zip(places, originals, strict=True):
            setattr(owner, name, Intervened(inner, intervention, gold))
        yield
    finally:
        for (owner, name), inner in zip(places, originals, strict=True):
            setattr(owner, name, inner)


def gold_rows(dataset: ParallelDataset, indices: Sequence[int], steps: tuple[int, int]) -> Tensor:
    """The gold rows of the pairs at ``indices`` (B, T_t, T_s) for ``steps`` = (T_t, T_s):
    uniform over each word's sure links, else its possible ones; refused without links."""
    pairs = [dataset.pairs[i] for i in indices]
    missing = next((i for i, p in zip(indices, pairs, strict=True) if p.alignment is None), None)
    if missing is not None:
        raise UserError(
            f"intervention gold needs gold links, and pair {missing} of the split has none "
            "(only corpora with an alignment column have them)"
        )
    return gold_distribution(pairs, *steps, possible_weight=1.0)


@torch.no_grad()
def teacher_forced_scores(
    model: Network,
    dataset: ParallelDataset,
    intervention: Intervention | None,
    *,
    batch_size: int,
    device: torch.device,
) -> tuple[float, float]:
    """Loss per target token and token accuracy along the reference, under ``intervention``."""
    from seq2seq.evaluation.scoring import eval_batches
    from seq2seq.model.decoder import rule_out_never_emitted

    model.eval()
    loss_sum, correct, tokens = 0.0, 0, 0
    for batch in eval_batches(dataset, batch_size, device):
        gold = None
        if intervention is not None and intervention.rule == "gold":
            steps = (batch.tgt_out.size(1), batch.src.size(1))
            gold = gold_rows(dataset, batch.indices.tolist(), steps).to(device)
        with intervening(model, intervention, gold):
            logits, _ = model(batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in)
        losses = nn.functional.cross_entropy(
            logits.flatten(0, 1), batch.tgt_out.flatten(), reduction="none"
        ).view_as(batch.tgt_out)
        predicted = rule_out_never_emitted(logits.clone()).argmax(-1)
        loss_sum += float(losses[batch.tgt_mask].sum())
        correct += int((predicted == batch.tgt_out)[batch.tgt_mask].sum())
        tokens += int(batch.tgt_mask.sum())
    return loss_sum / max(tokens, 1), correct / max(tokens, 1)


def intervention_scores(
    model: Network,
    dataset: ParallelDataset,
    tgt_vocab: Vocab,
    intervention: Intervention | None,
    *,
    batch_size: int,
    device: torch.device,
) -> InterventionScores:
    """The :class:`InterventionScores` of ``intervention`` (None: the model's own attention)."""
    from seq2seq.evaluation.scoring import decode_shard, split_scores

    loss, accuracy = teacher_forced_scores(
        model, dataset, intervention, batch_size=batch_size, device=device
    )
    name = "none" if intervention is None else intervention.name
    if intervention is not None and not intervention.free_running:
        return InterventionScores(name, loss, accuracy)
    with intervening(model, intervention):
        shard = decode_shard(model, dataset, tgt_vocab, batch_size=batch_size, device=device)
    scores = split_scores([shard], dataset.pairs, tgt_vocab)
    return InterventionScores(name, loss, accuracy, scores.bleu, scores.exact_match)


def every_intervention(spec: ModelSpec) -> list[Intervention]:
    """What ``evaluate.py --explain`` runs for a model: the rules, then each head (each layer's
    for the Transformer); ``gold`` only where the caller has links."""
    found = [Intervention(rule) for rule in RULES]
    if spec.num_heads > 1:
        layers = range(spec.decoder_layers) if spec.kind == "transformer" else [None]
        found += [
            Intervention("head", head=h, layer=layer)
            for layer in layers
            for h in range(spec.num_heads)
        ]
    return found
