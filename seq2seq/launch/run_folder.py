"""The run folder of one training: claimed by one command at a time, written to only once the
command is accepted.

Hydra makes the folder and composes the config; everything else waits:

1. :meth:`RunFolder.claim` takes an exclusive lock on the folder itself (``flock`` on its
   directory: nothing is written for it, the kernel releases it on any exit, so a dead
   process's lock is no lock), and a second training into the same folder refuses with one
   line instead of mixing its outputs into the first one's.
2. The trainer checks the command against the folder (a finished run is not overwritten, a
   resumed one must keep its settings) and builds the run; nothing is written meanwhile. The
   lines logged meanwhile are held in memory.
3. :meth:`RunFolder.accept` writes the Hydra record (``.hydra/config.yaml``, ``hydra.yaml``,
   ``overrides.yaml``) and starts ``train.log`` with the held lines.

A refused command leaves the folder as it was, and removes it when it made it
(:meth:`RunFolder.abandon`), so failed commands leave no empty run folders. Which folder a
command makes is known only before Hydra makes it: :func:`note_new_folder` (Hydra's
``on_run_start``, :mod:`.callbacks`) records a run folder that does not exist yet; a folder
the user made, or a link to one, is never removed. A sweep's job folder, made by Hydra inside
the sweep's folder, is the sweep's when it is empty.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import logging.handlers
import os
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from seq2seq.config.schema import Config, to_plain
from seq2seq.errors import UserError
from seq2seq.files import atomic_write_text

#: Set by the launcher for its workers: the run folder it holds the lock of for them.
LOCKED_ENV = "SEQ2SEQ_RUN_DIR_LOCKED"
#: Set before Hydra makes the run folder, when there is none yet: the folder this command (and
#: the workers it starts, which inherit it) may remove when the command is refused.
MADE_ENV = "SEQ2SEQ_RUN_DIR_MADE"
_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


def check_folder_path(path: Path, option: str, purpose: str = "the run") -> None:
    """A :class:`UserError` when ``path`` (``option``'s value) cannot be a folder because it,
    or a folder above it, is a file (Hydra would fail to make it with a traceback)."""
    for place in (path, *path.parents):
        if place.is_dir():
            return
        if os.path.lexists(place):
            what = "a link to nothing" if place.is_symlink() else "a file, not a folder"
            raise UserError(
                f"{option}={path}: {place} is {what}; choose a folder for {purpose} (a new one, "
                "or an empty one)"
            )


def note_new_folder(path: str | Path) -> None:
    """Record that ``path`` is made by this command, if it does not exist yet (called before
    Hydra makes it); see :data:`MADE_ENV`."""
    if not os.path.lexists(path):
        os.environ[MADE_ENV] = os.path.abspath(path)


class RunFolder:
    """One run folder and what this command has done to it: ``made_here`` when this command
    made it (:func:`note_new_folder`), or, for a sweep's job (``in_sweep``), when it is empty
    (Hydra made it in the sweep's folder)."""

    def __init__(self, path: str | Path, log_name: str = "train", *, in_sweep: bool = False):
        self.path = Path(path).resolve()
        self.log_name = log_name
        empty = not self.path.exists() or not any(self.path.iterdir())
        self.made_here = os.environ.get(MADE_ENV) == os.path.abspath(path) or (in_sweep and empty)
        self._lock: int | None = None
        self._held: logging.handlers.MemoryHandler | None = None
        self.accepted = False

    @property
    def log_file(self) -> Path:
        return self.path / f"{self.log_name}.log"

    def claim(self) -> None:
        """Lock the folder for this command, or raise :class:`UserError` if another holds it.
        Start holding log lines in memory until :meth:`accept`."""
        if os.environ.get(LOCKED_ENV) == str(self.path):
            self._hold_log()
            return  # the launcher that started this worker holds the lock
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise UserError(
                f"{self.path} is in use by another training; wait for it to end or choose "
                "another folder with hydra.run.dir=..."
            ) from None
        self._lock = fd
        self._hold_log()

    def _hold_log(self) -> None:
        self._held = logging.handlers.MemoryHandler(
            capacity=10_000, flushLevel=logging.CRITICAL + 1
        )
        logging.getLogger().addHandler(self._held)

    def accept(self, config: Config, hydra: Any | None) -> None:
        """The command is accepted: write the Hydra record and start ``train.log``."""
        if hydra is not None:
            record = self.path / ".hydra"
            atomic_write_text(record / "config.yaml", OmegaConf.to_yaml(to_plain(config)))
            atomic_write_text(record / "hydra.yaml", OmegaConf.to_yaml({"hydra": hydra}))
            atomic_write_text(
                record / "overrides.yaml", OmegaConf.to_yaml(list(hydra.overrides.task))
            )
        handler = logging.FileHandler(self.log_file, encoding="utf-8")
        handler.setFormatter(logging.Formatter(_FORMAT))
        root = logging.getLogger()
        if self._held is not None:
            self._held.setTarget(handler)
            self._held.flush()
            root.removeHandler(self._held)
            self._held = None
        root.addHandler(handler)
        self.accepted = True

    def abandon(self) -> None:
        """The command was refused: drop the held lines, and remove the folder if this command
        made it (Hydra makes it before the command is checked) and it is still empty."""
        if self._held is not None:
            logging.getLogger().removeHandler(self._held)
            self._held = None
        if self.accepted or not self.made_here:
            return
        with contextlib.suppress(OSError):
            self.path.rmdir()  # only if still empty

    def release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None
