"""Writing files so that a crash never leaves half of one: a temporary file, then a rename."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 ``text`` (``\\n`` line endings) to ``path`` via a temporary file and rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.replace(path)


def write_json(path: str | Path, data: Any) -> None:
    """Pretty-printed JSON, non-ASCII kept readable, written atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
