"""``extract_attention_weights``: what the model attended to, as NumPy arrays."""

from __future__ import annotations

import numpy as np
import torch

from seq2seq.data.batching import Batch
from seq2seq.errors import UserError
from seq2seq.model.networks import Network
from seq2seq.model.search import greedy_decode
from seq2seq.model.transformer import Transformer

#: ``layer=ALL_LAYERS``: every decoder layer's cross-attention of a Transformer at once.
ALL_LAYERS = "all"


@torch.no_grad()
def extract_attention_weights(
    model: Network,
    batch: Batch,
    *,
    reference: bool = True,
    trim: bool = False,
    layer: int | str | None = None,
) -> np.ndarray | list[np.ndarray]:
    """Attention weights of ``model`` on ``batch`` (eval mode, no gradients).

    reference=True:  teacher forcing on the reference target (``batch.tgt_in``) — the weights
                     alignment scoring needs; rows are the reference words then ``<eos>``.
    reference=False: the model's own greedy output; rows are the emitted tokens.
    Returns (B, heads, T_t, T_s) float32, zeros at padding; with ``trim=True`` a list of
    (heads, t_b, s_b) arrays cut to each sentence's real tokens (``<eos>`` included).
    ``layer`` (a Transformer, teacher forcing): that decoder layer's cross-attention instead
    of the reported one (``model.alignment_layer``; negative counts from the last), or
    :data:`ALL_LAYERS`: every layer's from one pass, (B, L, heads, T_t, T_s) (trimmed: a list
    of (L, heads, t_b, s_b)).
    Raises :class:`UserError` for a model without attention.
    """
    if not model.attention.has_weights:
        raise UserError(
            "this model has no attention (attention=none): there are no weights to extract"
        )
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        batch = batch.to(device)
        if layer is not None:
            if not isinstance(model, Transformer) or not reference:
                raise UserError(
                    "layer= picks a Transformer decoder layer's cross-attention under teacher "
                    "forcing (reference=True); this model has one attention"
                )
            every = model.cross_attention(
                batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in
            )
            weights = every if layer == ALL_LAYERS else every[:, layer]
            tgt_lengths = batch.tgt_mask.sum(1)
        elif reference:
            _, weights = model(
                batch.src, batch.src_lengths, batch.src_mask, batch.tgt_in, keep_weights=True
            )
            tgt_lengths = batch.tgt_mask.sum(1)
        else:
            hypotheses = greedy_decode(model, batch.src, batch.src_lengths, batch.src_mask)
            weights, tgt_lengths = hypotheses.weights, hypotheses.lengths
        assert weights is not None
        rows = _row_mask(tgt_lengths, weights.size(-2))  # (B, T_t)
        weights = weights * rows.view(rows.size(0), *[1] * (weights.dim() - 3), -1, 1)
        array = weights.float().cpu().numpy()
    finally:
        model.train(was_training)
    if not trim:
        return array
    src_lengths = batch.src_lengths.tolist()
    return [array[b, ..., :t, : src_lengths[b]] for b, t in enumerate(tgt_lengths.tolist())]


def _row_mask(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(B, steps) True for the first ``lengths[b]`` rows."""
    return torch.arange(steps, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)
