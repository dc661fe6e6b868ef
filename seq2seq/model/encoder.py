"""The encoder: embedding + (bi)GRU on packed sequences, so padding never reaches the
outputs or the final state."""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seq2seq.data.vocab import Vocab
from seq2seq.model.spec import ModelSpec


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
