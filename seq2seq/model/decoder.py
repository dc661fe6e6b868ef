"""The GRU decoder, in which attention is the only moving part, in one of two arrangements
(``model.decoder``):

- ``luong`` (Luong et al. 2015, no input feeding): the GRU reads the target words only and
  attention runs from its new state, so training needs no Python loop over time steps;
- ``bahdanau`` (Bahdanau et al. 2015; the default): attend from the previous state and feed
  the context into the GRU, so the attention steers the recurrence, at the price of a step
  loop; it ends more exact on long sentences (docs/model.md).

Both read state, context and the previous word's embedding in the output layer. (The encoder
is :mod:`seq2seq.model.encoder`.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import Tensor, nn

from seq2seq.choices import DECODER_TYPES, Recurrence
from seq2seq.data.vocab import Vocab
from seq2seq.model.attention import Attention, Memory
from seq2seq.model.fused import FusedRecurrence
from seq2seq.model.shapes import expect
from seq2seq.model.spec import ModelSpec


def gru_cell(input_gates: Tensor, state: Tensor, weight_hh: Tensor, bias_hh: Tensor) -> Tensor:
    """One GRU step, exactly ``nn.GRUCell``'s equations, given ``W_ih x + b_ih`` precomputed.

    input_gates (B, 3H), state (B, H) -> new state (B, H). Splitting the input projection
    out lets the decoder project all target embeddings in one matrix product per batch.
    """
    hidden_gates = torch.addmm(bias_hh, state, weight_hh.t())  # (B, 3H)
    i_r, i_z, i_n = input_gates.chunk(3, dim=1)
    h_r, h_z, h_n = hidden_gates.chunk(3, dim=1)
    reset = torch.sigmoid(i_r + h_r)
    update = torch.sigmoid(i_z + h_z)
    candidate = torch.tanh(i_n + reset * h_n)
    return candidate + update * (state - candidate)  # = (1 - z) n + z h


def rule_out_never_emitted(scores: Tensor) -> Tensor:
    """Set the scores of ``<pad>`` and ``<bos>``, which are never outputs, to -inf in place:
    (..., V) -> the same tensor. Greedy, beam search and scheduled sampling share this rule."""
    scores[..., Vocab.pad_id] = float("-inf")
    scores[..., Vocab.bos_id] = float("-inf")
    return scores


def predicted_tokens(logits: Tensor) -> Tensor:
    """The most probable tokens, as greedy search picks them: (..., V) -> (...)."""
    return rule_out_never_emitted(logits.detach().clone()).argmax(-1)


class Decoder(nn.Module, ABC):
    """What both decoder arrangements share: target embedding, GRU, deep output layer and
    the per-step interface that greedy and beam search drive.

    ``logits_t = W_o tanh(W_p [s_t; c_t; e(y_{t-1})])`` in both; they differ in where the
    context ``c_t`` comes from and whether it enters the recurrence.
    """

    arrangement: str  # "luong" or "bahdanau", as in ``model.decoder``

    def __init__(self, spec: ModelSpec, attention: Attention, rnn_input_size: int) -> None:
        super().__init__()
        self.attention = attention
        self.embedding = nn.Embedding(
            spec.tgt_vocab_size, spec.embed_size, padding_idx=Vocab.pad_id
        )
        self.dropout = nn.Dropout(spec.dropout)
        self.rnn = nn.GRU(rnn_input_size, spec.hidden_size, batch_first=True)
        context_size = attention.context_size
        self.pre_output = nn.Linear(
            spec.hidden_size + context_size + spec.embed_size, spec.hidden_size
        )
        self.output = nn.Linear(spec.hidden_size, spec.tgt_vocab_size)
        self.embed_size = spec.embed_size

    def _input_gates(self, embedded: Tensor) -> Tensor:
        """The embedding half of ``W_ih x + b_ih``: (B, [T,] E) -> (B, [T,] 3H)."""
        weight = self.rnn.weight_ih_l0[:, : self.embed_size]
        return torch.nn.functional.linear(embedded, weight, self.rnn.bias_ih_l0)

    def readout(self, states: Tensor, contexts: Tensor, embedded: Tensor) -> Tensor:
        """(B, T, H), (B, T, D_k), (B, T, E) -> logits (B, T, V); also works without T."""
        hidden = torch.tanh(self.pre_output(torch.cat([states, contexts, embedded], dim=-1)))
        return self.output(self.dropout(hidden))

    @abstractmethod
    def step(
        self, prev_tokens: Tensor, state: Tensor, memory: Memory
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoding step: prev_tokens (B,), state (B, H) ->
        logits (B, V), new state (B, H), weights (B, heads, T_s) or None."""

    def forward(
        self,
        tgt_in: Tensor,
        memory: Memory,
        state: Tensor,
        teacher_forcing: float = 1.0,
        keep_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher-forced decoding of a whole batch.

        tgt_in (B, T_t) inputs (``<bos>`` then words), memory from ``attention.prepare``,
        state (B, H) initial state -> logits (B, T_t, V), weights (B, heads, T_t, T_s) or None.
        With ``teacher_forcing < 1`` each step feeds, with that probability, the reference token,
        else the model's own previous prediction (one coin per step, drawn once per batch).
        """
        expect(
            "Decoder.forward",
            {"H": self.rnn.hidden_size},
            tgt_in=(tgt_in, "B T_t"),
            state=(state, "B H"),
            mask=(memory.mask, "B T_s"),
        )
        if teacher_forcing < 1.0:
            feed_reference = (torch.rand(tgt_in.size(1)) < teacher_forcing).tolist()
            return self._step_loop(tgt_in, memory, state, keep_weights, feed_reference)
        return self._forward_teacher_forced(tgt_in, memory, state, keep_weights)

    @abstractmethod
    def _forward_teacher_forced(
        self, tgt_in: Tensor, memory: Memory, state: Tensor, keep_weights: bool
    ) -> tuple[Tensor, Tensor | None]:
        """All steps fed the reference: logits (B, T_t, V), weights (B, heads, T_t, T_s)."""

    def _step_loop(
        self,
        tgt_in: Tensor,
        memory: Memory,
        state: Tensor,
        keep_weights: bool,
        feed_reference: list[bool] | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """The textbook recurrence: :meth:`step` at every position, fed the reference token —
        or, where ``feed_reference[t]`` is False (scheduled sampling), the last prediction."""
        prev = tgt_in[:, 0]
        step_logits, step_weights = [], []
        for t in range(tgt_in.size(1)):
            if t > 0:
                reference = feed_reference is None or feed_reference[t]
                prev = tgt_in[:, t] if reference else predicted_tokens(step_logits[-1])
            logits, state, weights = self.step(prev, state, memory)
            step_logits.append(logits)
            step_weights.append(weights)
        weights_out = None
        if keep_weights and step_weights[0] is not None:
            weights_out = torch.stack(step_weights, dim=2)  # (B, heads, T_t, T_s)
        return torch.stack(step_logits, dim=1), weights_out


class BahdanauDecoder(Decoder):
    """Bahdanau et al. (2015): attend from the previous state and feed the context into the GRU.

    At step t: ``c_t = attend(s_{t-1})``, ``s_t = GRU([e(y_{t-1}); c_t], s_{t-1})``
    (:meth:`step`). The context steers the recurrence ("input feeding"), so training loops
    over the steps. Without attention the context is fixed and one GRU call runs all steps
    (the Cho et al. 2014 baseline, whatever ``model.decoder`` says).

    Teacher forcing runs one of two recurrences (``recurrence``, chosen in
    :meth:`_forward_teacher_forced` alone): ``textbook``, :meth:`step` in a loop under autograd,
    or ``fused`` (the default), the same loop as one node with a hand-written backward
    (:mod:`seq2seq.model.fused`), which the tests hold equal to the textbook. Scheduled
    sampling (``teacher_forcing < 1``) always runs the textbook loop.
    """

    arrangement = "bahdanau"

    def __init__(
        self, spec: ModelSpec, attention: Attention, recurrence: str = Recurrence.fused
    ) -> None:
        super().__init__(spec, attention, spec.embed_size + attention.context_size)
        self.recurrence = Recurrence(recurrence)
        self.fused = FusedRecurrence(spec.tanh) if self.recurrence == Recurrence.fused else None

    def _context_gates(self, context: Tensor) -> Tensor:
        """The context half of ``W_ih x``: (B, [T,] D_k) -> (B, [T,] 3H)."""
        return context @ self.rnn.weight_ih_l0[:, self.embed_size :].t()

    def step(
        self, prev_tokens: Tensor, state: Tensor, memory: Memory
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, E)
        context, weights = self.attention.attend(state, memory)  # (B, D_k)
        gates = self._input_gates(embedded) + self._context_gates(context)
        state = gru_cell(gates, state, self.rnn.weight_hh_l0, self.rnn.bias_hh_l0)
        return self.readout(state, context, embedded), state, weights

    def _forward_teacher_forced(
        self, tgt_in: Tensor, memory: Memory, state: Tensor, keep_weights: bool
    ) -> tuple[Tensor, Tensor | None]:
        if not self.attention.has_weights:
            embedded = self.dropout(self.embedding(tgt_in))  # (B, T_t, E)
            contexts = memory.values.unsqueeze(1).expand(-1, tgt_in.size(1), -1)  # (B, T_t, D_k)
            states, _ = self.rnn(torch.cat([embedded, contexts], dim=-1), state.unsqueeze(0))
            return self.readout(states, contexts, embedded), None
        if self.fused is None or not self.fused.covers(self.attention):
            return self._step_loop(tgt_in, memory, state, keep_weights)  # the textbook
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T_t, E)
        states, weights = self.fused(
            self._input_gates(embedded),  # (B, T_t, 3H), all steps at once
            state,
            memory,
            self.attention,
            self.rnn.weight_ih_l0[:, self.embed_size :],  # W_c (3H, D_k)
            self.rnn.weight_hh_l0,
            self.rnn.bias_hh_l0,
        )  # (B, T_t, H), (B, heads, T_t, T_s)
        contexts = self.attention.read(weights, memory)  # all steps' contexts at once
        logits = self.readout(states, contexts, embedded)  # the output layer, once
        return logits, weights if keep_weights else None


class LuongDecoder(Decoder):
    """Luong et al. (2015) without input feeding: attend from the *current* state.

    At step t: ``s_t = GRU(e(y_{t-1}), s_{t-1})``, ``c_t = attend(s_t)``. The context does not
    enter the recurrence, so teacher-forced training runs the GRU over all steps in one fused
    call and attention over all steps in one batched call: no Python loop over time.
    """

    arrangement = "luong"

    def __init__(self, spec: ModelSpec, attention: Attention) -> None:
        super().__init__(spec, attention, spec.embed_size)

    def step(
        self, prev_tokens: Tensor, state: Tensor, memory: Memory
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, E)
        state = gru_cell(
            self._input_gates(embedded), state, self.rnn.weight_hh_l0, self.rnn.bias_hh_l0
        )
        context, weights = self.attention.attend(state, memory)  # (B, D_k)
        return self.readout(state, context, embedded), state, weights

    def _forward_teacher_forced(
        self, tgt_in: Tensor, memory: Memory, state: Tensor, keep_weights: bool
    ) -> tuple[Tensor, Tensor | None]:
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T_t, E)
        states, _ = self.rnn(embedded, state.unsqueeze(0))  # (B, T_t, H)
        contexts, weights = self.attention.attend(states, memory)  # (B, T_t, D_k)
        return self.readout(states, contexts, embedded), weights if keep_weights else None


def build_decoder(
    spec: ModelSpec, attention: Attention, recurrence: str = Recurrence.fused
) -> Decoder:
    """The decoder arrangement ``spec.decoder`` names; without attention, always the
    fixed-context baseline (there is no attention to arrange). ``recurrence``: how the
    Bahdanau arrangement runs teacher forcing (see :class:`BahdanauDecoder`)."""
    if spec.decoder not in DECODER_TYPES:
        raise ValueError(f"unknown decoder {spec.decoder!r}; choose one of {DECODER_TYPES}")
    if spec.decoder == "luong" and attention.has_weights:
        return LuongDecoder(spec, attention)
    return BahdanauDecoder(spec, attention, recurrence)
