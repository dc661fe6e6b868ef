"""User-facing errors: one clear line, a non-zero exit, no traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

T = TypeVar("T")

DEBUG_ENV = "SEQ2SEQ_DEBUG"


class UserError(Exception):
    """A mistake the user can fix; its message says what is wrong and how to fix it."""


def debug_enabled() -> bool:
    """Full tracebacks are shown when ``SEQ2SEQ_DEBUG=1`` or ``HYDRA_FULL_ERROR=1``."""
    return any(
        os.environ.get(name, "") not in ("", "0") for name in (DEBUG_ENV, "HYDRA_FULL_ERROR")
    )


def exit_on_user_error(main: Callable[..., T]) -> Callable[..., T]:
    """Wrap a script's ``main``: a :class:`UserError` prints ``error: ...`` and exits with 2."""

    @wraps(main)
    def wrapper(*args: object, **kwargs: object) -> T:
        try:
            return main(*args, **kwargs)
        except UserError as err:
            if debug_enabled():
                raise
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper
