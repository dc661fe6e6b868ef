"""Checkpoints: damage of any kind is a one-line error; a file carrying code is never run; a
save that cannot write, a device that is not there and weights of another shape say so."""

from __future__ import annotations

import errno
import io
import os
import random
import re
import shutil
import zipfile
from dataclasses import asdict, replace

import pytest
import torch

import seq2seq.model.checkpoint as checkpoint_module
from seq2seq.data.vocab import SPECIALS, Vocab
from seq2seq.errors import UserError
from seq2seq.model.checkpoint import (
    Checkpoint,
    load_checkpoint,
    model_from_checkpoint,
    save_checkpoint,
)
from tests.helpers.bad_input import DELETE, failing_with, full_disk_open, hand_edited, plant_code
from tests.helpers.models import spec_of, tiny_model


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


# ------------------------------------------------------------------ saving where it cannot
def small_checkpoint(seed: int = 0) -> Checkpoint:
    """A checkpoint of :func:`tiny_model` (vocabularies of 20 and 25 entries)."""
    model = tiny_model(seed=seed)
    vocab = {side: Vocab.build([[f"w{k}" for k in range(size - len(SPECIALS))]]).to_dict()
             for side, size in (("src", 20), ("tgt", 25))}  # fmt: skip
    return Checkpoint(
        model=model.state_dict(), optimizer={}, scheduler={}, rng={}, state={"step": seed},
        model_spec=asdict(model.spec), vocab=vocab, config={}, max_src_len=5,
    )  # fmt: skip


def test_a_full_disk_is_one_line_and_leaves_the_old_checkpoint_and_no_temporary(
    tmp_path, monkeypatch
):
    path = tmp_path / "best.pt"
    save_checkpoint(path, small_checkpoint(0))
    before = path.read_bytes()
    monkeypatch.setattr(checkpoint_module, "open", full_disk_open(), raising=False)
    with pytest.raises(UserError) as caught:
        save_checkpoint(path, small_checkpoint(1))
    message = str(caught.value)
    assert message.startswith(f"cannot write {path}: no space left") and "\n" not in message
    assert [p.name for p in tmp_path.iterdir()] == ["best.pt"]
    assert path.read_bytes() == before


def test_a_read_only_run_folder_is_one_line_and_leaves_no_temporary(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "replace", failing_with(errno.EROFS))
    with pytest.raises(UserError, match="read-only file system; choose another place"):
        save_checkpoint(tmp_path / "last.pt", small_checkpoint())
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ devices and shapes
@pytest.mark.parametrize("device", ["cuda:5", "mps", "tpu", "gpu"])
def test_a_device_problem_is_never_called_corruption(tmp_path, monkeypatch, device):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    path = tmp_path / "best.pt"
    save_checkpoint(path, small_checkpoint())
    with pytest.raises(UserError) as caught:
        load_checkpoint(path, map_location=device)
    message = str(caught.value)
    assert "corrupt" not in message and "truncated" not in message, message
    assert device in message and "\n" not in message


def test_weights_that_do_not_fit_the_spec_name_the_tensor_and_both_shapes():
    stored = small_checkpoint()
    stored.model_spec = {**stored.model_spec, "hidden_size": 32}  # weights of hidden size 16
    with pytest.raises(UserError) as caught:
        model_from_checkpoint(stored)
    message = str(caught.value)
    assert re.search(r"[\w.]+ is \d+(×\d+)* in the checkpoint but \d+(×\d+)* in", message)
    assert "more" in message and "\n" not in message


@pytest.mark.parametrize("stored_kind", ["rnn", "transformer"])
def test_weights_of_one_network_kind_under_the_other_say_so(stored_kind: str):
    from seq2seq.model.transformer import Transformer

    stored = small_checkpoint()
    if stored_kind == "transformer":
        spec = spec_of(
            20, 25, kind="transformer", attention="multihead", num_heads=2, hidden_size=16,
            ff_size=32, encoder_layers=1, decoder_layers=1,
        )  # fmt: skip
        stored.model = Transformer(spec).state_dict()  # the spec still says rnn
        other = "rnn"
    else:
        stored.model_spec = {**stored.model_spec, "kind": "transformer"}
        other = "transformer"
    with pytest.raises(UserError) as caught:
        model_from_checkpoint(stored)
    assert str(caught.value) == (
        f"checkpoint is inconsistent: its weights are a model.kind={stored_kind} network's but "
        f"its model_spec says model.kind={other}; use another checkpoint or retrain"
    )


# ------------------------------------------------------------------ hand-edited payloads
#: Plain data that ``weights_only`` loads, edited by hand: (key, value, what the line says).
HAND_EDITS = [
    ("model_spec.hidden_size", -4, "'model_spec.hidden_size' should be positive, got -4"),
    ("model_spec.hidden_size", "32", "'model_spec.hidden_size' should be an integer, got '32'"),
    ("model_spec.attention", "evil",
     "'model_spec.attention' should be one of none, additive, dot, multihead, got 'evil'"),
    ("model_spec.kind", "cnn", "'model_spec.kind' should be one of rnn, transformer, got 'cnn'"),
    ("model_spec.decoder", "sideways",
     "'model_spec.decoder' should be one of luong, bahdanau, got 'sideways'"),
    ("model_spec.dropout", 1.5, "'model_spec.dropout' should be in [0, 1), got 1.5"),
    ("model_spec.alignment_layer", 7, "'model_spec.alignment_layer' should be from -"),
    ("model_spec.colour", "red", "'model_spec.colour' is not a field of a model spec"),
    ("config.data", DELETE, "'config.data' is missing"),
    ("config.data.char_level_src", "yes",
     "'config.data.char_level_src' should be true or false, got 'yes'"),
    ("max_src_len", "12", "'max_src_len' should be an integer, got '12'"),
    ("max_src_len", 0, "'max_src_len' should be positive, got 0"),
    ("state.step", "abc", "'state.step' should be a whole number, got 'abc'"),
    ("vocab.src.tokens", ["a", "b"], "'vocab.src' is not a vocabulary (a vocabulary must start"),
    ("model", [1, 2], "'model' should be an object of values, got [1, 2]"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value", "says"), [pytest.param(*row, id=f"{row[0]}={row[1]!r}") for row in HAND_EDITS]
)
def test_a_hand_edited_checkpoint_is_one_line_naming_the_file_and_the_field(
    tiny_run, tmp_path, key, value, says
):
    path = tmp_path / "best.pt"
    shutil.copy(tiny_run("additive") / "checkpoints" / "best.pt", path)
    hand_edited(key, value)(path, tmp_path / "marker")
    with pytest.raises(UserError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert message.startswith(f"checkpoint {path}: {says}"), message
    assert message.endswith("use another checkpoint (e.g. --checkpoint last.pt) or retrain")
    assert "\n" not in message


def test_heads_that_do_not_divide_the_key_size_are_refused_before_anything_is_built(
    tiny_run, tmp_path
):
    path = tmp_path / "best.pt"
    payload = torch.load(tiny_run("additive") / "checkpoints" / "best.pt", weights_only=True)
    payload["model_spec"] |= {"attention": "multihead", "num_heads": 3}  # of 2 × 16
    torch.save(payload, path)
    with pytest.raises(UserError, match=re.escape(
        f"checkpoint {path}: 'model_spec' does not describe a model this version builds "
        "(num_heads=3 must divide the key size 32)"
    )):  # fmt: skip
        load_checkpoint(path)


def test_a_model_spec_too_large_for_the_memory_is_refused_before_anything_is_allocated(
    tiny_run, tmp_path, monkeypatch
):
    path = tmp_path / "best.pt"
    payload = torch.load(tiny_run("additive") / "checkpoints" / "best.pt", weights_only=True)
    payload["model_spec"]["hidden_size"] = 10**7  # a GRU of about 9 PB
    torch.save(payload, path)
    monkeypatch.setattr("seq2seq.model.checkpoint.available_memory", lambda: 64 << 30)
    with pytest.raises(UserError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert message.startswith(
        f"checkpoint {path}: 'model_spec' (hidden_size=10000000, embed_size=16) describes a model "
        "of 2,300,"
    ), message
    assert "this machine has 64.0 GiB available" in message


def test_a_transformer_spec_whose_position_tables_alone_are_too_large_is_never_built(
    monkeypatch,
):
    from seq2seq.model.memory import memory_needed

    spec = spec_of(20, 25, kind="transformer", attention="multihead", num_heads=2,
                   hidden_size=16, max_positions=10**12)  # fmt: skip
    parameters, needed = memory_needed(spec, 4, available=64 << 30)
    assert parameters is None and needed == 2 * 4 * 16 * 10**12  # not counted: never built


def test_the_position_tables_are_counted_from_their_shape():
    from seq2seq.model.memory import position_table_bytes
    from seq2seq.model.transformer import Transformer

    spec = spec_of(20, 25, kind="transformer", attention="multihead", num_heads=2,
                   hidden_size=16, ff_size=32, max_positions=40)  # fmt: skip
    model = Transformer(spec)
    assert position_table_bytes(spec) == sum(b.numel() * b.element_size() for b in model.buffers())
    assert position_table_bytes(replace(spec, kind="rnn", attention="additive")) == 0
