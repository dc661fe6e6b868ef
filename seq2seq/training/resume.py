"""What may change when a run is resumed, and the message that says what did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Parts of the config that must not change when a run is resumed (Adam's beta2 is restored
# from the checkpoint's optimizer state, so another value would be silently ignored).
FROZEN_ON_RESUME = ("seed", "data", "model", "attention", "train.lr_schedule", "train.adam_beta2")
#: Frozen settings that are paths: compared by the place they name, not their spelling.
PATH_KEYS = ("path", "dir")


def frozen_differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Every frozen setting that differs between a checkpoint's config and today's; a change
    of network first (a checkpoint from before ``model.kind`` holds a GRU's weights)."""
    kinds = (saved.get("model", {}).get("kind", "rnn"), now.get("model", {}).get("kind", "rnn"))
    first = []
    if kinds[0] != kinds[1]:
        first = [f"the checkpoint holds a model.kind={kinds[0]} network, not a {kinds[1]} one"]
    others = [d for key in FROZEN_ON_RESUME for d in _differences(saved, now, key)]
    return first + [d for d in others if not d.startswith("model.kind ")]


def _same_place(old: object, new: object) -> bool:
    """Whether two spellings of a path name the same place (a run saved with the shipped
    corpus' relative path resumes with today's absolute one)."""
    if not (isinstance(old, str) and isinstance(new, str)):
        return False
    return Path(old).expanduser().resolve() == Path(new).expanduser().resolve()


def _differences(saved: dict[str, Any], now: dict[str, Any], key: str) -> list[str]:
    """``"model.hidden_size is 16 in the checkpoint, 32 now"`` for each differing leaf."""
    if "." in key:
        head, rest = key.split(".", 1)
        return [f"{head}.{d}" for d in _differences(saved.get(head, {}), now.get(head, {}), rest)]
    if key not in saved:  # a setting newer than the checkpoint: it ran with what that meant
        return []
    old, new = saved.get(key), now.get(key)
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            f"{key}.{d}" for k in sorted(old.keys() | new.keys()) for d in _differences(old, new, k)
        ]
    if old == new or (key in PATH_KEYS and _same_place(old, new)):
        return []
    return [f"{key} is {old!r} in the checkpoint, {new!r} now"]
