"""Writing files so that a crash never leaves half of one: a temporary file, then a rename;
and reading JSON with every refusal a one-line reason (:func:`parse_json`).

A write that fails (no space left, a read-only place, a folder where the file should go)
is a one-line :class:`~seq2seq.errors.WriteError` naming the file and the reason, and leaves
no temporary file behind; the file it was to replace is kept as it was. A path that exists
and is not a regular file (a FIFO, ``/dev/stdout``, ``/dev/full``) is written in place:
renaming over it would replace it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seq2seq.errors import WriteError


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn an ``OSError`` raised inside the block into a :class:`WriteError` naming ``path``
    (what every write of this project goes through)."""
    try:
        yield
    except OSError as err:
        raise WriteError.from_os_error(path, err) from err


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 ``text`` (``\\n`` line endings) to ``path`` via a temporary file and rename.

    The temporary's name is unique (process id + random), so concurrent writers of one path
    never write into each other's temporary: the last rename wins with a whole file.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` the way :func:`atomic_write_text` writes text."""
    path = Path(path)
    with writing(path):
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if path.exists() and not path.is_file():  # a FIFO or a device: no rename over it
            with open(path, "wb") as handle:
                handle.write(data)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for a read-modify-write (read it, change it, write
    it atomically): other processes locking the same path wait, so none of them reads a
    version another one is about to replace, and no change is lost.

    The lock is ``fcntl.flock`` on a lock file beside it (``.NAME.lock``): the file itself is
    replaced on every write, and a lock on a replaced file excludes no one. The lock file is
    removed on release, so a locker checks, once it holds the lock, that its file is still
    the one at that name (else it locks again). A lock file that cannot be created (a
    read-only folder) is a :class:`WriteError` naming ``path``.
    """
    path = Path(path)
    lock_path = path.with_name(f".{path.name}.lock")
    while True:
        with writing(path):
            handle = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            with writing(path):
                fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
            if _same_file(lock_path, handle):
                try:
                    yield
                finally:
                    os.unlink(lock_path)  # while still held: the next locker makes a new one
                return
        finally:
            os.close(handle)


def _same_file(path: Path, handle: int) -> bool:
    """Whether ``path`` still names the file open as ``handle``."""
    try:
        return os.stat(path).st_ino == os.fstat(handle).st_ino
    except FileNotFoundError:
        return False


def write_json(path: str | Path, data: Any) -> None:
    """Pretty-printed JSON, non-ASCII kept readable, written atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class JSONError(ValueError):
    """Text that :func:`parse_json` cannot read. ``reason`` says what is wrong in a few words;
    ``str()`` adds where, when a place is known (as :class:`json.JSONDecodeError` does)."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(reason + where)
        self.reason = reason


def parse_json(text: str) -> Any:
    """``json.loads(text)``, or a :class:`JSONError`.

    Besides malformed JSON, Python's parser refuses two kinds of valid JSON outside
    :class:`json.JSONDecodeError`: arrays or objects nested deeper than the interpreter's
    recursion limit (:class:`RecursionError`) and an integer of more digits than
    :func:`sys.get_int_max_str_digits` (a :class:`ValueError` that guards against
    quadratic-time conversion). Both are a file or a request to refuse, not a crash.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = f": line {err.lineno} column {err.colno} (char {err.pos})"
        raise JSONError(err.msg, where) from None
    except RecursionError:
        raise JSONError("arrays or objects nested too deeply") from None
    except ValueError:
        raise JSONError(f"a number of more than {sys.get_int_max_str_digits()} digits") from None


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as 64 hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
