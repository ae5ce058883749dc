"""One request to the API, tried again when trying again is safe and can help.

Retried: no answer (connection refused or broken, a try that timed out, an answer cut off), and an answer
that says ``retryable`` (429 and 5xx but 502 provider_error, a definite refusal; without callgate's body,
every 429 and 5xx), 503 idempotency_in_progress (the server's "still working on this key") among them, with exponential
backoff and full jitter, or after the server's ``Retry-After``. Never retried: any other 4xx. A creating
POST carries one Idempotency-Key, made before its first try and sent on every try, so the server places it
once however many tries reach it: a retry after a lost answer is the server's replay of the first.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import IO, Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

from ._version import VERSION
from .errors import ApiConnectionError, ApiError, CallgateError, error_class_for

USER_AGENT = f"callgate-python/{VERSION}"

QueryValue = Any
"""str, int, bool or None (left out); a datetime is sent as ISO 8601."""


class ResponseInfo(NamedTuple):
    """What the client saw of the answer a method returned: ``Client.last_response``."""

    status: int
    headers: Mapping[str, str]
    request_id: Optional[str]
    idempotency_key: Optional[str]
    """The Idempotency-Key sent, on creates."""
    replayed: bool
    """The server answered from its idempotency record (``Idempotent-Replayed: true``): nothing was created again."""
    attempts: int
    """Tries made, this one included."""


class _Answer(NamedTuple):
    status: int
    headers: Mapping[str, str]
    body: bytes
    written: int
    """Bytes copied to the sink of a streamed GET."""


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` in seconds: delta seconds or an HTTP date (a date passed is 0); None when unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _is_timeout(error: BaseException) -> bool:
    reason = getattr(error, "reason", None)
    return isinstance(error, socket.timeout) or isinstance(reason, socket.timeout) or "timed out" in str(error)


class Transport:
    def __init__(
        self,
        api_key: str,
        base_url: str,
        timeout: float,
        max_retries: int,
        initial_retry_delay: float,
        max_retry_delay: float,
        max_retry_after: float,
    ) -> None:
        if not api_key:
            raise ValueError("callgate: api_key is required (cg_live_... or cg_test_...).")
        if not base_url:
            raise ValueError("callgate: base_url is required, such as https://callgate.example.com.")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.initial_retry_delay = initial_retry_delay
        self.max_retry_delay = max_retry_delay
        self.max_retry_after = max_retry_after
        self.sleep: Callable[[float], None] = time.sleep
        self._local = threading.local()

    @property
    def last_response(self) -> Optional[ResponseInfo]:
        return getattr(self._local, "last_response", None)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, QueryValue]] = None,
        body: Any = None,
        idempotent: bool = False,
        idempotency_key: Optional[str] = None,
        max_retries: Optional[int] = None,
    ) -> Any:
        """Sends the request as the module says and returns the parsed JSON body (None for a 204)."""
        answer, info = self._send(method, path, query, body, idempotent, idempotency_key, max_retries, None)
        if not answer.body:
            return None
        try:
            return json.loads(answer.body.decode("utf-8"))
        except ValueError:
            raise CallgateError(
                f"callgate answered {answer.status} with a body that is not JSON: {answer.body[:200]!r}",
                status=answer.status,
                code="invalid_response",
                request_id=info.request_id,
                idempotency_key=info.idempotency_key,
            ) from None

    def request_bytes(self, method: str, path: str) -> Tuple[bytes, Mapping[str, str]]:
        """A GET whose answer is not JSON (a recording), read whole inside the try: a body cut off is retried."""
        answer, _ = self._send(method, path, None, None, False, None, None, None)
        return answer.body, answer.headers

    def stream_to(self, path: str, sink: IO[bytes]) -> Tuple[int, Mapping[str, str]]:
        """A GET whose successful body is copied to ``sink`` as it arrives. Retried until the answer's headers
        came; once bytes were written, a broken body is an ApiConnectionError (nothing can be taken back)."""
        try:
            answer, _ = self._send("GET", path, None, None, False, None, None, sink)
        except _SinkError as failed:
            raise failed.error from None
        return answer.written, answer.headers

    # -- the loop ------------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, QueryValue]],
        body: Any,
        idempotent: bool,
        idempotency_key: Optional[str],
        max_retries: Optional[int],
        sink: Optional[IO[bytes]],
    ) -> Tuple[_Answer, ResponseInfo]:
        url = self._url(path, query)
        key = (idempotency_key or str(uuid.uuid4())) if idempotent else None
        headers = {
            "Accept": "application/json" if sink is None else "*/*",
            "Authorization": f"Bearer {self.api_key}",
            "User-Agent": USER_AGENT,
        }
        data: Optional[bytes] = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key
        retries = self.max_retries if max_retries is None else max_retries

        attempt = 0
        while True:
            attempt += 1
            retries_left = attempt <= retries
            try:
                answer = self._try_once(method, url, headers, data, sink)
            except _NoAnswer as no_answer:
                if not retries_left:
                    raise ApiConnectionError(no_answer.message, code=no_answer.code, idempotency_key=key) from no_answer.cause
                self.sleep(self._backoff(attempt))
                continue
            request_id = answer.headers.get("x-request-id")
            if 200 <= answer.status < 300:
                info = ResponseInfo(
                    status=answer.status,
                    headers=answer.headers,
                    request_id=request_id,
                    idempotency_key=key,
                    replayed=answer.headers.get("idempotent-replayed") == "true",
                    attempts=attempt,
                )
                self._local.last_response = info
                return answer, info
            retry_after = parse_retry_after(answer.headers.get("retry-after"))
            error = _api_error(answer, request_id, retry_after, key)
            # The answer says whether trying again can help; without callgate's body, 429 and 5xx are tried again.
            retryable = error.retryable if error.retryable is not None else (answer.status == 429 or answer.status >= 500)
            if not retryable or not retries_left:
                raise error
            if retry_after is not None and retry_after > self.max_retry_after:
                raise error
            self.sleep(retry_after if retry_after is not None else self._backoff(attempt))

    def _url(self, path: str, query: Optional[Mapping[str, QueryValue]]) -> str:
        params = []
        for name, value in (query or {}).items():
            if value is None:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif hasattr(value, "isoformat"):
                if getattr(value, "tzinfo", None) is None:
                    raise ValueError(f"callgate: {name} needs a time zone (an aware datetime, or a string such as 2026-11-24T09:00:00Z).")
                value = value.isoformat()
            params.append((name, str(value)))
        # quote_via=quote: a `+` of a number or a time zone is sent as %2B, never as a space.
        encoded = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        return f"{self.base_url}{path}" + (f"?{encoded}" if encoded else "")

    def _backoff(self, attempt: int) -> float:
        """Full jitter ("exponential backoff and jitter"): a delay drawn from 0 to the doubled cap."""
        cap = min(self.max_retry_delay, self.initial_retry_delay * (2 ** (attempt - 1)))
        return random.uniform(0, cap)

    def _try_once(self, method: str, url: str, headers: Dict[str, str], data: Optional[bytes], sink: Optional[IO[bytes]]) -> _Answer:
        """One try: the answer read to its end, or _NoAnswer with the reason none came."""
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        written = 0
        try:
            try:
                response = urllib.request.urlopen(request, timeout=self.timeout)
            except urllib.error.HTTPError as error_answer:
                # An error status: a whole answer, its body read like any other (a body cut off is no answer).
                error_body = error_answer.read() if error_answer.fp is not None else b""
                error_answer.close()
                return _Answer(error_answer.code, _headers_of(error_answer.headers), error_body, 0)
            with response:
                answer_headers = _headers_of(response.headers)
                if sink is None:
                    return _Answer(response.status, answer_headers, response.read(), 0)
                while True:
                    chunk = response.read(64 * 1024)
                    if not chunk:
                        return _Answer(response.status, answer_headers, b"", written)
                    try:
                        sink.write(chunk)
                    except Exception as write_error:  # the caller's file, not the network: never retried
                        raise _SinkError(write_error) from write_error
                    written += len(chunk)
        except (http.client.HTTPException, OSError) as error:  # urllib.error.URLError is an OSError
            reason = getattr(error, "reason", None)
            if isinstance(error, urllib.error.URLError) and not isinstance(reason, BaseException):
                # urllib's own refusal (an unknown URL scheme, say): trying again would fail the same way.
                raise CallgateError(f"The request could not be sent ({method} {url}): {reason}.", code="request_failed") from error
            if written > 0:
                raise ApiConnectionError(
                    f"The answer broke off after {written} bytes were written ({method} {url}): {_describe(error)}.",
                    code="connection_error",
                ) from error
            if _is_timeout(error):
                raise _NoAnswer("timeout", f"No answer from callgate within {self.timeout} s ({method} {url}).", error) from error
            raise _NoAnswer(
                "connection_error",
                f"The connection to callgate failed before an answer ({method} {url}): {_describe(error)}.",
                error,
            ) from error


class _NoAnswer(Exception):
    def __init__(self, code: str, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.cause = cause


class _SinkError(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Headers(dict):  # type: ignore[type-arg]
    """Response headers with lower-case names; ``get`` takes any case."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


def _headers_of(message: Any) -> Mapping[str, str]:
    headers = _Headers()
    for name, value in message.items():
        name = name.lower()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def _describe(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    inner = reason if isinstance(reason, BaseException) else error
    text = str(inner) or type(inner).__name__
    return f"{type(inner).__name__}: {text}" if type(inner).__name__ not in text else text


def _api_error(answer: _Answer, request_id: Optional[str], retry_after: Optional[float], key: Optional[str]) -> ApiError:
    """The error of an answer: ``{error, message, request_id, param}`` as callgate renders every failure."""
    body: Dict[str, Any] = {}
    text = answer.body.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        pass  # Not callgate's JSON (a proxy's page, say): the status speaks alone.
    error_code = body.get("error")
    message = body.get("message")
    body_request_id = body.get("request_id")
    param = body.get("param")
    retryable = body.get("retryable")
    cls = error_class_for(answer.status)
    return cls(
        message if isinstance(message, str) else f"callgate answered {answer.status}: {text[:200]}",
        status=answer.status,
        code=error_code if isinstance(error_code, str) else f"http_{answer.status}",
        request_id=body_request_id if isinstance(body_request_id, str) else request_id,
        param=param if isinstance(param, str) else None,
        retry_after=None if retry_after is None else int(math.ceil(retry_after)),
        idempotency_key=key,
        retryable=retryable if isinstance(retryable, bool) else None,
    )
