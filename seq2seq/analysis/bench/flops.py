"""Counting the matrix-multiply FLOPs of one training batch, per part of the model, so measured
throughput can be set against the machine's GEMM rate (see :func:`flop_breakdown`).

:func:`flop_counter_total` is the independent cross-check: PyTorch's
``torch.utils.flop_counter.FlopCounterMode`` counts the matrix products one training step
actually dispatches (``mm``, ``addmm``, ``bmm``, ``baddbmm``, convolutions, attention kernels;
``2·m·k·n`` each, as here). Neither count includes element-wise work (GRU gates, tanh,
softmax, masking), embedding look-ups, the loss or the optimizer. Where they differ:

- FlopCounterMode counts what the implementation runs, this module the model's equations.
  The trainer's reformulations (projecting the values into the GRU gates once per batch and
  mixing those per step, besides the context for the output layer) move the executed count
  either way by a few percent; the reference's repeated work (re-projecting the keys every
  step) makes it much larger (ratio about 0.7 at the tiny sizes).
- Matrix-vector products (``mv``, ``dot``; e.g. additive attention's ``v_a`` applied to a
  (B, T_s, A) tensor by ``@``) are not counted by FlopCounterMode; they are counted here.
- Backward: FlopCounterMode counts the products backward actually runs; :func:`train_flops`
  takes 3 × forward, so it also counts the gradients autograd skips because nothing needs
  them (toward the encoder's zero initial state: about 0.3% at the tiny sizes).
- The fused Bahdanau recurrence (``seq2seq.model.fused``) runs its forward under
  ``no_grad`` and its backward by hand; FlopCounterMode is a dispatch mode, so it sees those
  products too (measured: the fused and the autograd loop count within 1% of each other),
  and the cross-check runs the model as it trains, fused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch.utils.flop_counter import FlopCounterMode

from seq2seq.model import ModelSpec
from seq2seq.model.attention import has_weights


@dataclass(frozen=True)
class BatchShape:
    """The shapes one training batch runs at.

    batch:      sentence pairs, B
    src_len:    source positions attention runs over (the padded source length), S
    tgt_len:    decoder steps (the padded target length), T
    src_tokens: encoder GRU steps summed over the batch: the real source tokens when the
                encoder packs its input, ``B · S`` when it runs over padding
    """

    batch: int
    src_len: int
    tgt_len: int
    src_tokens: int

    @classmethod
    def of(cls, src_lengths: Sequence[int], tgt_lengths: Sequence[int]) -> BatchShape:
        """The shape the trainer runs pairs of these lengths (with ``<eos>``) at: padded to the
        longest of each side, the encoder over the padded batch (``src_tokens = B · S``, as
        :class:`seq2seq.model.encoder.Encoder` runs each direction)."""
        batch, src_len = len(src_lengths), max(src_lengths)
        return cls(batch, src_len, max(tgt_lengths), batch * src_len)


def flop_breakdown(spec: ModelSpec, shape: BatchShape) -> dict[str, int]:
    """Forward matrix-multiply FLOPs of one batch, per part of the model.

    A product of (m×k) by (k×n) counts ``2·m·k·n``; element-wise work (gates, tanh, softmax),
    embedding look-ups and the loss are not counted. With E = embed, H = hidden, D =
    directions, K = D·H (key size), A = additive attention size, V = target vocabulary and
    the shape's B, S, T and N = ``src_tokens``:

    - encoder: ``N · D · Σ_layers (2·in·3H + 2·H·3H)``, ``in`` = E for the first layer, K after
    - bridge: ``B · 2·K·H``
    - attention, once per batch plus per decoder step (``B·T`` steps):
        none: 0;
        additive: ``B·S·2·K·A`` (U_a k) + per step ``2·H·A + 2·S·A + 2·S·K``
        (W_a s, v_a, weighted sum);
        dot: per step ``2·H·K`` (query projection, only when H ≠ K) ``+ 2·S·K + 2·S·K``;
        multihead: ``2 · B·S·2·K·K`` (key and value projections) + per step
        ``2·H·K + 2·S·K + 2·S·K + 2·K·K`` (query, scores, weighted sum, output layer)
    - decoder_gru: per step ``2·(E+K)·3H + 2·H·3H`` (input and hidden projections); the
      Luong decoder's GRU reads the word only: ``2·E·3H + 2·H·3H`` (attention none always
      feeds its fixed context, see :func:`seq2seq.model.decoder.build_decoder`)
    - readout: per step ``2·(H+K+E)·H + 2·H·V``

    These are the FLOPs of the model's equations at these shapes, not of one implementation:
    the trainer's algebraic short-cuts (e.g. projecting the values into the GRU gates once
    per batch) and the reference's repeated work (re-projecting keys every step) are not
    counted as such, so two implementations at the same shapes count the same. What does
    differ is the shapes: the trainer packs the encoder and pads each batch to its own
    longest pair, the reference pads everything to the corpus maximum.
    """
    if spec.kind == "transformer":
        return transformer_flop_breakdown(spec, shape)
    e, h, v = spec.embed_size, spec.hidden_size, spec.tgt_vocab_size
    directions = 2 if spec.bidirectional else 1
    k = directions * h
    a = spec.attention_hidden_size or h
    b, s, steps = shape.batch, shape.src_len, shape.batch * shape.tgt_len
    layer_inputs = [e] + [k] * (spec.encoder_layers - 1)
    gru_context = 0 if spec.decoder == "luong" and has_weights(spec.attention) else k
    encoder = (
        shape.src_tokens * directions * sum(2 * n * 3 * h + 2 * h * 3 * h for n in layer_inputs)
    )
    if spec.attention == "none":
        attention = 0
    elif spec.attention == "additive":
        attention = b * s * 2 * k * a + steps * (2 * h * a + 2 * s * a + 2 * s * k)
    elif spec.attention == "dot":
        attention = steps * ((2 * h * k if h != k else 0) + 4 * s * k)
    elif spec.attention == "multihead":
        attention = 2 * b * s * 2 * k * k + steps * (2 * h * k + 4 * s * k + 2 * k * k)
    else:
        raise ValueError(f"unknown attention {spec.attention!r}")
    return {
        "encoder": encoder,
        "bridge": b * 2 * k * h,
        "attention": attention,
        "decoder_gru": steps * (2 * (e + gru_context) * 3 * h + 2 * h * 3 * h),
        "readout": steps * (2 * (h + k + e) * h + 2 * h * v),
    }


def transformer_flop_breakdown(spec: ModelSpec, shape: BatchShape) -> dict[str, int]:
    """Forward matrix-multiply FLOPs of one batch of the Transformer, per part, counted as
    :func:`flop_breakdown` counts (``2·m·k·n`` a product). With D = model size, F = the
    feed-forward size, V = target vocabulary, per sentence S source and T target positions:

    - encoder, per layer: ``B·S·(4·2·D·D + 2·2·S·D + 2·2·D·F)`` (Q, K, V and output
      projections; scores and weighted sum over all heads; the feed-forward block)
    - decoder self-attention, per layer: ``B·T·(4·2·D·D + 2·2·T·D)``
    - cross-attention, per layer: ``B·S·2·2·D·D`` (keys, values of the memory, once) +
      ``B·T·(2·2·D·D + 2·2·S·D)`` (queries, output; scores and weighted sum)
    - decoder feed-forward, per layer: ``B·T·2·2·D·F``; readout ``B·T·2·D·V``
    """
    d, f, v = spec.hidden_size, spec.ff_size, spec.tgt_vocab_size
    b, s, t = shape.batch, shape.src_len, shape.tgt_len
    return {
        "encoder": spec.encoder_layers * b * s * (8 * d * d + 4 * s * d + 4 * d * f),
        "decoder_self_attention": spec.decoder_layers * b * t * (8 * d * d + 4 * t * d),
        "cross_attention": spec.decoder_layers
        * (b * s * 4 * d * d + b * t * (4 * d * d + 4 * s * d)),
        "decoder_feed_forward": spec.decoder_layers * b * t * 4 * d * f,
        "readout": b * t * 2 * d * v,
    }


def forward_flops(spec: ModelSpec, shape: BatchShape) -> int:
    """Forward matmul FLOPs of one batch (the sum of :func:`flop_breakdown`)."""
    return sum(flop_breakdown(spec, shape).values())


def train_flops(spec: ModelSpec, shape: BatchShape) -> int:
    """FLOPs of one training step: forward + backward ≈ 3 × forward (backward computes the
    gradients of both the inputs and the weights of every product, two products each)."""
    return 3 * forward_flops(spec, shape)


def flop_counter_total(step: Callable[[], object]) -> int:
    """Matrix-product FLOPs PyTorch's ``FlopCounterMode`` sees while ``step`` runs (one training
    step: forward and backward), for the cross-check of the module docstring."""
    with FlopCounterMode(display=False) as counter:
        step()
    return int(counter.get_total_flops())
