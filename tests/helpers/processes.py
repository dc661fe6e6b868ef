"""No test leaves a process behind: every process a test starts (with :func:`script_env
<tests.helpers.runs.script_env>`, i.e. the test's environment) carries the test's mark in its
environment, and so do the workers, ranks and jobs those start — also once orphaned. After the
test, :func:`end_marked` kills whatever still carries the mark, so a hang or a failed test
cannot leave a launcher's workers training on into the next test."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

MARK = "SEQ2SEQ_TEST_MARK"


def marked(mark: str) -> list[int]:
    """The pids of the live processes whose environment holds ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if needle in environment.split(b"\0"):
            found.append(int(entry.name))
    return found


def end_marked(mark: str, timeout: float = 10.0) -> list[int]:
    """Kill (SIGKILL) every process carrying ``mark`` and wait until they are gone; returns
    the pids that were still there."""
    left = marked(mark)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def rank_pid(launcher_pid: int, rank: int) -> int | None:
    """The pid of the worker with ``RANK=rank`` among the children of a launcher (torchrun or
    ours), once it exists."""
    children = Path(f"/proc/{launcher_pid}/task/{launcher_pid}/children")
    for pid in children.read_text().split() if children.exists() else []:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        if f"RANK={rank}".encode() in environ:
            return int(pid)
    return None
