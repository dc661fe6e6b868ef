"""Who may use the explorer: its own page, reached under a name that means this server.

A browser lets a page of any site send requests to a server on this machine; it only keeps
the page from reading most answers. Three checks, each a one-line refusal like every other
(:class:`Guard`), leave the API to the explorer's own page:

* **Host** names this server: ``localhost``, the ``--host`` given, this machine's name when
  it serves other machines, or an IP address, with the port it listens on. A DNS-rebinding
  page reaches the server under the attacker's name (``rebind.evil.example``), and its
  requests carry that name: refused (400). An address cannot be rebound, so any is taken.
* **Origin**, which a browser sends with a page's POST and with every request of another
  origin, is the page's own: ``http://`` and the Host. Another site's page: refused (403).
* A POST is JSON (``Content-Type: application/json``): a page of another site may send a
  ``text/plain`` body without asking first (no CORS preflight), never a JSON one (415).

Every answer — the page, the API, a refusal, 404, 405, a 500 — leaves with
:data:`SECURITY_HEADERS`: the page's Content-Security-Policy allows nothing from anywhere
but this server.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seq2seq.explorer.inputs import EXAMPLE, RequestError

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
JSON = "application/json"
LOCAL_NAME = "localhost"
#: The address the server listens on unless ``--host`` says otherwise.
LOOPBACK = "127.0.0.1"


class Guard:
    """ASGI middleware: refuses a request whose Host, Origin or Content-Type is not the
    explorer page's (see the module), and adds :data:`SECURITY_HEADERS` to every answer.

    ``host``: the ``--host`` the server was started with (a name or an address).
    """

    def __init__(self, app: ASGIApp, host: str = LOOPBACK) -> None:
        self.app = app
        self.names = {LOCAL_NAME, host.lower()}
        if not is_loopback(host):
            self.names.add(socket.gethostname().lower())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = with_security_headers(message.get("headers", []))
                message = {**message, "headers": headers}
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def refusal(self, scope: Scope) -> JSONResponse | None:
        """The answer to a request from elsewhere, or None for one of the page's own."""
        headers = {name.lower(): value.decode("latin-1") for name, value in scope["headers"]}
        address, port = scope.get("server") or (LOOPBACK, 0)
        here = page_url(address, port)
        host = headers.get(b"host", "")
        if not self.names_this_server(host, port):
            error = RequestError(
                f"Host {host or '(none)'} is not this server; open the page at {here}", 400
            )
        elif b"origin" in headers and headers[b"origin"].lower() != f"http://{host.lower()}":
            error = RequestError(
                f"a page of {headers[b'origin']} may not use this server; open the page at {here}",
                403,
            )
        elif scope["method"] == "POST" and media_type(headers.get(b"content-type", "")) != JSON:
            error = RequestError(
                f"send the request as JSON (Content-Type: {JSON}), like {EXAMPLE}", 415
            )
        else:
            return None
        return refused(error)

    def names_this_server(self, host: str, port: int) -> bool:
        """Whether a Host header (``name[:port]``) is this server at ``port``."""
        try:
            parts = urlsplit(f"//{host}")
            name, given_port = parts.hostname, parts.port or 80
        except ValueError:  # a port that is not a number
            return False
        if not name or given_port != port:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return name in self.names
        return True


def page_url(address: str, port: int) -> str:
    """The page's address on ``address:port`` (an IPv6 address in brackets)."""
    return f"http://{f'[{address}]' if ':' in address else address}:{port}/"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address) only ever means this machine."""
    if host == LOCAL_NAME:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def media_type(content_type: str) -> str:
    """``application/json`` of ``application/json; charset=utf-8``."""
    return content_type.split(";", 1)[0].strip().lower()


def with_security_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` plus each of :data:`SECURITY_HEADERS` they lack."""
    present = {name.lower() for name, _ in headers}
    added = [
        (name.lower().encode(), value.encode())
        for name, value in SECURITY_HEADERS.items()
        if name.lower().encode() not in present
    ]
    return [*headers, *added]


def refused(error: RequestError) -> JSONResponse:
    """The one-line answer to a refused request: ``{"error": ...}`` with its status."""
    return JSONResponse({"error": error.message}, error.status)
