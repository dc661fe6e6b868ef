"""The registry of networks: ``model.kind`` -> the class that builds it from a ModelSpec.

Both kinds answer the same interface (``encode``, ``forward``, ``decoder.step``, ``attention``,
``parameter_counts``, ``summary``), so search, scoring, checkpoints and the trainer take either.
"""

from __future__ import annotations

from seq2seq.model.encoder_decoder import Seq2Seq
from seq2seq.model.names import ModelKind
from seq2seq.model.spec import ModelSpec
from seq2seq.model.transformer import Transformer

Network = Seq2Seq | Transformer
NETWORKS: dict[ModelKind, type[Seq2Seq] | type[Transformer]] = {
    ModelKind.rnn: Seq2Seq,
    ModelKind.transformer: Transformer,
}
assert set(NETWORKS) == set(ModelKind), "every model kind needs a network"


def build_network(spec: ModelSpec) -> Network:
    """A new network of ``spec.kind`` (PyTorch's initial weights; see :mod:`seq2seq.model.init`)."""
    return NETWORKS[ModelKind(spec.kind)](spec)
