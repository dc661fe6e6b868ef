"""How a new model's weights start (``model.init``).

``xavier`` (the default; as JoeyNMT initialises its RNN models): every weight matrix from
Glorot & Bengio's uniform distribution, the GRU's input and recurrent matrices per gate (each
of the three ``(H, ·)`` blocks of ``weight_ih``/``weight_hh`` on its own fan), embeddings the
same way, every bias zero, the padding rows of the embeddings zero. ``pytorch`` keeps PyTorch's
layer defaults (``N(0, 1)`` embeddings, ``U(±1/√fan_in)`` weights and biases), what this
project used before: on the synthetic corpus its valid exact match at the default schedule is
lower and its curve less steady (docs/performance.md, the lever table).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seq2seq.choices import INIT_SCHEMES


def _xavier_per_gate(weight: torch.Tensor, gates: int = 3) -> None:
    """Glorot uniform on each of the ``gates`` row blocks of a GRU matrix (3H, fan_in)."""
    rows = weight.size(0) // gates
    for block in weight.split(rows, dim=0):
        bound = math.sqrt(6.0 / (block.size(0) + block.size(1)))
        block.uniform_(-bound, bound)


@torch.no_grad()
def initialize(model: nn.Module, scheme: str = "xavier") -> None:
    """Re-draw ``model``'s parameters by ``scheme`` (one of :data:`INIT_SCHEMES`), in place,
    from the current torch generator."""
    if scheme not in INIT_SCHEMES:
        raise ValueError(f"unknown init scheme {scheme!r}; choose one of {INIT_SCHEMES}")
    if scheme == "pytorch":
        return
    for module in model.modules():
        if isinstance(module, nn.GRU):
            for name, parameter in module.named_parameters():
                if name.startswith("weight"):
                    _xavier_per_gate(parameter)
                else:
                    parameter.zero_()
        elif isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            nn.init.xavier_uniform_(module.weight)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
