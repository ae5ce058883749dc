"""Verifies a webhook delivery as docs/webhooks.md says (Standard Webhooks), with the standard library only.

The raw body and the three ``webhook-*`` headers; a timestamp within 5 minutes of this machine's clock;
HMAC-SHA256 with the key that is the base64 after ``whsec_``; any ``v1`` signature of the space-separated
list matching (two while a secret is being rotated), compared in constant time. Only then is it parsed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Iterable, List, Mapping, Optional, Protocol, Tuple, Union, cast

from .errors import WebhookVerificationError
from .types import WebhookEvent

__all__ = ["verify_webhook", "sign_webhook", "WebhookHeaders", "DEFAULT_TOLERANCE_SECONDS"]


class _HeaderItems(Protocol):
    """Headers as frameworks give them: http.server's ``self.headers``, Flask's, Django's ``request.headers``."""

    def items(self) -> Iterable[Tuple[Any, Any]]: ...


WebhookHeaders = Union[Mapping[str, str], _HeaderItems]

DEFAULT_TOLERANCE_SECONDS = 5 * 60

_HEADER_NAMES = ("webhook-id", "webhook-timestamp", "webhook-signature")


def _refuse(message: str) -> WebhookVerificationError:
    return WebhookVerificationError(message, code="webhook_verification_failed")


def _header(headers: Any, name: str) -> Optional[str]:
    """The header ``name`` in any case: a dict, any Mapping, http.server's ``self.headers``, Flask's or
    Django's headers (anything with ``items()``). Several values of one name are joined by a space."""
    values: List[str] = []
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in items:
        if isinstance(key, bytes):
            key = key.decode("latin-1")
        if isinstance(key, str) and key.lower() == name:
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            if isinstance(value, (list, tuple)):
                values.extend(str(part) for part in value)
            elif value is not None:
                values.append(str(value))
    return " ".join(values) if values else None


def _key_of(secret: str) -> bytes:
    text = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _refuse("The secret is not a callgate signing secret (whsec_ and base64): check WEBHOOK_SECRET.") from None


def sign_webhook(payload: Union[bytes, str], msg_id: str, timestamp: int, secret: str) -> str:
    """The ``v1,<base64>`` signature callgate sends for this body, id and timestamp (for tests and examples)."""
    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key_of(secret), signed, hashlib.sha256).digest()).decode("ascii")


def verify_webhook(
    payload: Union[bytes, bytearray, memoryview, str],
    headers: WebhookHeaders,
    secret: str,
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> WebhookEvent:
    """Checks that ``payload`` (the raw body, exactly as received) was signed by callgate with ``secret``
    (``whsec_...``, the endpoint's) and returns the event, a dict (``id``, ``type``, ``created_at``,
    ``livemode``, ``data``).

    Raises WebhookVerificationError when a header is missing, the timestamp is more than
    ``tolerance_seconds`` (5 minutes) away from now, or no ``v1`` signature matches: answer 400 then.
    Header names are matched in any case. Event types this version does not know are returned too:
    ignore them. Deduplicate on ``event["id"]`` (the ``webhook-id``): a delivery may come twice.
    """
    found = {}
    for name in _HEADER_NAMES:
        value = _header(headers, name)
        if not value or not value.strip():
            raise _refuse(f"The {name} header is missing: this request was not sent by callgate.")
        found[name] = value.strip()
    timestamp_text = found["webhook-timestamp"]
    if not (timestamp_text.isascii() and timestamp_text.isdigit()):
        raise _refuse("The webhook-timestamp header is not a Unix time in seconds.")
    timestamp = int(timestamp_text)
    now = time.time()
    if timestamp < now - tolerance_seconds:
        raise _refuse(f"The webhook-timestamp is more than {tolerance_seconds} seconds old: a replay, or this machine's clock is off.")
    if timestamp > now + tolerance_seconds:
        raise _refuse(f"The webhook-timestamp is more than {tolerance_seconds} seconds ahead: this machine's clock is off.")

    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    key = _key_of(secret)
    signed = f"{found['webhook-id']}.{timestamp_text}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    matched = False
    for entry in found["webhook-signature"].split():
        version, _, signature = entry.partition(",")
        # Every entry is compared (no early exit), in constant time.
        if version == "v1" and hmac.compare_digest(signature.encode("ascii", errors="replace"), expected):
            matched = True
    if not matched:
        raise _refuse("No v1 signature of the webhook-signature header matches this body with this secret.")

    try:
        event = json.loads(body.decode("utf-8"))
    except ValueError:
        raise _refuse("The webhook verified but its body is not JSON.") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise _refuse("The webhook verified but is not a callgate event (no type).")
    return cast(WebhookEvent, event)
