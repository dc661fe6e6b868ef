"""The registry of networks: ``model.kind`` -> the class that builds it from a ModelSpec.

Both kinds answer the same interface (``encode``, ``forward``, ``decoder.step``, ``attention``,
``parameter_counts``, ``summary``), so search, scoring, checkpoints and the trainer take either.
"""

from __future__ import annotations

from seq2seq.choices import ModelKind, Recurrence
from seq2seq.model.encoder_decoder import Seq2Seq
from seq2seq.model.spec import ModelSpec
from seq2seq.model.transformer import Transformer

Network = Seq2Seq | Transformer
NETWORKS: dict[ModelKind, type[Seq2Seq] | type[Transformer]] = {
    ModelKind.rnn: Seq2Seq,
    ModelKind.transformer: Transformer,
}
assert set(NETWORKS) == set(ModelKind), "every model kind needs a network"


def build_network(spec: ModelSpec, recurrence: str = Recurrence.fused) -> Network:
    """A new network of ``spec.kind`` (PyTorch's initial weights; see :mod:`seq2seq.model.init`);
    ``recurrence``: how a GRU's Bahdanau decoder runs teacher forcing (``model.recurrence``)."""
    network = NETWORKS[ModelKind(spec.kind)]
    return Seq2Seq(spec, recurrence) if network is Seq2Seq else network(spec)
