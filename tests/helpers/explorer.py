"""The attention explorer as a person starts it: ``scripts/serve.py`` in a subprocess on a free
loopback port, its URL read from what it prints, stopped with Ctrl-C (SIGINT); and a bounded
HTTP client for its API."""

from __future__ import annotations

import http.client
import json
import resource
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers.processes import MARK
from tests.helpers.runs import REPO, script_env

#: How long a server may take to load its runs and print its URL, and to stop.
START_TIMEOUT = 120
STOP_TIMEOUT = 30
REQUEST_TIMEOUT = 60


@dataclass
class Server:
    """A running ``scripts/serve.py``: its process, URL and what it printed before the URL."""

    process: subprocess.Popen
    url: str
    banner: str

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, then its exit code and stderr (bounded: killed if it does not stop)."""
        self.process.send_signal(signal.SIGINT)
        try:
            _, stderr = self.process.communicate(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
            raise AssertionError(f"the server did not stop on SIGINT: {stderr[-2000:]}") from None
        return self.process.returncode, stderr


def start_server(
    *runs: Path,
    extra: tuple[str, ...] = (),
    shared: bool = False,
    descriptor_limit: int | None = None,
) -> Server:
    """Start ``serve.py RUN… --port 0`` and wait for its ``serving … at URL`` line.

    ``shared``: a server that outlives one test (a module's fixture stops it), so it does not
    carry the test's process mark (which ends everything marked after each test).
    ``descriptor_limit``: the server may open at most this many files and sockets
    (``RLIMIT_NOFILE``, soft and hard)."""
    env = script_env()
    if shared:
        env.pop(MARK, None)

    def limit_descriptors() -> None:
        if descriptor_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptor_limit, descriptor_limit))

    process = subprocess.Popen(
        [sys.executable, str(REPO / "scripts/serve.py"), *map(str, runs), "--port", "0", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=limit_descriptors,
    )
    deadline = time.monotonic() + START_TIMEOUT
    banner = ""
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            _, stderr = process.communicate(timeout=STOP_TIMEOUT)
            raise AssertionError(f"serve.py ended before serving: {stderr[-3000:]}")
        banner += line
        if line.startswith("serving "):
            return Server(process, line.split(" at ")[1].split()[0], banner)
    process.kill()
    raise AssertionError(f"serve.py printed no URL within {START_TIMEOUT} s")


def post(
    url: str, body: bytes, headers: dict[str, str] | None = None, timeout: float = REQUEST_TIMEOUT
) -> tuple[int, dict]:
    """POST ``body`` to ``url``: (status, parsed JSON answer), also for a 4xx."""
    headers = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def translate(
    server_url: str, text: str, beam_size: int = 1, timeout: float = REQUEST_TIMEOUT
) -> tuple[int, dict]:
    """The API's answer to one sentence."""
    body = json.dumps({"text": text, "beam_size": beam_size}, ensure_ascii=False).encode()
    return post(server_url + "api/translate", body, timeout=timeout)


def get(url: str) -> tuple[int, bytes, Message]:
    """GET ``url``: (status, body, headers — looked up in any case)."""
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as response:
        return response.status, response.read(), response.headers


def exchange(
    server_url: str,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, Message, bytes]:
    """One request with exactly these headers (``Host`` too, when given): (status, headers,
    body), whatever the status."""
    parts = urlsplit(server_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=REQUEST_TIMEOUT)
    try:
        headers = headers or {}
        connection.putrequest(method, path, skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()
