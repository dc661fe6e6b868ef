"""A network's parameters by part: the one table both networks print in ``train.log``."""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn


def parameter_counts(model: nn.Module, parts: Mapping[str, nn.Module]) -> dict[str, int]:
    """Trainable parameters of each part of ``model``, then its ``total``."""
    counts = {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items()}
    counts["total"] = sum(p.numel() for p in model.parameters())
    return counts


def summary(header: str, counts: Mapping[str, int]) -> str:
    """``header`` then one aligned line per part: ``  encoder     123,456``."""
    return "\n".join([header, *(f"  {name:<18} {count:>10,}" for name, count in counts.items())])
