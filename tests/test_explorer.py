"""The attention explorer's server and API (scripts/serve.py): what it answers, every bad
input refused with a 4xx and one line while it keeps serving, 20 requests at once, start-up
errors before anything listens, Ctrl-C."""

from __future__ import annotations

import contextlib
import http.client
import json
import selectors
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.metrics import alignment_error_rate, hard_alignment
from seq2seq.explorer.explain import RunExplorer, pick_examples
from seq2seq.explorer.inputs import (
    EXAMPLE,
    MAPS,
    MAX_BEAM,
    MAX_BODY_BYTES,
    MAX_CHARACTERS,
    Query,
    parse_query,
)
from tests.helpers.bad_input import LONG_NUMBER_JSON, NESTED_JSON, hand_edited
from tests.helpers.explorer import Server, exchange, get, post, start_server, translate
from tests.helpers.runs import run_script

pytest.importorskip("fastapi", reason='the explorer needs pip install -e ".[demo]"')
from seq2seq.explorer.guard import LOOPBACK  # needs the [demo] extra: after the skip
from seq2seq.explorer.server import is_loopback


@pytest.fixture(scope="module")
def server(tiny_run) -> Iterator[Server]:
    """One server for the module: the toy corpus' ``none`` and ``additive`` runs side by side."""
    running = start_server(tiny_run("none"), tiny_run("additive"), shared=True)
    try:
        yield running
    finally:
        running.stop()


# --------------------------------------------------------------------------- requests


PLAIN = "remove it and type plain text"
BAD_REQUESTS = [
    (b"", 400, "the request is not JSON (Expecting value); send {\"text\": \"我 爱 中国\"}"),
    (b"\xff\xfe{}", 400, "the request is not UTF-8 text (byte 1); send the sentence as UTF-8"),
    ("我 爱".encode("gb18030"), 400,
     "the request is not UTF-8 text (byte 1); send the sentence as UTF-8"),
    (b"[1, 2]", 400, "the request should be a JSON object like {\"text\": \"我 爱 中国\"}"),
    (b'{"txt": "x"}', 400,
     "unknown field 'txt'; the fields are text, beam_size, map and intervention"),
    (b'{"text": "x", "map": "saliency"}', 400,
     "unknown map 'saliency'; use one of attention, grad_x_input, integrated_gradients, gold "
     "(or leave it out: every one)"),
    (b'{"text": "x", "map": ["attention"]}', 400,
     "unknown map ['attention']; use one of attention, grad_x_input, integrated_gradients, gold "
     "(or leave it out: every one)"),
    (b'{"text": "x", "intervention": 1}', 400,
     "'intervention' should be the name of one as a string, e.g. \"uniform\""),
    (b'{"text": 3}', 400,
     "'text' should be the sentence as a string, like {\"text\": \"我 爱 中国\"}"),
    (b'{"text": "x", "beam_size": true}', 400,
     f"'beam_size' should be a whole number from 1 to {MAX_BEAM}"),
    (b'{"text": "x", "beam_size": 0}', 422,
     f"beam size 0 is out of range: choose 1 (greedy) to {MAX_BEAM}"),
    (b'{"text": "  \\ufeff "}', 422, "empty input: type a Chinese sentence, e.g. 我 爱 中国"),
    ('{"text": "我\\u0007爱"}'.encode(), 422,
     "the sentence holds a control character (U+0007) at position 2; " + PLAIN),
    ('{"text": "我\\ud800"}'.encode(), 422,
     "the sentence holds a control character (U+D800) at position 2; " + PLAIN),
    (json.dumps({"text": "我" * (MAX_CHARACTERS + 1)}).encode(), 422,
     f"the sentence has {MAX_CHARACTERS + 1} characters, more than the limit of {MAX_CHARACTERS}; "
     "split it into shorter sentences"),
    (b"[" * 5000 + b"]" * 5000, 400,
     "the request is not JSON (arrays or objects nested too deeply); send " + EXAMPLE),
    (b'{"text": "x", "beam_size": ' + b"1" * 4301 + b"}", 400,
     "the request is not JSON (a number of more than 4300 digits); send " + EXAMPLE),
    (b" " * (MAX_BODY_BYTES + 1), 413,
     "the request is larger than 16 KiB; send one sentence of at most "
     f"{MAX_CHARACTERS} characters"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "status", "message"), BAD_REQUESTS)
def test_a_bad_request_is_one_line_with_its_status(body: bytes, status: int, message: str) -> None:
    with pytest.raises(Exception) as caught:
        parse_query(body)
    assert (caught.value.status, caught.value.message) == (status, message)


def test_a_good_request_is_stripped_and_keeps_its_beam() -> None:
    body = json.dumps({"text": "\ufeff 我 爱 中国 ", "beam_size": 5}).encode()
    assert parse_query(body) == Query("我 爱 中国", 5)
    body = json.dumps({"text": "我", "map": "gold", "intervention": "head:1.0"}).encode()
    assert parse_query(body) == Query("我", 1, "gold", "head:1.0")
    assert parse_query(b'{"text": "x", "map": null, "intervention": null}') == Query("x")


def test_the_server_refuses_each_bad_request_and_keeps_serving(server: Server) -> None:
    url = server.url + "api/translate"
    for body, status, message in BAD_REQUESTS:
        assert post(url, body) == (status, {"error": message})
    first = json.loads(get(server.url + "api/runs")[1])["runs"][0]["name"]
    too_long = " ".join(["我"] * 25)  # the toy corpus' longest source has 12 tokens: limit 24
    status, answer = translate(server.url, too_long)
    assert status == 422 and answer["error"].startswith(
        f"{first}: input of 25 tokens is longer than this model's limit of 24; split it"
    )
    assert translate(server.url, "火星 人") == (422, {"error": (
        f"none of these words is in the vocabulary of {first}; "
        "pick a test sentence from the list, or use its words"
    )})  # fmt: skip
    assert translate(server.url, "我 爱 中国")[0] == 200


VALID = "use one of uniform, shuffle, argmax"
#: Interventions the server's runs (none and additive) do not take: refused before any model
#: runs, in one line with the ones they take.
BAD_INTERVENTIONS = [
    ("random", f"unknown intervention 'random'; {VALID}"),
    ("head:1", f"no run here takes intervention 'head:1'; {VALID}"),
    ("head:0.1", f"no run here takes intervention 'head:0.1'; {VALID}"),
    ("gold", "intervention 'gold' exists along a reference translation only; the page "
     f"translates freely: {VALID}"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "message"), BAD_INTERVENTIONS)
def test_an_intervention_no_run_takes_is_one_line_with_the_ones_they_take(
    server: Server, name: str, message: str
) -> None:
    body = json.dumps({"text": "我 爱 中国", "intervention": name}).encode()
    assert post(server.url + "api/translate", body) == (400, {"error": message})


def test_an_intervention_where_no_run_has_attention_is_one_line() -> None:
    from types import SimpleNamespace

    from seq2seq.explorer.explain import check_intervention

    baseline = SimpleNamespace(interventions=[])  # what a run without attention takes
    with pytest.raises(Exception) as caught:
        check_intervention("uniform", [baseline])  # type: ignore[list-item]
    assert (caught.value.status, caught.value.message) == (
        400,
        "intervention 'uniform': no run here has attention weights to replace; leave the field out",
    )
    check_intervention(None, [baseline])  # type: ignore[list-item]


def test_a_body_announced_too_large_is_refused_before_it_is_read(server: Server) -> None:
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.putrequest("POST", "/api/translate")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(50 * 1024 * 1024))  # 50 MB, never sent
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413 and "larger than 16 KiB" in json.loads(response.read())["error"]
    connection.close()


def test_a_chunked_body_is_cut_off_at_the_limit(server: Server) -> None:
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    chunks = (b"x" * 4096 for _ in range(64))  # 256 KiB, no Content-Length
    connection.request("POST", "/api/translate", chunks, JSON, encode_chunked=True)
    response = connection.getresponse()
    assert response.status == 413
    connection.close()
    assert translate(server.url, "我 爱 中国")[0] == 200


# --------------------------------------------------------------------------- who may ask

SECURITY_HEADERS = ("Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy")
TRANSLATE = ("POST", "/api/translate")
JSON = {"Content-Type": "application/json"}
SENTENCE = json.dumps({"text": "我 爱 中国"}, ensure_ascii=False).encode()
#: What a page of another site, or one reached through a rebound DNS name, may send.
REFUSED_REQUESTS = [
    ("a form-like POST, no preflight", *TRANSLATE, {"Content-Type": "text/plain"}, 415,
     "send the request as JSON (Content-Type: application/json), like {\"text\": \"我 爱 中国\"}"),
    ("a POST without a type", *TRANSLATE, {}, 415,
     "send the request as JSON (Content-Type: application/json), like {\"text\": \"我 爱 中国\"}"),
    ("another site's page, the audit's", *TRANSLATE,
     {"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403,
     "a page of http://evil.example may not use this server; open the page at {url}"),
    ("another site's page, as JSON", *TRANSLATE, {**JSON, "Origin": "http://evil.example"}, 403,
     "a page of http://evil.example may not use this server; open the page at {url}"),
    ("a sandboxed page", *TRANSLATE, {**JSON, "Origin": "null"}, 403,
     "a page of null may not use this server; open the page at {url}"),
    ("a page on this name but another port", "GET", "/api/runs",
     {"Origin": "http://127.0.0.1:1"}, 403,
     "a page of http://127.0.0.1:1 may not use this server; open the page at {url}"),
    ("DNS rebinding", "GET", "/api/runs", {"Host": "rebind.evil.example"}, 400,
     "Host rebind.evil.example is not this server; open the page at {url}"),
    ("DNS rebinding, with the port", *TRANSLATE, {**JSON, "Host": "rebind.evil.example:{port}"},
     400, "Host rebind.evil.example:{port} is not this server; open the page at {url}"),
    ("this address, another port", "GET", "/", {"Host": "127.0.0.1:1"}, 400,
     "Host 127.0.0.1:1 is not this server; open the page at {url}"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "message"),
    [pytest.param(*row[1:], id=row[0]) for row in REFUSED_REQUESTS],
)
def test_a_request_from_elsewhere_is_refused_in_one_line(
    server: Server, method: str, path: str, headers: dict, status: int, message: str
) -> None:
    port = str(urlsplit(server.url).port)
    headers = {name: value.replace("{port}", port) for name, value in headers.items()}
    answer = exchange(server.url, method, path, headers, SENTENCE if method == "POST" else None)
    assert (answer[0], json.loads(answer[2])) == (
        status,
        {"error": message.replace("{url}", server.url).replace("{port}", port)},
    )
    assert all(answer[1][name] for name in SECURITY_HEADERS)


def test_the_page_itself_and_its_own_names_are_served(server: Server) -> None:
    port = urlsplit(server.url).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        own = {"Origin": f"http://{host}"}  # what a browser sends with the page's POST
        for headers in ({**JSON, **own}, {"Content-Type": "application/json; charset=utf-8"}):
            status, _, body = exchange(server.url, *TRANSLATE, {**headers, "Host": host}, SENTENCE)
            assert status == 200, body
        assert exchange(server.url, "GET", "/api/runs", {"Host": host})[0] == 200


def test_every_answer_carries_the_security_headers(server: Server) -> None:
    answers = (("GET", "/no-such-page", 404), ("DELETE", "/", 405),
               ("GET", "/api/translate", 405), ("PUT", "/api/runs", 405))  # fmt: skip
    for method, path, status in answers:
        answer = exchange(server.url, method, path)
        assert answer[0] == status
        assert all(answer[1][name] for name in SECURITY_HEADERS), (method, path)


def test_a_server_error_carries_the_security_headers_too() -> None:
    """A bug (500) must not open what the page's policy closes: the headers are added to
    every answer on its way out."""
    import asyncio

    from fastapi import FastAPI

    from seq2seq.explorer.guard import Guard

    app = FastAPI()

    @app.get("/")
    async def broken() -> None:
        raise RuntimeError("a bug")

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "raw_path": b"/", "root_path": "",
             "query_string": b"", "headers": [(b"host", b"127.0.0.1:8000")],
             "server": ("127.0.0.1", 8000), "scheme": "http", "http_version": "1.1",
             "asgi": {"version": "3.0"}}  # fmt: skip
    with pytest.raises(RuntimeError, match="a bug"):  # re-raised for the server to log
        asyncio.run(Guard(app, LOOPBACK)(scope, receive, send))
    start = sent[0]
    assert start["status"] == 500
    names = {name.decode().lower() for name, _ in start["headers"]}
    assert {name.lower() for name in SECURITY_HEADERS} <= names


def test_head_is_answered_like_get_without_a_body(server: Server) -> None:
    for path in ("/", "/explorer.js", "/api/runs"):
        status, headers, body = exchange(server.url, "HEAD", path)
        got = exchange(server.url, "GET", path)
        assert (status, body) == (200, b"")
        assert headers["Content-Length"] == got[1]["Content-Length"] == str(len(got[2]))
        assert headers["Content-Type"] == got[1]["Content-Type"]


# --------------------------------------------------------------------------- answers


def test_the_answer_is_the_models_translation_with_every_row_summing_to_one(
    server: Server, tiny_run
) -> None:
    status, answer = translate(server.url, "我爱中国")  # unsegmented: split like translate.py
    assert status == 200 and answer["text"] == "我爱中国"
    none, additive = answer["runs"]
    assert none["source"] == ["我", "爱", "中国", "<eos>"]
    run = TrainedRun.load(tiny_run("additive"))
    (expected,) = run.translate(["我 爱 中国"])
    assert additive["text"] == expected.text and additive["output"] == expected.output
    (view,) = additive["views"]
    assert view["reading"] == "output" and view["rows"] == [*expected.output, "<eos>"]
    assert [m["method"] for m in view["maps"]] == [
        "attention", "grad_x_input", "integrated_gradients"
    ]  # fmt: skip
    for heat_map in view["maps"]:
        weights = np.array(heat_map["weights"])
        assert weights.shape == (len(expected.output) + 1, 4)
        np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-4)
    np.testing.assert_allclose(view["maps"][0]["weights"], expected.weights[0], atol=1e-5)
    assert [m["method"] for m in none["views"][0]["maps"]] == [
        "grad_x_input", "integrated_gradients"
    ]  # fmt: skip


@pytest.mark.parametrize("method", ["grad_x_input", "integrated_gradients"])
def test_a_typed_sentence_attributes_the_models_own_output(tiny_run, method: str) -> None:
    """No reference: each word the model emitted, teacher-forced along its output, is
    attributed to the source words (Captum, as evaluate.py --explain), each row as shares."""
    from seq2seq.data.batching import ParallelDataset
    from seq2seq.data.corpus import Pair
    from seq2seq.evaluation.attributions import attribution_maps, row_shares
    from seq2seq.explorer.explain import PAGE_IG_STEPS

    explorer = RunExplorer.load("x", tiny_run("additive"))
    answer = explorer.explain("我 爱 中国", method=method)
    (view,) = answer.views
    (heat_map,) = view.maps
    assert heat_map.method == method and view.reading == "output"
    run = explorer.run
    pair = Pair(("我", "爱", "中国"), tuple(answer.output))
    batch = ParallelDataset([pair], run.src_vocab, run.tgt_vocab).collate([0])
    expected, delta = attribution_maps(run.model, batch, method, steps=PAGE_IG_STEPS)
    np.testing.assert_allclose(heat_map.weights, row_shares(expected)[0].numpy(), atol=1e-5)
    assert (heat_map.convergence_delta is None) == (delta is None)


def test_each_intervention_is_the_translation_with_the_attention_replaced(
    server: Server, tiny_run
) -> None:
    from seq2seq.evaluation.interventions import Intervention

    _, answer = translate(server.url, "我 爱 中国")
    none, additive = answer["runs"]
    assert none["interventions"] == []  # no attention to replace
    run = TrainedRun.load(tiny_run("additive"))
    names = [i["name"] for i in additive["interventions"]]
    assert names == ["uniform", "shuffle", "argmax"]
    for steered in additive["interventions"]:
        intervention = Intervention.parse(steered["name"])
        (expected,) = run.translate(["我 爱 中国"], intervention=intervention)
        assert (steered["output"], steered["text"]) == (expected.output, expected.text)
    body = json.dumps({"text": "我 爱 中国", "intervention": "shuffle", "map": "attention"})
    status, one = post(server.url + "api/translate", body.encode())
    assert status == 200
    assert [i["name"] for i in one["runs"][1]["interventions"]] == ["shuffle"]
    assert one["runs"][1]["interventions"][0] == additive["interventions"][1]
    assert [m["method"] for m in one["runs"][1]["views"][0]["maps"]] == ["attention"]
    assert one["runs"][0]["views"][0]["maps"] == []  # none: no attention map


def test_a_test_sentence_brings_its_gold_links_and_aer(server: Server, tiny_run) -> None:
    status, listing, _ = get(server.url + "api/runs")
    info = json.loads(listing)
    assert status == 200 and [r["attention"] for r in info["runs"]] == ["none", "additive"]
    assert info["runs"][1]["heads"] == 1 and len(info["examples"]) == 40
    assert [r["interventions"] for r in info["runs"]] == [[], ["uniform", "shuffle", "argmax"]]
    assert info["maps"] == ["attention", "grad_x_input", "integrated_gradients", "gold"]
    lengths = [e["length"] for e in info["examples"]]
    assert lengths == sorted(lengths) and lengths[0] == 2 and lengths[-1] == 12
    example = info["examples"][-1]
    _, answer = translate(server.url, example["text"])
    additive = answer["runs"][1]
    explorer = RunExplorer.load("x", tiny_run("additive"))
    gold = explorer.example(example["text"].split())
    assert gold is not None and additive["reference"] == list(gold.reference)
    scored = additive["views"][-1]  # on the output if it is the reference, else teacher-forced
    assert scored["sure"] == [list(link) for link in gold.sure]
    assert [m["method"] for m in scored["maps"]] == [*MAPS]
    for heat_map in scored["maps"][:-1]:  # each map's sentence AER, computed from it
        weights = np.array(heat_map["weights"])
        links = hard_alignment(weights, len(gold.source), len(gold.reference))
        aer = round(alignment_error_rate([links], [gold.sure], [gold.possible]), 4)
        assert heat_map["aer"] == scored["aer"][heat_map["method"]] == aer
    gold_map = np.array(scored["maps"][-1]["weights"])  # the gold links, a row per word
    assert gold_map.shape == (len(gold.reference) + 1, len(gold.source) + 1)
    np.testing.assert_allclose(gold_map.sum(1), 1.0, atol=1e-4)
    linked = {(i, j) for i, j in gold.sure}  # the toy corpus has sure links only
    assert {(int(i), j) for j, row in enumerate(gold_map[:-1]) for i in np.flatnonzero(row)
            if i < len(gold.source)} == linked  # fmt: skip
    if additive["output"] != list(gold.reference):
        assert [v["reading"] for v in additive["views"]] == ["output", "reference"]
        assert scored["rows"] == [*gold.reference, "<eos>"]
        assert "gold" not in {m["method"] for m in additive["views"][0]["maps"]}
    assert [m["method"] for m in answer["runs"][0]["views"][-1]["maps"]] == [*MAPS[1:]]


def test_twenty_requests_at_once_are_all_answered_correctly(server: Server) -> None:
    sentences = ["我 爱 中国", "你 吃 苹果", "他 爱 北京 猫 狗"] * 7
    alone = {text: translate(server.url, text)[1]["runs"] for text in set(sentences)}
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda text: translate(server.url, text), sentences[:20]))

    def without_timing(runs: list[dict]) -> list[dict]:
        return [{k: v for k, v in run.items() if k != "milliseconds"} for run in runs]

    for text, (status, answer) in zip(sentences, answers, strict=False):
        assert status == 200 and without_timing(answer["runs"]) == without_timing(alone[text])


def test_the_page_and_its_files_come_from_the_server_itself(server: Server) -> None:
    status, page, headers = get(server.url)
    assert status == 200 and b'src="/explorer.js"' in page
    assert headers["Content-Security-Policy"].startswith("default-src 'self'")
    for name, kind in (("explorer.js", "text/javascript"), ("explorer.css", "text/css"),
                       ("cjk.otf", "font/otf")):  # fmt: skip
        status, body, headers = get(server.url + name)
        assert status == 200 and headers["Content-Type"].startswith(kind) and body
    for text in (page, get(server.url + "explorer.js")[1], get(server.url + "explorer.css")[1]):
        assert b"http://" not in text and b"https://" not in text  # nothing from elsewhere


def test_no_request_names_a_file(server: Server) -> None:
    for path in ("docs", "openapi.json", "../metrics.json", "static/index.html", "checkpoints"):
        with pytest.raises(Exception, match="404"):
            get(server.url + path)


def test_examples_spread_over_the_lengths(toy_corpus: Path) -> None:
    from seq2seq.data.corpus import read_tsv

    pairs = read_tsv(toy_corpus / "test.tsv")
    examples = pick_examples(pairs, char_level=False, count=5)
    assert [len(e.source) for e in examples] == sorted(len(e.source) for e in examples)
    assert len(examples[0].source) == min(len(p.src) for p in pairs)
    assert len(examples[-1].source) == max(len(p.src) for p in pairs)
    assert examples[0].text == " ".join(examples[0].source)


# --------------------------------------------------------------------------- connections

#: How long a real request may take while the server is flooded (a generous bound: the
#: answer itself takes tens of milliseconds).
ANSWER_SECONDS = 10
#: How long after its deadline a connection that never sent a whole request may stay open.
CLOSE_MARGIN_SECONDS = 10
HALF_HEADERS = b"POST /api/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
HALF_BODY = (
    b"POST /api/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
    b'\r\nContent-Length: 40\r\n\r\n{"text": '
)


def hold_connections(address: tuple[str, int], count: int) -> list[socket.socket]:
    """``count`` connections to ``address``: a third send nothing, a third half a request's
    headers, a third whole headers and half the body; none ever sends more."""
    opened = []
    with selectors.DefaultSelector() as selector:
        for k in range(count):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(address)
            opened.append(sock)
            if k % 3:
                selector.register(
                    sock, selectors.EVENT_WRITE, HALF_HEADERS if k % 3 == 1 else HALF_BODY
                )
        deadline = time.monotonic() + ANSWER_SECONDS
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                with contextlib.suppress(OSError):  # closed by the server already: fine
                    key.fileobj.send(key.data)
                selector.unregister(key.fileobj)
    return opened


def half_request(address: tuple[str, int], start: bytes) -> socket.socket:
    """A connection that sends ``start`` (maybe nothing) and never the rest."""
    sock = socket.create_connection(address, timeout=ANSWER_SECONDS)
    sock.sendall(start)
    sock.setblocking(False)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:  # open, nothing to read
        return False
    except ConnectionResetError:
        return True


def test_idle_and_half_sent_connections_cannot_hold_the_server(tiny_run) -> None:
    """The audit's hang, replayed: a server allowed 128 descriptors, 300 connections that
    send nothing, half a request's headers or half its body. Real requests are answered at
    once all the while; the server closes such a connection by its deadline; stderr says
    nothing about them (not a flood of tracebacks)."""
    running = start_server(tiny_run("additive"), descriptor_limit=128)
    parts = urlsplit(running.url)
    address = (parts.hostname, parts.port)
    held = hold_connections(address, 300)
    try:
        for _ in range(3):
            started = time.monotonic()
            assert translate(running.url, "我 爱 中国", timeout=ANSWER_SECONDS)[0] == 200
            assert get(running.url + "api/runs")[0] == 200
            assert time.monotonic() - started < ANSWER_SECONDS
        from seq2seq.explorer.connections import REQUEST_SECONDS

        watched = [half_request(address, start) for start in (b"", HALF_HEADERS, HALF_BODY)]
        held += watched
        deadline = time.monotonic() + REQUEST_SECONDS + CLOSE_MARGIN_SECONDS
        while time.monotonic() < deadline and not all(map(closed_by_server, watched)):
            time.sleep(0.2)
        assert all(map(closed_by_server, watched))
    finally:
        for sock in held:
            sock.close()
        code, stderr = running.stop()
    assert (code, stderr) == (130, "interrupted\n")


def test_headers_still_coming_past_the_limit_are_refused(server: Server) -> None:
    """h11 buffers at most MAX_HEADER_BYTES of a request's unfinished head: past it, 400."""
    from seq2seq.explorer.connections import MAX_HEADER_BYTES

    parts = urlsplit(server.url)
    head = f"GET / HTTP/1.1\r\nHost: {parts.netloc}\r\nX-Padding: ".encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=ANSWER_SECONDS) as sock:
        sock.sendall(head + b"x" * MAX_HEADER_BYTES)  # and never the end of the headers
        answer = sock.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.endswith(
        b"Invalid HTTP request received."
    )
    assert exchange(server.url, "GET", "/", {"X-Padding": "x" * 1000})[0] == 200


def test_running_out_of_descriptors_is_one_line_until_a_quiet_minute(capsys, caplog) -> None:
    """asyncio's accept loop reports EMFILE once per pending connection, every second, with a
    traceback; the server says it once, and again only after a minute without it."""
    import asyncio
    import errno

    from seq2seq.explorer.connections import QUIET_SECONDS, Descriptors

    now = [1000.0]
    descriptors = Descriptors(limit=128, clock=lambda: now[0])
    exhausted = {"message": "socket.accept() out of system resource",
                 "exception": OSError(errno.EMFILE, "Too many open files")}  # fmt: skip
    loop = asyncio.new_event_loop()
    try:
        for _ in range(40):  # a second's retries, for 40 s
            now[0] += 1
            for _ in range(100):
                descriptors.report(loop, exhausted)
        first = capsys.readouterr().err
        now[0] += QUIET_SECONDS
        descriptors.report(loop, exhausted)
        again = capsys.readouterr().err
        descriptors.report(loop, {"message": "something else", "exception": ValueError("x")})
    finally:
        loop.close()
    expected = (
        "warning: out of file descriptors (the limit is 128): new connections wait until "
        "open ones close; raise the limit with ulimit -n\n"
    )
    assert first == again == expected
    assert "something else" in caplog.text  # anything else: asyncio's own report


# --------------------------------------------------------------------------- starting, stopping


def test_ctrl_c_stops_the_server_in_one_line_with_130(tiny_run) -> None:
    running = start_server(tiny_run("additive"))
    assert translate(running.url, "我 爱 中国")[0] == 200
    code, stderr = running.stop()
    assert (code, stderr.strip()) == (130, "interrupted")


def test_ctrl_c_is_an_interrupt_even_when_asyncio_takes_uvicorns_re_raised_signal(
    monkeypatch, capsys
) -> None:
    """uvicorn stops on Ctrl-C, then re-raises the signal; asyncio's own SIGINT handler may
    take it as the cancel of a task that has already ended, and ``run`` returns (seen under
    load: exit 0, nothing said). A server stopped by a signal still ends as interrupted."""
    import uvicorn

    from seq2seq.explorer import server

    def stopped_by_a_signal(self, sockets) -> None:
        for sock in sockets:
            sock.close()
        self.should_exit = True  # what uvicorn's signal handler sets before it shuts down

    monkeypatch.setattr(uvicorn.Server, "run", stopped_by_a_signal)
    with pytest.raises(KeyboardInterrupt):
        server.serve(None, "127.0.0.1", 0, "a run")  # type: ignore[arg-type]
    capsys.readouterr()


def test_a_wider_bind_needs_host_and_is_warned_about(monkeypatch, capsys) -> None:
    import uvicorn

    from seq2seq.explorer import server

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.1")
    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: served.extend(sockets))
    server.serve(None, "0.0.0.0", 0, "a run")  # type: ignore[arg-type]
    (sock,) = served
    sock.close()
    out, err = capsys.readouterr()
    assert err == (
        "warning: --host 0.0.0.0 lets other machines reach this page; "
        "the default 127.0.0.1 keeps it on this one\n"
    )
    assert out.startswith("serving a run at http://0.0.0.0:")
    server.serve(None, "127.0.0.1", 0, "a run")  # type: ignore[arg-type]
    served.pop().close()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("{tmp}/no_such_run",), "run folder {tmp}/no_such_run does not exist"),
        (("{tmp}",), "has no checkpoints/best.pt; is it a finished run folder"),
        (("{unfinished}",), "is not a finished run: it has no metrics.json"),
        (
            ("{run}", "--port", "0", "{run}", "{run}"),
            "3 run folders given; the page shows one or two",
        ),
        (("{run}", "--port", "70000"), "--port 70000 is not a port number; use 0 to 65535"),
        (("{run}", "--port", "{busy}"), "cannot listen on 127.0.0.1:{busy}: Address already"),
        (("{run}", "--host", "no.such.invalid"), "--host no.such.invalid is not an address"),
        (("{edited}",), "{edited}/checkpoints/best.pt: 'model_spec.attention' should be one of"),
        (
            ("{run}", "--host", "192.0.2.1"),  # TEST-NET-1: never this machine's
            "--host 192.0.2.1 is not an address of this machine (Cannot assign requested address); "
            "use 127.0.0.1 (this machine only) or 0.0.0.0 (every network)",
        ),
        (
            ("{nested}",),
            "{nested}/metrics.json is not valid JSON (arrays or objects nested too "
            "deeply); rerun or remove that run",
        ),
        (
            ("{long_number}",),
            "{long_number}/metrics.json is not valid JSON (a number of more "
            "than 4300 digits); rerun or remove that run",
        ),
    ],
)
def test_a_bad_start_is_one_line_before_anything_listens(
    arguments: tuple[str, ...], message: str, tiny_run, tmp_path: Path
) -> None:
    import shutil

    run = tiny_run("additive")
    metrics = {"unfinished": None, "nested": NESTED_JSON, "long_number": LONG_NUMBER_JSON}
    for name, text in metrics.items():
        shutil.copytree(run, tmp_path / name)
        if text is None:
            (tmp_path / name / "metrics.json").unlink()
        else:
            (tmp_path / name / "metrics.json").write_text(text, encoding="utf-8")
    edited = tmp_path / "edited"
    shutil.copytree(run, edited)
    hand_edited("model_spec.attention", "evil")(edited / "checkpoints" / "best.pt", tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        names = {"tmp": tmp_path, "run": run, "busy": busy.getsockname()[1], "edited": edited,
                 **{name: tmp_path / name for name in metrics}}  # fmt: skip
        result = run_script("serve.py", *(a.format(**names) for a in arguments))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message.format(**names) in lines[0]
    assert "serving" not in result.stdout


def test_a_deleted_synthetic_corpus_is_not_written_again(tiny_run, tmp_path: Path) -> None:
    """The explorer writes nothing: a run whose synthetic corpus is gone is served without
    its test sentences, and the note says how to write the corpus again."""
    import shutil

    import torch

    from seq2seq.model.checkpoint import Checkpoint, save_checkpoint

    run = tmp_path / "run"
    shutil.copytree(tiny_run("additive"), run)
    best = run / "checkpoints" / "best.pt"
    payload = torch.load(best, weights_only=True)
    corpus = tmp_path / "synthetic"  # never made, or deleted since
    sizes = {"train_size": 30, "valid_size": 5, "test_size": 5}
    payload["config"]["data"] |= {"synthetic": True, "dir": str(corpus), "seed": 3, **sizes}
    save_checkpoint(best, Checkpoint.from_dict(payload))
    explorer = RunExplorer.load("x", run)
    assert not corpus.exists() and explorer.examples == []
    assert explorer.notes == [
        f"no test sentences to pick from: the synthetic corpus {corpus} is gone; "
        f"python scripts/make_corpus.py data.dir={corpus} data.seed=3 data.train_size=30 "
        "data.valid_size=5 data.test_size=5 writes it again"
    ]
    assert explorer.explain("我 爱 中国").output  # still translates


def test_a_transformer_shows_every_layer_and_head(tiny_run) -> None:
    explorer = RunExplorer.load("t", tiny_run("transformer"))
    example = explorer.examples[-1]
    answer = explorer.explain(example.text)
    (expected,) = explorer.run.translate([example.text])
    assert answer.text == expected.text
    output = answer.views[0]
    attention = [m for m in output.maps if m.method == "attention"]
    assert [m.title for m in attention] == [
        f"layer {layer} · head {head}" for layer in (1, 2) for head in (1, 2)
    ]
    assert [m.layer for m in attention] == [0, 0, 1, 1]
    last = np.array([m.weights for m in output.maps[2:4]])  # the reported layer: the last
    np.testing.assert_allclose(last, expected.weights, atol=1e-5)
    np.testing.assert_allclose(last.sum(-1), 1.0, atol=1e-4)
    scored = answer.views[-1]
    assert scored.aer is not None and set(scored.aer) == {"attention", *MAPS[1:3]}
    assert all(m.aer is not None for m in scored.maps if m.method == "attention")
    assert [i.name for i in answer.interventions] == [
        "uniform", "shuffle", "argmax", "head:0.0", "head:0.1", "head:1.0", "head:1.1"
    ]  # fmt: skip
    assert answer.interventions[-1].label == "layer 2 · head 2 uniform"
