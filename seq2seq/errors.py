"""User-facing errors: one clear line, a non-zero exit, no traceback."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

DEBUG_ENV = "SEQ2SEQ_DEBUG"
#: Exit codes of the shell conventions: 128 + SIGINT, 128 + SIGPIPE.
INTERRUPTED_EXIT = 130
BROKEN_PIPE_EXIT = 141

#: The ``errno`` values that can only mean a write failed for want of space or permission to
#: write there; any OSError carrying one ends a script in one line (:func:`exit_on_user_error`).
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
READ_ONLY = (errno.EROFS,)
NOT_WRITABLE = (errno.EACCES, errno.EPERM)


class UserError(Exception):
    """A mistake the user can fix; its message says what is wrong and how to fix it.

    ``exit_code`` is the script's exit status (2; a subclass may say otherwise, e.g. 128 + a
    signal); ``silent`` errors end the script without a line (another process says it)."""

    exit_code = 2
    silent = False


class WriteError(UserError):
    """A file could not be written (full disk, read-only place, a folder in the way ...).

    ``path`` is the file; ``reason`` says why in a few words, without advice, so a caller
    can give advice of its own (``evaluate.py``: the scores were printed but not recorded).
    """

    def __init__(self, path: str | Path, reason: str, advice: str = "choose another place") -> None:
        super().__init__(f"cannot write {path}: {reason}; {advice}")
        self.path = Path(path)
        self.reason = reason

    @classmethod
    def from_os_error(cls, path: str | Path | None, err: OSError) -> WriteError:
        """The one-line error for ``err`` raised while writing ``path`` (or ``err.filename``)."""
        target = Path(path if path is not None else err.filename or "the file")
        folder = target.parent
        code = err.errno
        if code in NO_SPACE:
            return cls(
                target, "no space left on its device", "free some space, or choose another place"
            )
        if code in READ_ONLY:
            return cls(target, f"{folder} is on a read-only file system")
        if code in NOT_WRITABLE:
            return cls(target, f"{folder} is not writable ({err.strerror or 'permission denied'})")
        if code == errno.EISDIR:
            return cls(target, "it is a folder", "give a file name")
        if code in (errno.ENOTDIR, errno.EEXIST):
            return cls(target, "a part of that path is a file, not a folder")
        return cls(target, err.strerror or str(err))


def is_write_failure(err: BaseException) -> bool:
    """Whether ``err`` is an OSError that only a write raises (no space, read-only)."""
    return isinstance(err, OSError) and err.errno in (*NO_SPACE, *READ_ONLY)


def debug_enabled() -> bool:
    """Full tracebacks are shown when ``SEQ2SEQ_DEBUG=1`` or ``HYDRA_FULL_ERROR=1``."""
    return any(
        os.environ.get(name, "") not in ("", "0") for name in (DEBUG_ENV, "HYDRA_FULL_ERROR")
    )


@contextmanager
def one_line_errors(quiet: bool = False) -> Iterator[None]:
    """Inside, a script never ends in a traceback the user cannot act on:

    * a :class:`UserError` prints ``error: ...`` and exits with 2;
    * an OSError only a write raises (no space left, a read-only file system), from code
      that did not say which file it was writing, is the same one line (a :class:`WriteError`);
    * Ctrl-C (``KeyboardInterrupt``) prints ``interrupted`` and exits with 130;
    * a closed stdout (``script | head``: ``BrokenPipeError``) exits quietly with 141, stdout
      pointed at ``/dev/null`` first so that Python's final flush does not fail again.

    ``quiet`` (a rank above 0, whose rank 0 says the same): a :class:`UserError` or Ctrl-C
    exits with 2 without a word. ``SEQ2SEQ_DEBUG=1`` (or ``HYDRA_FULL_ERROR=1``) shows the
    traceback instead.
    """
    try:
        yield
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(BROKEN_PIPE_EXIT) from None
    except KeyboardInterrupt:
        if debug_enabled():
            raise
        if quiet:
            raise SystemExit(2) from None
        print("interrupted", file=sys.stderr)
        raise SystemExit(INTERRUPTED_EXIT) from None
    except (UserError, OSError) as err:
        if debug_enabled() or not (isinstance(err, UserError) or is_write_failure(err)):
            raise
        if isinstance(err, OSError):
            err = WriteError.from_os_error(None, err)
        if not quiet and not err.silent:
            print(f"error: {err}", file=sys.stderr)
        raise SystemExit(err.exit_code) from None


def exit_on_user_error(main: Callable[..., T]) -> Callable[..., T]:
    """Run a script's ``main`` inside :func:`one_line_errors`."""

    @wraps(main)
    def wrapper(*args: object, **kwargs: object) -> T:
        with one_line_errors():
            return main(*args, **kwargs)

    return wrapper


def _silence_stdout() -> None:
    """Point file descriptor 1 at ``/dev/null``: what is still buffered goes nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (e.g. replaced in a test)
        pass
