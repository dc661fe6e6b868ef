"""Where this process sits in a launch, from torchrun's environment; readable without torch,
so that the command line stays quick (``--help``, bad input)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from seq2seq.errors import UserError

#: Where the ranks of a process group meet; torchrun sets them beside the ranks.
RENDEZVOUS_VARIABLES = ("MASTER_ADDR", "MASTER_PORT")
_UNSET = "start it with torchrun, which sets them all, or unset WORLD_SIZE, RANK, LOCAL_RANK and "
_UNSET += "LOCAL_WORLD_SIZE to train in one process"


@dataclass(frozen=True)
class WorldPosition:
    """Where this process sits in a torchrun launch (torchrun's ``RANK``, ``LOCAL_RANK``,
    ``WORLD_SIZE`` and ``LOCAL_WORLD_SIZE``); a plain ``python`` start is rank 0 of 1."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    launched: bool = False  # started by torchrun or the elastic launcher (even as 1 of 1)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorldPosition:
        """This process's position, from ``env`` (the environment); a :class:`UserError` for
        variables left over from another launch that cannot start a run: a value that is not
        a whole number, a rank outside the world, or several ranks with nowhere to meet."""
        env = os.environ if env is None else env
        position = cls(
            rank=_whole_number(env, "RANK", 0),
            local_rank=_whole_number(env, "LOCAL_RANK", 0),
            world_size=_whole_number(env, "WORLD_SIZE", 1),
            local_world_size=_whole_number(env, "LOCAL_WORLD_SIZE", 1),
            launched="WORLD_SIZE" in env,
        )
        if position.world_size < 1 or not 0 <= position.rank < position.world_size:
            raise UserError(
                f"RANK={position.rank} is not a rank of WORLD_SIZE={position.world_size} "
                f"(ranks are 0 to WORLD_SIZE - 1); {_UNSET}"
            )
        missing = [name for name in RENDEZVOUS_VARIABLES if not env.get(name)]
        if position.distributed and missing:
            raise UserError(
                f"WORLD_SIZE={position.world_size} makes this process rank {position.rank} of "
                f"{position.world_size}, but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not set; {_UNSET}"
            )
        return position

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _whole_number(env: Mapping[str, str], name: str, default: int) -> int:
    """``env[name]`` as an int, ``default`` when unset; a :class:`UserError` when it is not
    one."""
    raw = env.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise UserError(
            f"{name}={raw!r} is not a whole number; torchrun sets {name} for the processes it "
            f"starts: {_UNSET}"
        ) from None
