"""The fast path of the Bahdanau decoder's teacher forcing: its step loop as one autograd node
with a hand-written backward (``model.recurrence=fused``, the default).

The textbook path is :meth:`seq2seq.model.decoder.BahdanauDecoder.step` in a loop under
autograd: the attention of :mod:`seq2seq.model.attention` as the article writes it, then the
GRU cell. This package computes the same recurrence faster on a CPU, and everything it needs
lives here, never in the textbook classes:

* :mod:`.recurrence` — the node (:class:`~.recurrence.FusedBahdanauRecurrence`), forward and
  backward, with the step's maths and each derivative beside its line;
* :mod:`.scorers` — each mechanism's scores from the previous state, and their gradients;
* :mod:`.mixers` — how the context enters the GRU's gates straight from the weights;
* :mod:`.tanh` — the two forms of additive attention's tanh (``model.tanh``).

:class:`FusedRecurrence` is the one entry the decoder calls. ``tests/test_fused_recurrence.py``
holds the two paths equal for every attention (values, weights and every gradient), and
gradcheck holds the hand-written backward exact.
"""

from __future__ import annotations

from torch import Tensor

from seq2seq.choices import TanhForm
from seq2seq.model.attention import Attention, Memory
from seq2seq.model.fused.mixers import context_mixer, mixer_tensors
from seq2seq.model.fused.recurrence import FusedBahdanauRecurrence
from seq2seq.model.fused.scorers import COVERED, fused_scorer

__all__ = ["FusedRecurrence"]


class FusedRecurrence:
    """The Bahdanau recurrence of a decoder whose additive energies compute tanh in the
    ``tanh`` form (:attr:`seq2seq.model.spec.ModelSpec.tanh`)."""

    def __init__(self, tanh: str) -> None:
        self.tanh = TanhForm(tanh)

    @staticmethod
    def covers(attention: Attention) -> bool:
        """Whether ``attention`` has a fused scorer (every mechanism with weights does)."""
        return isinstance(attention, COVERED)

    def __call__(
        self,
        input_gates: Tensor,
        state: Tensor,
        memory: Memory,
        attention: Attention,
        context_weight: Tensor,
        weight_hh: Tensor,
        bias_hh: Tensor,
    ) -> tuple[Tensor, Tensor]:
        """Every teacher-forced step at once.

        input_gates (B, T_t, 3H): ``W_ih^e e(y_{t-1}) + b_ih`` of every step; state (B, H);
        context_weight (3H, D_k): the context's half of the GRU's ``W_ih``; weight_hh (3H, H),
        bias_hh (3H,) -> states (B, T_t, H), weights (B, heads, T_t, T_s).
        """
        scorer = fused_scorer(attention, memory, self.tanh)
        if scorer is None:
            raise TypeError(f"{type(attention).__name__} has no fused recurrence")
        scorer_class, scorer_inputs = scorer
        mixer, bias_gates = context_mixer(attention, memory, context_weight)  # per batch
        if bias_gates is not None:
            input_gates = input_gates + bias_gates.unsqueeze(1)
        mixer_inputs = mixer_tensors(mixer)
        states, flat_weights = FusedBahdanauRecurrence.apply(
            input_gates, state, memory.mask, weight_hh, bias_hh, type(mixer), scorer_class,
            len(mixer_inputs), *mixer_inputs, *scorer_inputs,
        )  # fmt: skip
        batch, steps = flat_weights.shape[:2]
        weights = flat_weights.view(batch, steps, attention.num_heads, -1).transpose(1, 2)
        return states, weights
