"""The explorer's HTTP side: one page, its script, style and font, and a two-call JSON API.

* ``GET /`` the page; ``/explorer.js``, ``/explorer.css``, ``/cjk.otf`` what it loads — all
  read (or made) once when the app is created and served from memory;
* ``GET /api/runs`` the runs (kind, heads, scores, interventions) and the test sentences to
  pick from;
* ``POST /api/translate`` ``{"text": ..., "beam_size": 1}`` (and optionally one ``"map"``,
  one ``"intervention"``) -> every run's :class:`~seq2seq.explorer.explain.Answer`, or
  ``{"error": one line}`` with a 4xx.

``HEAD`` is answered like ``GET``, without the body. No path ever comes from a request, and
FastAPI's own documentation pages (which load their scripts from a CDN) are off. Only the
explorer's own page may call the API, and every answer carries the security headers
(:class:`~seq2seq.explorer.guard.Guard`). A body larger than
:data:`~seq2seq.explorer.inputs.MAX_BODY_BYTES` is refused (413) before it is read whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from seq2seq.explorer.explain import RunExplorer, check_intervention
from seq2seq.explorer.font import cjk_subset
from seq2seq.explorer.guard import LOOPBACK, Guard, refused
from seq2seq.explorer.inputs import (
    MAPS,
    MAX_BEAM,
    MAX_BODY_BYTES,
    MAX_CHARACTERS,
    RequestError,
    parse_query,
    too_large,
)

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/explorer.js": ("explorer.js", "text/javascript; charset=utf-8"),
    "/explorer.css": ("explorer.css", "text/css; charset=utf-8"),
}
#: What the page's files and the run list answer: HEAD is GET without the body.
READ = ["GET", "HEAD"]


class BodyLimit:
    """ASGI middleware: a request whose ``Content-Length`` is over ``limit`` bytes (or not a
    number) gets 413 at once, before its body is read; a chunked body is counted while it
    arrives (:func:`read_body`)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length", b"0")
            if not length.isdigit() or int(length) > self.limit:
                await refused(too_large())(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, refused (413) as soon as more than ``limit`` bytes have come, and
    (400) when the connection closes before it is whole: the client went away, or the server
    closed it at its deadline (:mod:`~seq2seq.explorer.connections`)."""
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large()
    except ClientDisconnect:
        raise RequestError("the connection closed before the request was whole", 400) from None
    return bytes(body)


def static_files() -> dict[str, bytes]:
    """The page's files, read from the package once."""
    folder = resources.files("seq2seq.explorer") / "static"
    return {route: (folder / name).read_bytes() for route, (name, _) in STATIC.items()}


def page_characters(explorers: Sequence[RunExplorer]) -> list[str]:
    """Everything the page may label in Chinese: the runs' source vocabularies and test
    sentences."""
    texts = [example.text for explorer in explorers for example in explorer.examples]
    for explorer in explorers:
        texts += explorer.run.src_vocab.itos
    return texts


def create_app(explorers: Sequence[RunExplorer], host: str = LOOPBACK) -> ASGIApp:
    """The ASGI app serving ``explorers`` (one run, or two side by side) on ``host`` (the
    ``--host`` given: a name that may reach it)."""
    files = static_files()
    font = cjk_subset(page_characters(explorers))
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    def serve_static(route: str) -> None:
        media_type = STATIC[route][1]

        async def handler() -> Response:
            return Response(files[route], media_type=media_type)

        app.add_api_route(route, handler, methods=READ)

    for route in STATIC:
        serve_static(route)

    @app.api_route("/cjk.otf", methods=READ)
    async def cjk_font() -> Response:
        return Response(font, media_type="font/otf")

    @app.api_route("/api/runs", methods=READ)
    async def runs() -> JSONResponse:
        first = explorers[0]
        return JSONResponse(
            {
                "runs": [explorer.describe() for explorer in explorers],
                "examples": [
                    {"text": e.text, "length": len(e.source), "gold": e.sure is not None}
                    for e in first.examples
                ],
                "limits": {"characters": MAX_CHARACTERS, "beam_size": MAX_BEAM},
                "maps": list(MAPS),
            }
        )

    @app.post("/api/translate")
    async def translate(request: Request) -> JSONResponse:
        try:
            query = parse_query(await read_body(request))
            check_intervention(query.intervention, explorers)
            answers = [
                await run_in_threadpool(
                    explorer.explain, query.text, query.beam_size, query.map, query.intervention
                )
                for explorer in explorers
            ]
        except RequestError as err:
            return refused(err)
        return JSONResponse(
            {
                "text": query.text,
                "beam_size": query.beam_size,
                "runs": [asdict(a) for a in answers],
            }
        )

    return Guard(BodyLimit(app, MAX_BODY_BYTES), host)
