"""Bounding the explorer's connections, so that no client can hold the server.

uvicorn closes a connection left idle after an answer (``timeout_keep_alive``) and answers 503
past ``limit_concurrency`` connections, but it waits for ever for a connection's first
request, or for the rest of a half-sent one, and it accepts connections until the process runs
out of file descriptors: then no request gets in, and asyncio's accept loop reports the
failure, with a traceback, for every waiting connection, every second. Here
(:func:`bounded_server`):

* **a deadline**: a connection delivers a whole request (headers and body) within
  :data:`REQUEST_SECONDS` of opening or of its previous answer, else it is closed — uvicorn's
  own keep-alive timeout, extended to the first request and to a request still arriving
  (:class:`BoundedH11Protocol`);
* **a cap**: at most :data:`MAX_CONNECTIONS` connections, fewer where the descriptor limit
  (``ulimit -n``) leaves less room (:func:`connection_cap`). A connection past the cap closes
  the one that has waited longest for its client's request, so a real request always gets in;
  when every connection is being answered, uvicorn answers the newcomer 503;
* **headers**: h11 keeps at most :data:`MAX_HEADER_BYTES` of a request's unfinished head
  (uvicorn answers 400 past it);
* **descriptors gone anyway** (taken by something else): one line on stderr, said again only
  after a quiet minute (:class:`Descriptors`).
"""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

#: How long a connection may take to deliver a whole request, from its opening or from its
#: previous answer (seconds): a browser sends one at once, or keeps the connection idle.
REQUEST_SECONDS = 5
#: The most connections at once (a browser opens up to 6 to one server).
MAX_CONNECTIONS = 64
#: Descriptors kept free for the server itself (its event loop, a file it opens) when the
#: cap is cut to the descriptor limit.
SPARE_DESCRIPTORS = 16
#: Connections the kernel may hold, complete, until the server accepts them; also how many
#: asyncio accepts in one turn of its loop.
BACKLOG = 16
#: Turns of the loop from accepting a connection to closing the one it displaces (accept,
#: make the transport, ``connection_made``, ``connection_lost``): so many batches of
#: :data:`BACKLOG` descriptors may be open beyond the cap.
TURNS_IN_FLIGHT = 4
#: After saying that descriptors ran out, how long they must last before it is said again.
QUIET_SECONDS = 60.0
#: The most of a request's line and headers held while they are still coming (bytes); a
#: browser sends under 2 KiB.
MAX_HEADER_BYTES = 8 * 1024


@dataclass
class Descriptors:
    """The process running out of file descriptors, said in one line.

    asyncio's accept loop calls the loop's exception handler for each connection it cannot
    accept, with a traceback, and retries every second; :meth:`report` is that handler: one
    line, then quiet until descriptors have lasted :data:`QUIET_SECONDS`. Anything else goes
    to asyncio's own handler. ``limit``: ``ulimit -n``.
    """

    limit: int | None
    clock: Callable[[], float] = time.monotonic
    last_out: float | None = field(default=None, init=False)  # the clock's, when last out

    def report(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if not isinstance(error, OSError) or error.errno != errno.EMFILE:
            loop.default_exception_handler(context)
            return
        now, last_out = self.clock(), self.last_out
        self.last_out = now
        if last_out is None or now - last_out >= QUIET_SECONDS:
            limit = "" if self.limit is None else f" (the limit is {self.limit})"
            print(
                f"warning: out of file descriptors{limit}: new connections wait until open "
                "ones close; raise the limit with ulimit -n",
                file=sys.stderr,
                flush=True,
            )


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 connection with a deadline for each request (``timeout_keep_alive``
    seconds) and room made past the cap (``limit_concurrency``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline: asyncio.TimerHandle | None = None
        self.waiting_since = 0.0  # the loop's time when the clock started

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.await_request()
        self.make_room()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self.await_request()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        super().connection_lost(exc)

    @property
    def waiting(self) -> bool:
        """Whether the client owes a request: none yet, the last one answered, or the body of
        this one still to come."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or cycle.more_body

    def await_request(self) -> None:
        """Start the clock: a whole request within ``timeout_keep_alive`` seconds."""
        if self.deadline is not None:
            self.deadline.cancel()
        self.waiting_since = self.loop.time()
        self.deadline = self.loop.call_later(self.timeout_keep_alive, self.expire)

    def expire(self) -> None:
        """The deadline: close the connection if its client still owes the request (one
        being answered is left to finish)."""
        if self.waiting:
            self.transport.close()

    def make_room(self) -> None:
        """Past the cap, close the connections that have waited longest for a request.

        A closed one leaves the server's count at once, not a turn of the loop later (when
        ``connection_lost`` comes): the newcomer's request is counted against the cap next.
        """
        assert self.limit_concurrency is not None
        excess = len(self.connections) - (self.limit_concurrency - 1)
        idle = [c for c in self.connections if c is not self and c.waiting]
        for connection in sorted(idle, key=lambda c: c.waiting_since)[: max(excess, 0)]:
            connection.transport.close()
            self.connections.discard(connection)


def descriptor_limit() -> int | None:
    """The process' limit on open files and sockets (``ulimit -n``), None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def connection_cap(limit: int | None) -> int:
    """:data:`MAX_CONNECTIONS`, or fewer where the descriptor ``limit`` leaves less room:
    less those open now (``/dev/fd``), :data:`SPARE_DESCRIPTORS` and the connections in
    flight. The cap, not the descriptor limit, is then what turns connections away."""
    if limit is None:
        return MAX_CONNECTIONS
    in_flight = TURNS_IN_FLIGHT * BACKLOG
    free = limit - len(os.listdir("/dev/fd")) - SPARE_DESCRIPTORS - in_flight
    return max(2, min(MAX_CONNECTIONS, free))  # uvicorn serves fewer than limit_concurrency


class BoundedServer(uvicorn.Server):
    """uvicorn's server with :class:`Descriptors` as its event loop's exception handler."""

    def __init__(self, config: uvicorn.Config, descriptors: Descriptors) -> None:
        super().__init__(config)
        self.descriptors = descriptors

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(self.descriptors.report)
        await super().startup(sockets)


def bounded_server(app: ASGIApp) -> BoundedServer:
    """A uvicorn server for ``app`` with the module's bounds (for ``run(sockets=...)``)."""
    limit = descriptor_limit()
    config = uvicorn.Config(
        app,
        http=BoundedH11Protocol,
        timeout_keep_alive=REQUEST_SECONDS,
        limit_concurrency=connection_cap(limit),
        backlog=BACKLOG,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_level="error",  # not a warning per refused connection: a client could flood it
        access_log=False,
        lifespan="off",
    )
    return BoundedServer(config, Descriptors(limit))
