"""Atomic writes: a temporary file of another writer never collides with ours; a write that
fails (full disk, read-only place, a folder in the way) is one line and leaves nothing."""

from __future__ import annotations

import errno
import os
import stat
import threading

import pytest

import seq2seq.files
from seq2seq.errors import UserError
from seq2seq.files import atomic_write_bytes, atomic_write_text, write_json
from tests.helpers.bad_input import failing_with, full_disk_open


def test_a_stale_temporary_of_another_writer_does_not_block_a_write(tmp_path):
    for name in ("train.tsv", "corpus.json"):
        (tmp_path / f".{name}.tmp").mkdir()  # what a fixed temporary name would collide with
    atomic_write_text(tmp_path / "train.tsv", "a\tb\n")
    write_json(tmp_path / "corpus.json", {"seed": 0})
    assert (tmp_path / "train.tsv").read_text(encoding="utf-8") == "a\tb\n"
    assert (tmp_path / "corpus.json").read_text(encoding="utf-8") == '{\n  "seed": 0\n}\n'


def test_no_temporary_is_left_behind(tmp_path):
    atomic_write_text(tmp_path / "x.txt", "x")
    atomic_write_text(tmp_path / "x.txt", "y")
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]
    assert (tmp_path / "x.txt").read_text(encoding="utf-8") == "y"


def test_a_full_disk_is_one_line_and_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    target.write_text("old", encoding="utf-8")
    monkeypatch.setattr(seq2seq.files, "open", full_disk_open(), raising=False)
    with pytest.raises(UserError) as caught:
        write_json(target, {"bleu": 1.0})
    message = str(caught.value)
    assert message.startswith(f"cannot write {target}: no space left") and "\n" not in message
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]
    assert target.read_text(encoding="utf-8") == "old"


@pytest.mark.parametrize(
    ("code", "says"),
    [(errno.EROFS, "is on a read-only file system"), (errno.EACCES, "is not writable")],
)
def test_a_read_only_place_is_one_line_and_leaves_no_temporary(tmp_path, monkeypatch, code, says):
    monkeypatch.setattr(os, "replace", failing_with(code))
    with pytest.raises(UserError) as caught:
        atomic_write_text(tmp_path / "comparison.md", "table")
    assert str(caught.value).startswith(
        f"cannot write {tmp_path / 'comparison.md'}: {tmp_path} {says}"
    )
    assert str(caught.value).endswith("; choose another place")
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_parent_folder_that_must_be_made_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "mkdir", failing_with(errno.EROFS))
    with pytest.raises(UserError, match="read-only file system; choose another place"):
        atomic_write_text(tmp_path / "new" / "x.txt", "x")


def test_a_folder_in_the_way_is_one_line(tmp_path):
    (tmp_path / "out.png").mkdir()
    with pytest.raises(UserError, match=r"out\.png: it is a folder; give a file name"):
        atomic_write_bytes(tmp_path / "out.png", b"png")
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]


def test_a_special_file_is_written_in_place_not_replaced(tmp_path):
    """A FIFO (or /dev/stdout, /dev/full) is written to, never renamed over."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    try:
        atomic_write_bytes(fifo, b"through the pipe")
    finally:
        # If the write never opened the FIFO, the reader still waits for a writer: open it
        # without blocking. (A blocking open would wait forever for a reader when the reader
        # has already read to the end and is only returning: that race hung a worker.)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as error:  # no reader left (ENXIO): nothing to unblock
            assert error.errno == errno.ENXIO
        reader.join(timeout=10)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert received == [b"through the pipe"]


def test_dev_full_is_no_space_left(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with pytest.raises(UserError, match="cannot write /dev/full: no space left"):
        atomic_write_bytes("/dev/full", b"x" * 10000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
