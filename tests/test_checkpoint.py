"""Checkpoints: damage of any kind is a one-line error; a file carrying code is never run."""

from __future__ import annotations

import io
import random
import zipfile

import pytest
import torch

from seq2seq.errors import UserError
from seq2seq.model.checkpoint import load_checkpoint
from tests.helpers.bad_input import plant_code


def damaged_copies(original: bytes) -> dict[str, bytes]:
    """Truncations, random bytes and bit flips inside a tensor record, all seeded."""
    rng = random.Random(0)
    with zipfile.ZipFile(io.BytesIO(original)) as archive:
        largest = max(archive.infolist(), key=lambda info: info.file_size)
        start = original.find(archive.read(largest.filename))
    flipped = bytearray(original)
    flipped[start + largest.file_size // 2] ^= 0x01
    copies = {
        "empty": b"",
        "one-byte": original[:1],
        "header-only": original[:64],
        "first-half": original[: len(original) // 2],
        "all-but-last-byte": original[:-1],
        "flipped-weight-bit": bytes(flipped),
    }
    for size in (1, 10, 1000, len(original)):
        copies[f"random-{size}"] = rng.randbytes(size)
    return copies


def test_any_damaged_checkpoint_is_a_one_line_user_error(tiny_run, tmp_path):
    original = (tiny_run("additive") / "checkpoints" / "best.pt").read_bytes()
    for name, data in damaged_copies(original).items():
        path = tmp_path / f"{name}.pt"
        path.write_bytes(data)
        with pytest.raises(UserError) as caught:
            load_checkpoint(path)
        message = str(caught.value)
        assert "corrupted" in message and "\n" not in message, (name, message)
        assert "Python objects" not in message, (name, message)  # damage is not "code"


def test_crafted_checkpoint_would_run_code_but_is_refused(tmp_path):
    marker, path = tmp_path / "pwned", tmp_path / "best.pt"
    plant_code(path, marker)
    torch.load(path, weights_only=False)  # the payload is real: an unsafe load runs it
    assert marker.exists()
    marker.unlink()
    with pytest.raises(UserError, match="refusing"):
        load_checkpoint(path)
    assert not marker.exists()
