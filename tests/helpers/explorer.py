"""The attention explorer as a person starts it: ``scripts/serve.py`` in a subprocess on a free
loopback port, its URL read from what it prints, stopped with Ctrl-C (SIGINT); and a bounded
HTTP client for its API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

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


def start_server(*runs: Path, extra: tuple[str, ...] = (), shared: bool = False) -> Server:
    """Start ``serve.py RUN… --port 0`` and wait for its ``serving … at URL`` line.

    ``shared``: a server that outlives one test (a module's fixture stops it), so it does not
    carry the test's process mark (which ends everything marked after each test)."""
    env = script_env()
    if shared:
        env.pop(MARK, None)
    process = subprocess.Popen(
        [sys.executable, str(REPO / "scripts/serve.py"), *map(str, runs), "--port", "0", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
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


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """POST ``body`` to ``url``: (status, parsed JSON answer), also for a 4xx."""
    headers = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def translate(server_url: str, text: str, beam_size: int = 1) -> tuple[int, dict]:
    """The API's answer to one sentence."""
    body = json.dumps({"text": text, "beam_size": beam_size}, ensure_ascii=False).encode()
    return post(server_url + "api/translate", body)


def get(url: str) -> tuple[int, bytes, Message]:
    """GET ``url``: (status, body, headers — looked up in any case)."""
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as response:
        return response.status, response.read(), response.headers
