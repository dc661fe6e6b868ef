"""Attributions of each output word to the source words, as maps of the attention's shape.

Attention shows where the model looks; an attribution measures how much each source word
moved what it said. For target position ``t`` the output is the log-probability of the
reference word, ``log p(y_t | y_<t, x)`` under teacher forcing, and its attribution to the
source embeddings (B, T_s, E) comes from Captum, the PyTorch project's attribution library:

* ``grad_x_input`` — gradient × input (``captum.attr.LayerGradientXActivation`` on the source
  embedding layer; Ding, Xu & Koehn 2019 align words this way);
* ``integrated_gradients`` — ``captum.attr.LayerIntegratedGradients`` from the all-zero
  embedding (the ``<pad>`` row) to the sentence's, ``steps`` Gauss–Legendre points; Captum's
  convergence delta (how far the attributions' sum is from the change of the output) comes
  with it.

Each source word's attribution vector is reduced to one score by its L2 norm over the
embedding dimensions (the size of its contribution whatever its sign: a signed sum can cancel
across dimensions), so a map row is non-negative and scored like an attention row: the
argmax over ``source + <eos>`` per target word, against the gold links
(:func:`seq2seq.evaluation.metrics.alignment_scores`); :func:`row_shares` makes each row sum
to 1, to be drawn on attention's scale. The ``none`` baseline has attribution maps too: where
a model without attention "looks".

:func:`shift_att` is Chen et al. (2020)'s Shift-Att for the Transformer: the cross-attention
of the step where ``y_t`` is the decoder's *input* (the next row) aligns ``y_t`` better than
the row that predicts it.

Every target position of every sentence is one example for Captum (the sentence repeated,
its output index ``t``), so one call attributes a whole batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from captum.attr import LayerGradientXActivation, LayerIntegratedGradients
from torch import Tensor, nn

from seq2seq.data.batching import Batch
from seq2seq.data.vocab import Vocab
from seq2seq.model.networks import Network

#: The attribution methods, in table order.
ATTRIBUTIONS = ("grad_x_input", "integrated_gradients")
#: Integrated gradients' default number of steps (Gauss–Legendre points).
IG_STEPS = 16
#: Examples (sentence, target position) per Captum call: bounds the memory of one call.
ROWS_PER_CALL = 256


def reference_log_probs(
    model: Network, src: Tensor, src_lengths: Tensor, src_mask: Tensor, tgt_in: Tensor,
    tgt_out: Tensor,
) -> Tensor:  # fmt: skip
    """log p(y_t | y_<t, x) of every reference token, teacher-forced: (N, T_t)."""
    logits, _ = model(src, src_lengths, src_mask, tgt_in)
    return logits.log_softmax(-1).gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)


@dataclass(frozen=True)
class Rows:
    """The examples of a batch: one per (sentence, real target position), in order."""

    sentence: Tensor  # (N,) the sentence of each example
    position: Tensor  # (N,) its target position t

    @classmethod
    def of(cls, batch: Batch) -> Rows:
        sentence, position = batch.tgt_mask.nonzero(as_tuple=True)
        return cls(sentence, position)

    def chunks(self, size: int) -> Iterator[Rows]:
        for start in range(0, len(self.sentence), size):
            yield Rows(self.sentence[start : start + size], self.position[start : start + size])


def _source_layer(model: Network) -> nn.Module:
    """The source embedding layer, whose output the attributions are of."""
    return model.encoder.embedding


def attribute(
    model: Network, batch: Batch, rows: Rows, method: str, *, steps: int = IG_STEPS
) -> tuple[Tensor, Tensor | None]:
    """Captum's attribution of each example's output to the source embeddings: (n, T_s, E)
    vectors, and for ``integrated_gradients`` the convergence delta of each example (n,)."""
    picked = rows.sentence
    inputs = batch.src[picked]
    extra = (
        batch.src_lengths[picked.cpu()], batch.src_mask[picked], batch.tgt_in[picked],
        batch.tgt_out[picked],
    )  # fmt: skip
    target = rows.position.tolist()

    def forward(src: Tensor, lengths: Tensor, mask: Tensor, tgt_in: Tensor, tgt_out: Tensor):
        return reference_log_probs(model, src, lengths, mask, tgt_in, tgt_out)

    layer = _source_layer(model)
    with torch.enable_grad():
        if method == "grad_x_input":
            vectors = LayerGradientXActivation(forward, layer).attribute(
                inputs, target=target, additional_forward_args=extra
            )
            return vectors.detach(), None
        if method == "integrated_gradients":
            vectors, delta = LayerIntegratedGradients(forward, layer).attribute(
                inputs,
                baselines=torch.full_like(inputs, Vocab.pad_id),  # the zero embedding
                target=target,
                additional_forward_args=extra,
                n_steps=steps,
                internal_batch_size=ROWS_PER_CALL,
                return_convergence_delta=True,
            )
            return vectors.detach(), delta.detach()
    raise ValueError(f"unknown attribution {method!r}; use {ATTRIBUTIONS}")


def attribution_maps(
    model: Network, batch: Batch, method: str, *, steps: int = IG_STEPS
) -> tuple[Tensor, Tensor | None]:
    """The ``method`` map of every target word of ``batch`` to its source words:
    (B, T_t, T_s), zeros at padding; and for ``integrated_gradients`` Captum's convergence
    delta of every example, (N,) in :class:`Rows` order (None for ``grad_x_input``)."""
    was_training = model.training
    model.eval()
    maps = torch.zeros(*batch.tgt_out.shape, batch.src.size(1), device=batch.src.device)
    deltas = []
    try:
        for rows in Rows.of(batch).chunks(ROWS_PER_CALL):
            vectors, delta = attribute(model, batch, rows, method, steps=steps)
            scores = vectors.norm(dim=-1) * batch.src_mask[rows.sentence]  # (n, T_s)
            maps[rows.sentence, rows.position] = scores
            if delta is not None:
                deltas.append(delta)
    finally:
        model.train(was_training)
    return maps, torch.cat(deltas) if deltas else None


def row_shares(maps: Tensor) -> Tensor:
    """Each row of ``maps`` (..., T_t, T_s) divided by its sum: the share of a target word's
    attribution that each source word holds, a row that sums to 1 like an attention row (and
    has the same argmax, so the same AER); an all-zero row (padding) stays all zero."""
    return maps / maps.sum(-1, keepdim=True).clamp_min(torch.finfo(maps.dtype).tiny)


def shift_att(weights: Tensor) -> Tensor:
    """Chen et al. (2020)'s Shift-Att: weights (..., T_t, T_s) of the steps predicting
    ``y_0 … y_{T_t-1}`` -> the map whose row ``t`` is the row of the step that *reads*
    ``y_t`` (row ``t + 1``); the last row (``<eos>``, read by no step) is zero."""
    shifted = torch.zeros_like(weights)
    shifted[..., :-1, :] = weights[..., 1:, :]
    return shifted
