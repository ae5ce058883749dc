"""Every failure the client raises is a CallgateError with the same fields, whatever went wrong.

An answer of the API is an ApiError (its subclasses sort it by HTTP status); no answer at all is an
ApiConnectionError; a webhook that does not verify is a WebhookVerificationError. ``status`` and ``code``
carry the detail: ``code`` is the API's stable error code (docs/api.md, "Errors") or the client's own.
"""

from __future__ import annotations

from typing import Optional, Type

__all__ = [
    "CallgateError",
    "ApiError",
    "InvalidRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "ServerError",
    "ApiConnectionError",
    "WebhookVerificationError",
    "error_class_for",
]


class CallgateError(Exception):
    """The base of every error of this package."""

    status: Optional[int]
    """The HTTP status of the answer; None when none came (network, timeout, webhook verification)."""
    code: str
    """The API's error code (``invalid_request``, ``rate_limit_exceeded``, ...) or the client's own."""
    message: str
    request_id: Optional[str]
    """The request id (``req_...``) to quote to the operator; None when the server did not answer."""
    param: Optional[str]
    """The request field at fault, when the API names exactly one."""
    retry_after: Optional[int]
    """Seconds the server asked to wait before trying again (``Retry-After``), when it did."""
    idempotency_key: Optional[str]
    """The Idempotency-Key the request carried: retry the same create later with it."""
    retryable: Optional[bool]
    """Whether the same request can succeed if sent again, as the API's answer says; None when no answer said."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: str,
        request_id: Optional[str] = None,
        param: Optional[str] = None,
        retry_after: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        retryable: Optional[bool] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.param = param
        self.retry_after = retry_after
        self.idempotency_key = idempotency_key
        self.retryable = retryable

    def __str__(self) -> str:
        details = [self.code if self.status is None else f"{self.status} {self.code}"]
        if self.param is not None:
            details.append(f"param {self.param}")
        if self.request_id is not None:
            details.append(f"request {self.request_id}")
        return f"{self.message} ({', '.join(details)})"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r}, request_id={self.request_id!r})"
        )


class ApiError(CallgateError):
    """callgate answered with an error status: ``status`` is set, ``code`` is the body's ``error``."""

    status: int


class InvalidRequestError(ApiError):
    """400, 413, 415 and other refusals of the request itself: fix it, do not retry."""


class AuthenticationError(ApiError):
    """401 unauthorized: the API key is missing, malformed, unknown or revoked."""


class PermissionDeniedError(ApiError):
    """403: an agent not of the account (agent_not_found), a suppressed number (number_suppressed)."""


class NotFoundError(ApiError):
    """404: not_found, recording_not_available."""


class ConflictError(ApiError):
    """409: idempotency_conflict, call_not_ended, batch_finished, batch_not_resumable. Never retried."""


class RateLimitError(ApiError):
    """429 once the retries ran out (or Retry-After was longer than max_retry_after): see ``retry_after``."""


class ServerError(ApiError):
    """5xx once the retries ran out: provider_error, provider_timeout, idempotency_in_progress, ..."""


class ApiConnectionError(CallgateError):
    """No answer came: the connection failed or broke (``code`` connection_error) or a try timed out
    (``timeout``), on every try. For a create, retry later with ``idempotency_key``: never a second call."""


class WebhookVerificationError(CallgateError):
    """A webhook whose headers, timestamp or signature do not verify (``code`` webhook_verification_failed):
    answer it 400."""


def error_class_for(status: int) -> Type[ApiError]:
    """The ApiError subclass of an error answer's HTTP status."""
    if status == 401:
        return AuthenticationError
    if status == 403:
        return PermissionDeniedError
    if status == 404:
        return NotFoundError
    if status == 409:
        return ConflictError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ServerError
    return InvalidRequestError
