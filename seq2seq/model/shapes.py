"""Shape checks at the model's public boundaries (as JoeyNMT asserts its inputs): once per
call — per batch, never per time step — each tensor against a pattern of named axes such as
``"B T_s"``; an axis named twice must have one size, and a size given in ``sizes`` is fixed.

    expect("Seq2Seq.forward", src=(src, "B T_s"), src_mask=(src_mask, "B T_s"))

A mismatch is an ``AssertionError`` naming the call, the tensor, its shape and what was
expected, e.g. ``Seq2Seq.forward: src_mask has shape (5, 6), expected (B, T_s) = (5, 7)``.
"""

from __future__ import annotations

from torch import Tensor


def expect(where: str, sizes: dict[str, int] | None = None, **tensors: tuple[Tensor, str]) -> None:
    """Check every ``name=(tensor, "AXIS AXIS ...")`` of ``tensors`` (see the module docstring);
    ``sizes`` fixes axes known beforehand (e.g. ``{"H": hidden_size}``)."""
    bound = dict(sizes or {})
    for name, (tensor, pattern) in tensors.items():
        axes = pattern.split()
        shape = tuple(tensor.shape)
        ok = len(shape) == len(axes)
        if ok:
            for axis, size in zip(axes, shape, strict=True):
                if bound.setdefault(axis, size) != size:
                    ok = False
        if not ok:
            wanted = ", ".join(str(bound.get(a, "?")) for a in axes)
            raise AssertionError(
                f"{where}: {name} has shape {shape}, expected ({', '.join(axes)}) = ({wanted})"
            )
