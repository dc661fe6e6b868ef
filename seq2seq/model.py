"""A GRU encoder–decoder in which attention is the only moving part.

Encoder: embedding + (bi)GRU on packed sequences, so padding never reaches the outputs or
the final state. Decoder: Bahdanau et al. (2015) arrangement — attend from the previous state,
feed the context into the GRU input, read state, context and embedding in the output layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seq2seq.attention import Attention, Memory, NoAttention, build_attention
from seq2seq.data.vocab import Vocab


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to rebuild a model (stored in checkpoints as plain data)."""

    src_vocab_size: int
    tgt_vocab_size: int
    attention: str = "additive"
    embed_size: int = 64
    hidden_size: int = 128
    encoder_layers: int = 1
    bidirectional: bool = True
    dropout: float = 0.1
    num_heads: int = 1
    attention_size: int | None = None  # additive attention's hidden size; None = hidden_size


class Encoder(nn.Module):
    """Embedding + GRU over packed sequences.

    forward(src (B, T_s), src_lengths (B,) on CPU)
      -> outputs (B, T_s, D_k) with zeros at padding, D_k = hidden · directions
      -> final   (B, D_k): the top layer's last states (forward and backward joined)
    """

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embedding = nn.Embedding(
            spec.src_vocab_size, spec.embed_size, padding_idx=Vocab.pad_id
        )
        self.dropout = nn.Dropout(spec.dropout)
        self.rnn = nn.GRU(
            spec.embed_size,
            spec.hidden_size,
            num_layers=spec.encoder_layers,
            bidirectional=spec.bidirectional,
            dropout=spec.dropout if spec.encoder_layers > 1 else 0.0,
            batch_first=True,
        )
        self.directions = 2 if spec.bidirectional else 1
        self.output_size = spec.hidden_size * self.directions

    def forward(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        embedded = self.dropout(self.embedding(src))  # (B, T_s, E)
        packed = pack_padded_sequence(embedded, src_lengths, batch_first=True, enforce_sorted=False)
        packed_outputs, final = self.rnn(packed)  # final: (layers · directions, B, H)
        outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=src.size(1))
        top = final[-self.directions :].transpose(0, 1).flatten(1)  # (B, D_k)
        return outputs, top


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


class Decoder(nn.Module):
    """GRU decoder with a pluggable attention mechanism (Bahdanau arrangement).

    At step t: ``c_t = attend(s_{t-1})``, ``s_t = GRU([e(y_{t-1}); c_t], s_{t-1})``,
    ``logits_t = W_o tanh(W_p [s_t; c_t; e(y_{t-1})])``.
    """

    def __init__(self, spec: ModelSpec, attention: Attention) -> None:
        super().__init__()
        self.attention = attention
        self.embedding = nn.Embedding(
            spec.tgt_vocab_size, spec.embed_size, padding_idx=Vocab.pad_id
        )
        self.dropout = nn.Dropout(spec.dropout)
        context_size = attention.context_size
        self.rnn = nn.GRU(spec.embed_size + context_size, spec.hidden_size, batch_first=True)
        self.pre_output = nn.Linear(
            spec.hidden_size + context_size + spec.embed_size, spec.hidden_size
        )
        self.output = nn.Linear(spec.hidden_size, spec.tgt_vocab_size)
        self.embed_size = spec.embed_size

    def _input_gates(self, embedded: Tensor) -> Tensor:
        """The embedding half of ``W_ih x + b_ih``: (B, T, E) -> (B, T, 3H), once per batch."""
        weight = self.rnn.weight_ih_l0[:, : self.embed_size]
        return torch.nn.functional.linear(embedded, weight, self.rnn.bias_ih_l0)

    def _context_gates(self, context: Tensor) -> Tensor:
        """The context half of ``W_ih x``: (B, D_k) -> (B, 3H)."""
        return context @ self.rnn.weight_ih_l0[:, self.embed_size :].t()

    def readout(self, states: Tensor, contexts: Tensor, embedded: Tensor) -> Tensor:
        """(B, T, H), (B, T, D_k), (B, T, E) -> logits (B, T, V); also works without T."""
        hidden = torch.tanh(self.pre_output(torch.cat([states, contexts, embedded], dim=-1)))
        return self.output(self.dropout(hidden))

    def step(
        self, prev_tokens: Tensor, state: Tensor, memory: Memory
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoding step: prev_tokens (B,), state (B, H) ->
        logits (B, V), new state (B, H), weights (B, heads, T_s) or None."""
        embedded = self.dropout(self.embedding(prev_tokens))  # (B, E)
        context, weights = self.attention.attend(state, memory)  # (B, D_k)
        gates = self._input_gates(embedded) + self._context_gates(context)
        state = gru_cell(gates, state, self.rnn.weight_hh_l0, self.rnn.bias_hh_l0)
        return self.readout(state, context, embedded), state, weights

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
        steps = tgt_in.size(1)
        if teacher_forcing >= 1.0 and isinstance(self.attention, NoAttention):
            return self._forward_static_context(tgt_in, memory, state), None
        sampled = teacher_forcing < 1.0
        use_reference = (torch.rand(steps) < teacher_forcing).tolist() if sampled else None
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T_t, E)
        # (B, T_t, 3H) for all steps at once, split once: indexing [:, t] inside the loop would
        # make backward add a zero-padded (B, T_t, 3H) gradient per step (quadratic in T_t).
        input_gates = self._input_gates(embedded).unbind(1)
        # When the context is a weighted average of the values, W_c·c_t = α_t·(W_c·values):
        # projecting the values once per batch replaces a (B, D_k)x(D_k, 3H) product per step.
        value_gates = None
        if self.attention.averages_values:
            value_gates = self._context_gates(memory.values)  # (B, T_s, 3H)
        weight_hh, bias_hh = self.rnn.weight_hh_l0, self.rnn.bias_hh_l0
        states, contexts, step_weights, step_logits = [], [], [], []
        for t in range(steps):
            if use_reference is not None and t > 0 and not use_reference[t]:
                # Feed the model's own prediction: recompute this step's input embedding.
                predicted = self.dropout(self.embedding(step_logits[-1].argmax(-1)))
                embedded = embedded.clone()
                embedded[:, t] = predicted
                gates_x = self._input_gates(predicted)
            else:
                gates_x = input_gates[t]
            if value_gates is not None:
                weights = self.attention.attention_weights(state, memory)  # (B, 1, T_s)
                context_gates = torch.bmm(weights, value_gates).squeeze(1)
                context = torch.bmm(weights, memory.values).squeeze(1) if sampled else None
            else:
                context, weights = self.attention.attend(state, memory)
                context_gates = self._context_gates(context)
            state = gru_cell(gates_x + context_gates, state, weight_hh, bias_hh)
            states.append(state)
            contexts.append(context)
            step_weights.append(weights)
            if sampled:
                step_logits.append(self.readout(state, context, embedded[:, t]))
        if sampled:
            logits = torch.stack(step_logits, dim=1)
        else:  # all steps' output layer in one batched product
            if value_gates is not None:  # contexts of all steps in one product too
                all_contexts = torch.cat(step_weights, dim=1) @ memory.values  # (B, T_t, D_k)
            else:
                all_contexts = torch.stack(contexts, dim=1)
            logits = self.readout(torch.stack(states, 1), all_contexts, embedded)
        weights_out = None
        if keep_weights and step_weights[0] is not None:
            weights_out = torch.stack(step_weights, dim=2)  # (B, heads, T_t, T_s)
        return logits, weights_out

    def _forward_static_context(self, tgt_in: Tensor, memory: Memory, state: Tensor) -> Tensor:
        """Without attention the context never changes, so one fused GRU call runs all steps."""
        embedded = self.dropout(self.embedding(tgt_in))  # (B, T_t, E)
        contexts = memory.values.unsqueeze(1).expand(-1, tgt_in.size(1), -1)  # (B, T_t, D_k)
        states, _ = self.rnn(torch.cat([embedded, contexts], dim=-1), state.unsqueeze(0))
        return self.readout(states, contexts, embedded)


class Seq2Seq(nn.Module):
    """Encoder, bridge, attention and decoder; built from a :class:`ModelSpec`."""

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.spec = spec
        self.encoder = Encoder(spec)
        key_dim = self.encoder.output_size
        self.bridge = nn.Linear(key_dim, spec.hidden_size)
        attention = build_attention(
            spec.attention,
            spec.hidden_size,
            key_dim,
            hidden_dim=spec.attention_size or spec.hidden_size,
            num_heads=spec.num_heads,
            bidirectional=spec.bidirectional,
        )
        self.decoder = Decoder(spec, attention)

    @property
    def attention(self) -> Attention:
        return self.decoder.attention

    def encode(self, src: Tensor, src_lengths: Tensor, src_mask: Tensor) -> tuple[Memory, Tensor]:
        """src (B, T_s) -> attention memory and the decoder's initial state (B, H)."""
        outputs, final = self.encoder(src, src_lengths)
        initial_state = torch.tanh(self.bridge(final))
        return self.attention.prepare(outputs, src_mask), initial_state

    def forward(
        self,
        src: Tensor,
        src_lengths: Tensor,
        src_mask: Tensor,
        tgt_in: Tensor,
        teacher_forcing: float = 1.0,
        keep_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """-> logits (B, T_t, V), weights (B, heads, T_t, T_s) when ``keep_weights``."""
        memory, state = self.encode(src, src_lengths, src_mask)
        return self.decoder(tgt_in, memory, state, teacher_forcing, keep_weights)

    def parameter_counts(self) -> dict[str, int]:
        """Trainable parameters per part."""
        parts = {
            "encoder": self.encoder,
            "bridge": self.bridge,
            "attention": self.decoder.attention,
            "decoder.embedding": self.decoder.embedding,
            "decoder.rnn": self.decoder.rnn,
            "decoder.readout": nn.ModuleList([self.decoder.pre_output, self.decoder.output]),
        }
        counts = {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items()}
        counts["total"] = sum(p.numel() for p in self.parameters())
        return counts

    def summary(self) -> str:
        """A readable table of parameter counts per part."""
        spec = self.spec
        lines = [
            f"Seq2Seq(attention={spec.attention}, heads={self.attention.num_heads}, "
            f"embed={spec.embed_size}, hidden={spec.hidden_size}, "
            f"encoder={'bi' if spec.bidirectional else 'uni'}GRU×{spec.encoder_layers}, "
            f"vocab {spec.src_vocab_size}→{spec.tgt_vocab_size})"
        ]
        lines += [f"  {name:<18} {count:>10,}" for name, count in self.parameter_counts().items()]
        return "\n".join(lines)
