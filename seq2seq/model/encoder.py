"""The encoder: embedding + (bi)GRU in which padding never reaches the outputs or the final
state.

A bidirectional GRU must not read padding before a sentence's last word in its backward
direction. ``nn.GRU`` over *packed* sequences (``pack_padded_sequence``) achieves that, but on
the CPU its backward pass zero-fills a gradient of the whole input projection at every time
step, which makes the packed encoder much slower than the form below (docs/performance.md).
Here each direction of each layer is a one-layer ``nn.GRU`` run over the padded batch — the
left-to-right one reads words then padding, the right-to-left one reads each sentence reversed
within its own length (:func:`reverse_within_lengths`), so it too meets the padding only after
the words — and the outputs past each sentence's end are zeroed. The real positions get exactly
the packed computation's values (tested against ``pack_padded_sequence``).
"""

from __future__ import annotations

import re

import torch
from torch import Tensor, nn

from seq2seq.data.vocab import Vocab
from seq2seq.model.spec import ModelSpec

#: The directions of a layer, in the order their outputs are joined (and drawn at init).
DIRECTIONS = ("left_to_right", "right_to_left")


def reverse_within_lengths(lengths: Tensor, steps: int) -> Tensor:
    """Indices (B, steps) that reverse each row's first ``lengths[b]`` positions and keep the
    rest in place; applying them twice is the identity."""
    positions = torch.arange(steps, device=lengths.device).unsqueeze(0)  # (1, T)
    lengths = lengths.unsqueeze(1)
    return torch.where(positions < lengths, lengths - 1 - positions, positions)


def _gather_steps(x: Tensor, order: Tensor) -> Tensor:
    """x (B, T, F) with each row's steps in ``order`` (B, T)."""
    return x.gather(1, order.unsqueeze(-1).expand(-1, -1, x.size(-1)))


class Encoder(nn.Module):
    """Embedding + GRU layers over the padded batch, each direction its own ``nn.GRU``.

    forward(src (B, T_s), src_lengths (B,))
      -> outputs (B, T_s, D_k) with zeros at padding, D_k = hidden · directions
      -> final   (B, D_k): the top layer's last states (left-to-right and right-to-left joined)
    """

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.embedding = nn.Embedding(
            spec.src_vocab_size, spec.embed_size, padding_idx=Vocab.pad_id
        )
        self.dropout = nn.Dropout(spec.dropout)
        self.directions = 2 if spec.bidirectional else 1
        self.hidden_size = spec.hidden_size
        self.output_size = spec.hidden_size * self.directions
        self.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    direction: nn.GRU(
                        spec.embed_size if layer == 0 else self.output_size,
                        spec.hidden_size,
                        batch_first=True,
                    )
                    for direction in DIRECTIONS[: self.directions]
                }
            )
            for layer in range(spec.encoder_layers)
        )
        # between stacked layers, as nn.GRU's own ``dropout`` argument does
        self.layer_dropout = spec.dropout if spec.encoder_layers > 1 else 0.0

    def forward(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        steps = src.size(1)
        lengths = src_lengths.to(src.device)
        real = torch.arange(steps, device=src.device).unsqueeze(0) < lengths.unsqueeze(1)
        backward = reverse_within_lengths(lengths, steps)
        x = self.dropout(self.embedding(src))  # (B, T_s, E)
        for index, layer in enumerate(self.layers):
            if index > 0 and self.training and self.layer_dropout > 0:
                x = nn.functional.dropout(x, self.layer_dropout)
            parts = [layer["left_to_right"](x)[0]]  # (B, T_s, H), from a zero state
            if self.directions == 2:
                reversed_out = layer["right_to_left"](_gather_steps(x, backward))[0]
                parts.append(_gather_steps(reversed_out, backward))
            x = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        outputs = x * real.unsqueeze(-1)  # (B, T_s, D_k), zeros past each sentence's end
        hidden = self.hidden_size
        last = (lengths - 1).clamp(min=0)
        batch = torch.arange(src.size(0), device=src.device)
        final = outputs[batch, last, :hidden]  # left-to-right after the last word
        if self.directions == 2:  # right-to-left after the first word
            final = torch.cat([final, outputs[:, 0, hidden:]], dim=-1)
        return outputs, final


#: ``encoder.rnn.weight_ih_l1_reverse``: a weight of the one bidirectional ``nn.GRU`` that
#: encoders of earlier versions held (its layer and direction in the name).
_ONE_GRU_NAME = re.compile(r"^encoder\.rnn\.(\w+?)_l(\d+)(_reverse)?$")


def rename_one_gru_weights(weights: dict[str, Tensor]) -> dict[str, Tensor]:
    """A state dict whose encoder weights carry the names of one bidirectional ``nn.GRU``
    (checkpoints of earlier versions) with today's names: ``encoder.rnn.weight_ih_l1_reverse``
    -> ``encoder.layers.1.right_to_left.weight_ih_l0``; other names are kept."""
    renamed = {}
    for name, value in weights.items():
        match = _ONE_GRU_NAME.match(name)
        if match is not None:
            kind, layer, reverse = match.groups()
            direction = DIRECTIONS[1] if reverse else DIRECTIONS[0]
            name = f"encoder.layers.{layer}.{direction}.{kind}_l0"
        renamed[name] = value
    return renamed
