"""The benchmark's tutorial-style reference model (seq2seq.analysis.bench.reference)."""

from __future__ import annotations

import torch

from seq2seq.analysis.bench.reference import TutorialSeq2Seq
from tests.helpers.models import spec_of


def test_tutorial_reference_shapes_and_masking() -> None:
    spec = spec_of(7, 6, embed_size=4, hidden_size=5, dropout=0)
    model = TutorialSeq2Seq(spec).eval()
    src = torch.tensor([[4, 5, 3, 0, 0], [6, 3, 0, 0, 0]])
    logits = model(src, src != 0, torch.tensor([[2, 4, 5], [2, 5, 0]]))
    assert logits.shape == (2, 3, 6)
    assert torch.isfinite(logits).all()
    keys = torch.randn(2, 5, 10)
    mask = src != 0
    changed = keys.clone()
    changed[~mask] = 100.0  # what padding holds must not reach the context
    state = torch.randn(2, 5)
    assert torch.allclose(model.attend(state, keys, mask), model.attend(state, changed, mask))
