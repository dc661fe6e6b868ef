"""The encoder–decoder: encoder, bridge, attention and decoder, built from a ModelSpec."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seq2seq.choices import Recurrence
from seq2seq.model import parts as parts_table
from seq2seq.model.attention import Attention, Memory, build_attention
from seq2seq.model.decoder import build_decoder
from seq2seq.model.encoder import Encoder
from seq2seq.model.shapes import expect
from seq2seq.model.spec import ModelSpec


class Seq2Seq(nn.Module):
    """Encoder, bridge, attention and decoder; built from a :class:`ModelSpec`.

    ``recurrence`` chooses how the Bahdanau decoder runs teacher forcing (``fused``, the
    default, or ``textbook``): the same model computed two ways, which the tests hold equal
    (see :class:`~seq2seq.model.decoder.BahdanauDecoder`).
    """

    def __init__(self, spec: ModelSpec, recurrence: str = Recurrence.fused) -> None:
        super().__init__()
        self.spec = spec
        self.encoder = Encoder(spec)
        key_dim = self.encoder.output_size
        self.bridge = nn.Linear(key_dim, spec.hidden_size)
        attention = build_attention(spec.attention, spec.hidden_size, key_dim, spec)
        self.decoder = build_decoder(spec, attention, recurrence)

    #: No position table bounds what a GRU reads or writes (the Transformer's does).
    max_source_length: int | None = None
    max_output_length: int | None = None
    #: The heads guided alignment pulls towards the gold links: all of them, averaged.
    guided_heads = slice(None)
    #: One attention, no decoder layers (a Transformer says how many it has).
    decoder_layer_count: int | None = None

    @property
    def attention(self) -> Attention:
        return self.decoder.attention

    def encode(self, src: Tensor, src_lengths: Tensor, src_mask: Tensor) -> tuple[Memory, Tensor]:
        """src (B, T_s), src_lengths (B,), src_mask (B, T_s) -> attention memory and the
        decoder's initial state (B, H)."""
        expect(
            "Seq2Seq.encode",
            src=(src, "B T_s"),
            src_lengths=(src_lengths, "B"),
            src_mask=(src_mask, "B T_s"),
        )
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
        """src (B, T_s), src_lengths (B,), src_mask (B, T_s), tgt_in (B, T_t) -> logits
        (B, T_t, V), weights (B, heads, T_t, T_s) when ``keep_weights``."""
        expect("Seq2Seq.forward", src=(src, "B T_s"), tgt_in=(tgt_in, "B T_t"))
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
        return parts_table.parameter_counts(self, parts)

    def summary(self) -> str:
        """A readable table of parameter counts per part."""
        spec = self.spec
        header = (
            f"Seq2Seq(attention={spec.attention}, heads={self.attention.num_heads}, "
            f"decoder={self.decoder.arrangement}, "
            f"embed={spec.embed_size}, hidden={spec.hidden_size}, "
            f"encoder={'bi' if spec.bidirectional else 'uni'}GRU×{spec.encoder_layers}, "
            f"vocab {spec.src_vocab_size}→{spec.tgt_vocab_size})"
        )
        return parts_table.summary(header, self.parameter_counts())
