"""Serving the explorer: bind the port first (a busy port, an address this machine does not
have: one line, before anything is served), say where, and run uvicorn on that socket, its
connections bounded (:mod:`~seq2seq.explorer.connections`), until Ctrl-C."""

from __future__ import annotations

import errno
import socket
import sys

from starlette.types import ASGIApp

from seq2seq.errors import UserError
from seq2seq.explorer.connections import BACKLOG, bounded_server
from seq2seq.explorer.guard import LOOPBACK, is_loopback, page_url


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: a free one), or a one-line
    :class:`UserError` saying why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        raise UserError(
            f"--host {host} is not an address of this machine ({err.strerror})"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRNOTAVAIL:
            raise UserError(
                f"--host {host} is not an address of this machine ({err.strerror}); "
                f"use {LOOPBACK} (this machine only) or 0.0.0.0 (every network)"
            ) from None
        raise UserError(
            f"cannot listen on {host}:{port}: {err.strerror or err}; "
            "pass another --port (0 picks a free one)"
        ) from None
    return sock


def url_of(sock: socket.socket) -> str:
    return page_url(*sock.getsockname()[:2])


def serve(app: ASGIApp, host: str, port: int, what: str) -> None:
    """Serve ``app`` on ``host:port`` until Ctrl-C: uvicorn shuts down cleanly, then this
    raises :class:`KeyboardInterrupt` (the script's one line and exit 130)."""
    sock = bind(host, port)
    if not is_loopback(host):
        print(
            f"warning: --host {host} lets other machines reach this page; "
            f"the default {LOOPBACK} keeps it on this one",
            file=sys.stderr,
        )
    print(f"serving {what} at {url_of(sock)} (Ctrl-C stops)", flush=True)
    server = bounded_server(app)
    server.run(sockets=[sock])  # returns once a signal has stopped it
    if server.should_exit:
        # uvicorn re-raises the signal after its shutdown, but asyncio's own SIGINT handler may
        # take it as the cancel of a task that has already ended, and run() returns quietly
        raise KeyboardInterrupt
