"""Batched greedy and beam-search decoding; both stop at ``<eos>`` and return attention.

Each sentence of a batch is decoded independently of the others (its own length limit, its
own beams), so a sentence gives the same output alone and inside a padded batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.data.vocab import Vocab
from seq2seq.model.attention import Memory
from seq2seq.model.decoder import rule_out_never_emitted
from seq2seq.model.networks import Network


@dataclass
class Hypotheses:
    """Decoded output of a batch.

    tokens:  (B, T) ids, each row ending with ``<eos>`` (if it stopped) then ``<pad>``
    lengths: (B,)   tokens up to and including ``<eos>``
    weights: (B, heads, T, T_s) attention of each emitted token, or None without attention
    scores:  (B,)   total log-probability (beam: as ranked, with the length penalty)
    """

    tokens: Tensor
    lengths: Tensor
    weights: Tensor | None
    scores: Tensor


def length_limits(src_lengths: Tensor, ratio: float = 2.0, extra: int = 10) -> Tensor:
    """Per-sentence maximum output length: ``ratio · source length + extra``, (B,)."""
    return (src_lengths.float() * ratio).long() + extra


def output_limits(model: Network, src_lengths: Tensor, max_lengths: Tensor | None) -> Tensor:
    """(B,) the most tokens each sentence may emit: ``max_lengths`` or :func:`length_limits`,
    never past what the model can emit (a Transformer's position table)."""
    limits = max_lengths if max_lengths is not None else length_limits(src_lengths)
    if model.max_output_length is not None:
        limits = limits.clamp(max=model.max_output_length)
    return limits


def _reorder(memory: Memory, order: Tensor) -> Memory:
    """Select rows ``order`` (N,) of every tensor of the memory."""
    return Memory(*(None if t is None else t.index_select(0, order) for t in memory))


@torch.no_grad()
def greedy_decode(
    model: Network,
    src: Tensor,
    src_lengths: Tensor,
    src_mask: Tensor,
    max_lengths: Tensor | None = None,
) -> Hypotheses:
    """Pick the most probable token at every step until each sentence emits ``<eos>``.

    src (B, T_s), src_lengths (B,), src_mask (B, T_s); max_lengths (B,) defaults to
    :func:`length_limits`.
    """
    model.eval()
    memory, state = model.encode(src, src_lengths, src_mask)
    batch = src.size(0)
    device = src.device
    limits = output_limits(model, src_lengths, max_lengths).to(device)
    prev = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    scores = torch.zeros(batch, device=device)
    tokens, weights = [], []
    for t in range(int(limits.max())):
        logits, state, step_weights = model.decoder.step(prev, state, memory)
        log_probs = rule_out_never_emitted(logits.log_softmax(-1))
        best_ids = log_probs.argmax(-1)
        # At its length limit a sentence must end: emit <eos> and score <eos>, not the
        # token it replaces, so the score is the log-probability of the returned tokens.
        best_ids = torch.where(~finished & (limits == t + 1), Vocab.eos_id, best_ids)
        best_ids = best_ids.masked_fill(finished, Vocab.pad_id)
        chosen = log_probs.gather(1, best_ids.unsqueeze(1)).squeeze(1)
        scores += chosen.masked_fill(finished, 0.0)
        tokens.append(best_ids)
        if step_weights is not None:
            weights.append(step_weights.masked_fill(finished[:, None, None], 0.0))
        finished |= best_ids == Vocab.eos_id
        if bool(finished.all()):
            break
        prev = best_ids
    token_matrix = torch.stack(tokens, dim=1)
    lengths = (token_matrix != Vocab.pad_id).sum(1)
    return Hypotheses(
        token_matrix, lengths, torch.stack(weights, dim=2) if weights else None, scores
    )


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT's ``((5 + |Y|) / 6) ** alpha``; alpha = 0 disables it."""
    return ((5.0 + lengths.float()) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Network,
    src: Tensor,
    src_lengths: Tensor,
    src_mask: Tensor,
    beam_size: int = 5,
    alpha: float = 0.6,
    max_lengths: Tensor | None = None,
) -> Hypotheses:
    """Keep the ``beam_size`` best prefixes per sentence; return the best finished one.

    Candidates are ranked by log-probability divided by :func:`length_penalty`; a finished
    hypothesis keeps its score and competes with the live ones until every beam has finished
    or the sentence's length limit is reached.
    """
    model.eval()
    batch, device, k = src.size(0), src.device, beam_size
    memory, state = model.encode(src, src_lengths, src_mask)
    flat = torch.arange(batch, device=device).repeat_interleave(k)  # (B·K,) sentence of each beam
    memory, state = _reorder(memory, flat), state.index_select(0, flat)
    limits = output_limits(model, src_lengths, max_lengths).to(device)
    limits = limits.index_select(0, flat).view(batch, k)

    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: keep one
    lengths = torch.zeros(batch, k, dtype=torch.long, device=device)
    finished = torch.zeros(batch, k, dtype=torch.bool, device=device)
    prev = torch.full((batch * k,), Vocab.bos_id, dtype=torch.long, device=device)
    history = torch.zeros(batch, k, 0, dtype=torch.long, device=device)
    weight_history: Tensor | None = None
    offsets = (torch.arange(batch, device=device) * k).unsqueeze(1)  # (B, 1)
    vocab_size = model.spec.tgt_vocab_size
    not_eos = torch.arange(vocab_size, device=device) != Vocab.eos_id  # (V,)
    pad_only = torch.full((vocab_size,), float("-inf"), device=device)
    pad_only[Vocab.pad_id] = 0.0

    for t in range(int(limits.max())):
        logits, state, step_weights = model.decoder.step(prev, state, memory)
        log_probs = rule_out_never_emitted(logits.log_softmax(-1)).view(batch, k, -1)  # (B, K, V)
        # A beam at its length limit may only end; a finished one extends with <pad> at 0 cost.
        at_limit = ((limits == t + 1) & ~finished).unsqueeze(-1)  # (B, K, 1)
        log_probs = log_probs.masked_fill(at_limit & not_eos, float("-inf"))
        log_probs = torch.where(finished.unsqueeze(-1), pad_only, log_probs)
        candidates = scores.unsqueeze(-1) + log_probs  # (B, K, V)
        new_lengths = (lengths + (~finished).long()).unsqueeze(-1).expand(-1, -1, vocab_size)
        ranked = candidates / length_penalty(new_lengths, alpha)
        _, best = ranked.flatten(1).topk(k, dim=1)  # (B, K)
        origin, token = best // vocab_size, best % vocab_size
        scores = candidates.flatten(1).gather(1, best)
        lengths = new_lengths.flatten(1).gather(1, best)
        finished = finished.gather(1, origin) | (token == Vocab.eos_id)
        rows = (offsets + origin).flatten()  # (B·K,) flat beam each new beam comes from
        state = state.index_select(0, rows)
        history = torch.cat(
            [history.gather(1, origin.unsqueeze(-1).expand_as(history)), token.unsqueeze(-1)], 2
        )
        if step_weights is not None:
            step_weights = step_weights.index_select(0, rows).view(
                batch, k, 1, *step_weights.shape[1:]
            )
            if weight_history is None:
                weight_history = step_weights
            else:
                index = origin.view(batch, k, 1, 1, 1).expand(-1, -1, *weight_history.shape[2:])
                weight_history = torch.cat([weight_history.gather(1, index), step_weights], dim=2)
        if bool(finished.all()):
            break
        prev = token.flatten()

    final = scores / length_penalty(lengths, alpha)
    best_beam = final.argmax(dim=1)  # (B,)
    pick = torch.arange(batch, device=device)
    tokens = history[pick, best_beam]  # (B, T)
    best_lengths = lengths[pick, best_beam]
    positions = torch.arange(tokens.size(1), device=device)
    tokens = tokens.masked_fill(positions >= best_lengths.unsqueeze(1), Vocab.pad_id)
    weights = None
    if weight_history is not None:
        weights = weight_history[pick, best_beam]  # (B, T, heads, T_s)
        weights = weights.masked_fill(
            (positions >= best_lengths.unsqueeze(1))[:, :, None, None], 0.0
        )
        weights = weights.transpose(1, 2)  # (B, heads, T, T_s)
    return Hypotheses(tokens, best_lengths, weights, final[pick, best_beam])


def decode(
    model: Network,
    src: Tensor,
    src_lengths: Tensor,
    src_mask: Tensor,
    beam_size: int = 1,
    alpha: float = 0.6,
) -> Hypotheses:
    """Greedy for ``beam_size == 1``, else beam search."""
    if beam_size <= 1:
        return greedy_decode(model, src, src_lengths, src_mask)
    return beam_search(model, src, src_lengths, src_mask, beam_size, alpha)
