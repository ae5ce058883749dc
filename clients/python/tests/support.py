"""What the tests put around the client: a scripted fake server, a proxy that records every try and can swallow
an answer the real server sent, a webhook receiver, and the accounts the node:test wrapper seeded.

The tests against a real callgate read it from the environment that clients/python/test/python-client.test.ts
sets: CALLGATE_TEST_BASE_URL and CALLGATE_TEST_ACCOUNTS (a JSON list of {key, agent_id, mode}, one account
per test that needs its own). Without them those tests are skipped (the wrapper fails on any skip).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple, TypeVar

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import callgate  # noqa: E402

T = TypeVar("T")

# -- the real server ---------------------------------------------------------------------------------------


class Account(NamedTuple):
    key: str
    agent_id: str
    mode: str


_accounts: List[Account] = []
_accounts_lock = threading.Lock()


def require_server() -> str:
    """The real callgate's base URL, or a skip when the wrapper did not start one."""
    base_url = os.environ.get("CALLGATE_TEST_BASE_URL")
    if not base_url:
        raise unittest.SkipTest("CALLGATE_TEST_BASE_URL is not set: run through npm test (clients/python/test/python-client.test.ts)")
    with _accounts_lock:
        if not _accounts:
            _accounts.extend(Account(**entry) for entry in json.loads(os.environ["CALLGATE_TEST_ACCOUNTS"]))
    return base_url


def take_account(mode: str = "test") -> Account:
    """An account of its own (key and simulator agent), seeded by the wrapper, used by no other test."""
    with _accounts_lock:
        for index, account in enumerate(_accounts):
            if account.mode == mode:
                return _accounts.pop(index)
    raise AssertionError(f"the wrapper seeded too few {mode} accounts: add some in python-client.test.ts")


def quick_client(key: str, base_url: str, **options: Any) -> callgate.Client:
    """A client with short backoffs: the tests wait for what the client does, not for its default delays."""
    settings: Dict[str, Any] = {"initial_retry_delay": 0.02, "max_retry_delay": 0.1}
    settings.update(options)
    return callgate.Client(key, base_url=base_url, **settings)


def until(what: str, check: Callable[[], Optional[T]], timeout: float = 20.0, interval: float = 0.05) -> T:
    """Polls ``check`` until it returns something other than None; fails with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def ended_call(client: callgate.Client, call_id: str) -> callgate.types.Call:
    """The call once it left ``initiated`` (polled through the API, as an integrator without webhooks would)."""

    def check() -> Optional[callgate.types.Call]:
        call = client.get_call(call_id)
        return None if call["status"] == "initiated" else call

    return until(f"call {call_id} to end", check)


# -- a proxy in front of the real server ---------------------------------------------------------------------


class Try:
    """One request the proxy saw, and the status of the server's answer to it (swallowed or not)."""

    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.status: Optional[int] = None
        self.dropped = False

    @property
    def idempotency_key(self) -> Optional[str]:
        return self.headers.get("idempotency-key")

    def __repr__(self) -> str:
        return f"Try({self.method} {self.path} -> {self.status}{' dropped' if self.dropped else ''})"


def _read_request(conn: socket.socket) -> Optional[Tuple[bytes, Try]]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return head + b"\r\n\r\n" + rest, Try(method, path, headers, rest)


class Proxy:
    """A proxy to the real server for one-request connections (urllib sends ``Connection: close``). It records
    every try; ``drop`` answers are swallowed: the request is forwarded, the server's whole answer read, and
    the client's connection closed without a byte of it, as a network that fails on the way back would."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.replace("http://", "").rstrip("/").partition(":")
        self.upstream = (host, int(port))
        self.tries: List[Try] = []
        self.drop = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            request = _read_request(conn)
            if request is None:
                return
            raw, attempt = request
            with self._lock:
                self.tries.append(attempt)
                dropping = self.drop > 0
                if dropping:
                    self.drop -= 1
            attempt.dropped = dropping
            with socket.create_connection(self.upstream) as upstream:
                upstream.sendall(raw)
                while True:
                    chunk = upstream.recv(65536)
                    if not chunk:
                        break
                    if attempt.status is None:
                        attempt.status = int(chunk.split(b" ", 2)[1])
                    if not dropping:
                        conn.sendall(chunk)

    def tries_of(self, method: str, path_prefix: str) -> List[Try]:
        with self._lock:
            return [t for t in self.tries if t.method == method and t.path.startswith(path_prefix)]

    def close(self) -> None:
        self._server.close()


# -- a scripted fake callgate --------------------------------------------------------------------------------


class Answer(NamedTuple):
    status: int
    body: Any = None
    headers: Mapping[str, str] = {}
    delay: float = 0.0
    """Seconds to wait before answering (a try that times out)."""
    hang_up: bool = False
    """Close the connection without an answer."""


class Seen(NamedTuple):
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    at: float


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (a timeout under test) broke the pipe: expected


class FakeServer:
    """Answers each request with the next scripted Answer (the last one repeats) and records what it saw."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.seen: List[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                fake.seen.append(Seen(self.command, self.path, headers, body, time.monotonic()))
                answer = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
                if answer.delay:
                    time.sleep(answer.delay)
                if answer.hang_up:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = (
                    answer.body if isinstance(answer.body, bytes) else b"" if answer.body is None else json.dumps(answer.body).encode()
                )
                self.send_response(answer.status)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("X-Request-Id", f"req_fake{len(fake.seen)}")
                if answer.body is not None and not isinstance(answer.body, bytes):
                    self.send_header("Content-Type", "application/json")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_DELETE = _answer

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def error_body(code: str, message: str = "m", request_id: str = "req_body") -> Dict[str, str]:
    return {"error": code, "message": message, "request_id": request_id}


# -- a webhook receiver --------------------------------------------------------------------------------------


class Delivery(NamedTuple):
    body: bytes
    headers: Any
    """http.server's own headers object, as a receiver would pass it."""


class Receiver:
    """An http.server receiver that answers 204 to every POST and queues it, unverified, for the test."""

    def __init__(self) -> None:
        self.deliveries: "queue.Queue[Delivery]" = queue.Queue()
        deliveries = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                deliveries.put(Delivery(body, self.headers))
                self.send_response(204)
                self.end_headers()

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/webhooks/callgate"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def next_for(self, call_id: str, timeout: float = 20.0) -> Delivery:
        """The first delivery (in arrival order) whose event is about ``call_id``; others are dropped."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                delivery = self.deliveries.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no webhook about {call_id} within {timeout} s") from None
            if json.loads(delivery.body).get("data", {}).get("id") == call_id:
                return delivery

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
