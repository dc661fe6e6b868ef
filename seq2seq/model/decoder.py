"""A GRU encoder–decoder in which attention is the only moving part.

Encoder: embedding + (bi)GRU on packed sequences, so padding never reaches the outputs or
the final state. Decoder, in one of two arrangements (``model.decoder``):

- ``luong`` (Luong et al. 2015, no input feeding): the GRU reads the target words only and
  attention runs from its new state, so training needs no Python loop over time steps;
- ``bahdanau`` (Bahdanau et al. 2015; the default): attend from the previous state and feed
  the context into the GRU, so the attention steers the recurrence, at the price of a step
  loop; it ends more exact on long sentences (README, "The attention interface").

Both read state, context and the previous word's embedding in the output layer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import Tensor, nn

from seq2seq.data.vocab import Vocab
from seq2seq.model.attention import Attention, Memory
from seq2seq.model.fused_recurrence import fused_bahdanau_recurrence
from seq2seq.model.names import DECODER_TYPES
from seq2seq.model.scorers import fused_scorer
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

    Teacher forcing runs one of three recurrences, chosen in :meth:`recurrence` alone:

    - ``"steps"``: the textbook, :meth:`step` in a loop — the reference the others must equal;
    - ``"value_gates"``: since the context is linear in the weights (``c_t = α_t U + b``),
      what depends on the batch alone is hoisted out of the loop (:meth:`Attention.context_mixer`:
      for one head the values projected into gate space once per batch) and the output layer
      runs once after it;
    - ``"fused"``: the same loop as one autograd node with a hand-written backward
      (:mod:`seq2seq.model.fused_recurrence`), while training, for the mechanisms it covers.

    ``recurrence`` at construction is the fastest one allowed: ``"fused"`` (the default) falls
    back to ``"value_gates"`` where it does not apply, which falls back to ``"steps"``.
    """

    arrangement = "bahdanau"
    RECURRENCES = ("steps", "value_gates", "fused")

    def __init__(self, spec: ModelSpec, attention: Attention, recurrence: str = "fused") -> None:
        super().__init__(spec, attention, spec.embed_size + attention.context_size)
        if recurrence not in self.RECURRENCES:
            raise ValueError(f"recurrence={recurrence!r}: choose one of {self.RECURRENCES}")
        self.allowed = recurrence

    def recurrence(self, memory: Memory) -> str:
        """The recurrence teacher forcing runs now: the fastest one :attr:`allowed` that
        applies (the fused one only while training, i.e. with gradients: without a graph the
        value-gates loop is as fast)."""
        order = self.RECURRENCES[: self.RECURRENCES.index(self.allowed) + 1]
        if (
            "fused" in order
            and torch.is_grad_enabled()
            and fused_scorer(self.attention, memory) is not None
        ):
            return "fused"
        if "value_gates" in order and self.attention.has_weights:
            return "value_gates"
        return "steps"

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
        recurrence = self.recurrence(memory)
        if recurrence == "steps":
            return self._step_loop(tgt_in, memory, state, keep_weights)
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T_t, E)
        input_gates = self._input_gates(embedded)  # (B, T_t, 3H), all steps at once
        context_weight = self.rnn.weight_ih_l0[:, self.embed_size :]  # W_c (3H, D_k)
        mixer, bias_gates = self.attention.context_mixer(memory, context_weight)  # per batch
        if bias_gates is not None:
            input_gates = input_gates + bias_gates.unsqueeze(1)
        weight_hh, bias_hh = self.rnn.weight_hh_l0, self.rnn.bias_hh_l0
        if recurrence == "fused":
            all_states, flat_weights = fused_bahdanau_recurrence(
                input_gates, state, mixer, memory, weight_hh, bias_hh, self.attention
            )  # (B, T_t, H), (B, T_t, h·T_s)
        else:
            states, step_weights = [], []
            # Split once: indexing [:, t] inside the loop would make backward add a
            # zero-padded (B, T_t, 3H) gradient per step (quadratic in T_t).
            for gates_x in input_gates.unbind(1):
                weights = self.attention.step_weights(state, memory).flatten(1)  # (B, h·T_s)
                state = gru_cell(gates_x + mixer.gates(weights), state, weight_hh, bias_hh)
                states.append(state)
                step_weights.append(weights)
            all_states, flat_weights = torch.stack(states, 1), torch.stack(step_weights, 1)
        batch, steps = flat_weights.shape[:2]
        weights = flat_weights.view(batch, steps, self.attention.num_heads, -1).transpose(1, 2)
        contexts = self.attention.context_from_weights(weights, memory)  # all steps at once
        logits = self.readout(all_states, contexts, embedded)  # the output layer, once
        return logits, weights if keep_weights else None  # weights (B, heads, T_t, T_s)


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


def build_decoder(spec: ModelSpec, attention: Attention, recurrence: str = "fused") -> Decoder:
    """The decoder arrangement ``spec.decoder`` names; without attention, always the
    fixed-context baseline (there is no attention to arrange). ``recurrence``: the fastest
    teacher-forced recurrence the Bahdanau arrangement may use (see :class:`BahdanauDecoder`)."""
    if spec.decoder not in DECODER_TYPES:
        raise ValueError(f"unknown decoder {spec.decoder!r}; choose one of {DECODER_TYPES}")
    if spec.decoder == "luong" and attention.has_weights:
        return LuongDecoder(spec, attention)
    return BahdanauDecoder(spec, attention, recurrence)
