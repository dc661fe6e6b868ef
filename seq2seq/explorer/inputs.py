"""What a request to the explorer may hold, checked before any model sees it.

A request is a small JSON object, ``{"text": "我 爱 中国", "beam_size": 1}``, in UTF-8; it may
name one ``map`` (of :data:`MAPS`) and one ``intervention`` (``"uniform"``, ``"head:1"``...)
to answer with that alone. Every way it can be wrong is a :class:`RequestError`: an HTTP
status and one line the page shows as it is. Nothing here touches the disk or a model, so it
imports without torch; which interventions a run takes is the run's to say
(:func:`seq2seq.explorer.explain.check_intervention`).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from seq2seq.files import JSONError, parse_json

#: The largest request body accepted (bytes); a sentence at the character limit in UTF-8
#: takes under 2 KiB, so this leaves room for JSON escapes and nothing more.
MAX_BODY_BYTES = 16 * 1024
#: The longest sentence accepted, in characters (a model's own limit in tokens applies too).
MAX_CHARACTERS = 300
#: The widest beam the page offers; wider only slows the server down.
MAX_BEAM = 10
BYTE_ORDER_MARK = "\ufeff"
#: The maps the page draws: the attention, the attributions of
#: :mod:`seq2seq.evaluation.attributions` (its ``ATTRIBUTIONS``, checked where both are
#: imported) and a test sentence's gold links.
MAPS = ("attention", "grad_x_input", "integrated_gradients", "gold")
FIELDS = ("text", "beam_size", "map", "intervention")


class RequestError(Exception):
    """A request the explorer refuses: ``status`` (4xx) and a one-line ``message``."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Query:
    """A checked request: the sentence (stripped, no byte-order mark), the beam width, and
    the one map and intervention asked for (None: every one)."""

    text: str
    beam_size: int = 1
    map: str | None = None
    intervention: str | None = None


def parse_query(body: bytes) -> Query:
    """The :class:`Query` of a request body, or the :class:`RequestError` that says why not."""
    if len(body) > MAX_BODY_BYTES:
        raise too_large()
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RequestError(
            f"the request is not UTF-8 text (byte {err.start + 1}); send the sentence as UTF-8",
            400,
        ) from None
    try:
        request = parse_json(decoded)
    except JSONError as err:
        raise RequestError(f"the request is not JSON ({err.reason}); send {EXAMPLE}", 400) from None
    if not isinstance(request, dict):
        raise RequestError(f"the request should be a JSON object like {EXAMPLE}", 400)
    unknown = sorted(set(request) - set(FIELDS))
    if unknown:
        raise RequestError(
            f"unknown field {unknown[0]!r:.60}; the fields are {', '.join(FIELDS[:-1])} and "
            f"{FIELDS[-1]}",
            400,
        )
    text = request.get("text")
    if not isinstance(text, str):
        raise RequestError(f"'text' should be the sentence as a string, like {EXAMPLE}", 400)
    beam_size = request.get("beam_size", 1)
    if isinstance(beam_size, bool) or not isinstance(beam_size, int):
        raise RequestError(f"'beam_size' should be a whole number from 1 to {MAX_BEAM}", 400)
    if not 1 <= beam_size <= MAX_BEAM:
        raise RequestError(
            f"beam size {beam_size} is out of range: choose 1 (greedy) to {MAX_BEAM}"
        )
    chosen_map = request.get("map")
    if chosen_map is not None and chosen_map not in MAPS:
        raise RequestError(
            f"unknown map {chosen_map!r:.60}; use one of {', '.join(MAPS)} (or leave it out: "
            "every one)",
            400,
        )
    intervention = request.get("intervention")
    if intervention is not None and not isinstance(intervention, str):
        raise RequestError(
            "'intervention' should be the name of one as a string, e.g. \"uniform\"", 400
        )
    return Query(check_sentence(text), beam_size, chosen_map, intervention)


EXAMPLE = '{"text": "我 爱 中国"}'


def too_large() -> RequestError:
    return RequestError(
        f"the request is larger than {MAX_BODY_BYTES // 1024} KiB; send one sentence of at most "
        f"{MAX_CHARACTERS} characters",
        413,
    )


def check_sentence(text: str) -> str:
    """``text`` without its byte-order marks and outer spaces, if it is a sentence to translate.

    Refused: nothing left, a control character (or a lone surrogate, which JSON can carry),
    more than :data:`MAX_CHARACTERS` characters.
    """
    text = text.replace(BYTE_ORDER_MARK, "").strip()
    if not text:
        raise RequestError("empty input: type a Chinese sentence, e.g. 我 爱 中国")
    for position, char in enumerate(text, start=1):
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise RequestError(
                f"the sentence holds a control character (U+{ord(char):04X}) at position "
                f"{position}; remove it and type plain text"
            )
    if len(text) > MAX_CHARACTERS:
        raise RequestError(
            f"the sentence has {len(text)} characters, more than the limit of {MAX_CHARACTERS}; "
            "split it into shorter sentences"
        )
    return text
