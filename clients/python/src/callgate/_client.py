"""The client: one method per route of the API (docs/api.md), with safe retries (see _http.py)."""

from __future__ import annotations

from datetime import datetime
from typing import IO, Any, Dict, Iterable, List, Optional, Union, cast
from urllib.parse import quote

from ._http import QueryValue, ResponseInfo, Transport
from ._pagination import Page, PageIterator
from .types import (
    Agent,
    Batch,
    BatchRecipientParams,
    Call,
    CallCreated,
    CallingWindow,
    CallTranscript,
    Event,
    Metadata,
    Recipient,
    RecordingDownload,
    RetryPolicy,
    Suppression,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
)

__all__ = ["Client", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "http://127.0.0.1:3000"


def _id(value: str) -> str:
    """A path segment, encoded (a suppression's ``+``, an id with a ``/``)."""
    if not isinstance(value, str) or value == "":
        raise ValueError(f"callgate: an id must be a non-empty string, not {value!r}")
    return quote(value, safe="")


def _iso(value: Optional[Union[str, datetime]], name: str) -> Optional[str]:
    if not isinstance(value, datetime):
        return value
    if value.tzinfo is None:
        raise ValueError(f"callgate: {name} needs a time zone (an aware datetime, or a string such as 2026-11-24T09:00:00Z).")
    return value.isoformat()


def _without_none(fields: Dict[str, Any]) -> Dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


class Client:
    """A client of one callgate server with one API key (``cg_live_...`` or ``cg_test_...``).

    ``timeout`` is in seconds, for connecting and for each read of one try. ``max_retries`` is how many
    times a request is tried again after the first try (connection errors, timeouts, 429 and 5xx; never
    another 4xx): the delay before retry n is drawn from 0 to ``initial_retry_delay * 2**(n-1)`` seconds
    (at most ``max_retry_delay``), or is the server's ``Retry-After``; a ``Retry-After`` longer than
    ``max_retry_after`` is not waited out but raised at once (``error.retry_after``). A client may be
    shared between threads.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 30,
        max_retries: int = 3,
        *,
        initial_retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        max_retry_after: float = 60.0,
    ) -> None:
        self._transport = Transport(
            api_key,
            base_url,
            timeout=timeout,
            max_retries=max_retries,
            initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay,
            max_retry_after=max_retry_after,
        )

    def __repr__(self) -> str:
        return f"callgate.Client(base_url={self._transport.base_url!r}, api_key={self._transport.api_key[:12] + '...'!r})"

    @property
    def last_response(self) -> Optional[ResponseInfo]:
        """The answer behind the last value this thread got back: status, headers, request_id, the
        Idempotency-Key sent, ``replayed`` (Idempotent-Replayed) and the number of tries."""
        return self._transport.last_response

    # -- internals -----------------------------------------------------------------------------------

    def _get(self, path: str, query: Optional[Dict[str, QueryValue]] = None) -> Any:
        return self._transport.request("GET", path, query=query)

    def _page(self, path: str, query: Dict[str, QueryValue]) -> Page[Any]:
        return Page.of(self._get(path, query))

    def _iterate(self, path: str, query: Dict[str, QueryValue]) -> PageIterator[Any]:
        first = query.pop("starting_after", None)
        return PageIterator(lambda cursor: self._page(path, {**query, "starting_after": cursor}), first)

    # -- calls ---------------------------------------------------------------------------------------

    def create_call(
        self,
        agent_id: str,
        to: str,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
    ) -> CallCreated:
        """POST /v1/calls: places a call to ``to`` (E.164) with the agent ``agent_id``; ``metadata`` is passed
        to the agent as dynamic variables. One Idempotency-Key (``idempotency_key``, or a new uuid4) is sent
        on every try, so a retry after a lost answer gets the same call, never a second one. Store the key
        with your record to retry the same call later (after an ApiConnectionError, say)."""
        body = _without_none({"agent_id": agent_id, "to": to, "metadata": metadata})
        return cast(CallCreated, self._transport.request("POST", "/v1/calls", body=body, idempotent=True, idempotency_key=idempotency_key))

    def get_call(self, call_id: str) -> Call:
        """GET /v1/calls/{id}: the call, with its outcome once it ended."""
        return cast(Call, self._get(f"/v1/calls/{_id(call_id)}"))

    def list_calls(self, **filters: QueryValue) -> PageIterator[Call]:
        """Every call of the key's mode matching the filters, newest first, across pages. Filters: ``status``
        (initiated, completed, failed), ``agent_id``, ``to``, ``batch_id``, ``reference``, ``created_after``
        and ``created_before`` (ISO 8601 with a time zone, or aware datetimes; exclusive), ``limit`` (the page
        size, 1 to 100), ``starting_after`` (a call id to start after)."""
        return cast("PageIterator[Call]", self._iterate("/v1/calls", dict(filters)))

    def list_calls_page(self, **filters: QueryValue) -> Page[Call]:
        """GET /v1/calls: one page (``data``, ``has_more``); the next one is ``starting_after=page.data[-1]["id"]``."""
        return cast("Page[Call]", self._page("/v1/calls", dict(filters)))

    def cancel_call(self, call_id: str) -> Call:
        """POST /v1/calls/{id}/cancel: the call's provider ends it (cancelled while it rings, hung up once
        answered); the call then carries ``cancel_requested_at`` and ends with one event as usual
        (call.failed with failure_reason cancelled if nobody had answered). Cancelling again changes nothing,
        so it is retried like a GET. ConflictError call_already_ended once it ended, cancel_not_supported
        where the provider cannot end calls (ElevenLabs)."""
        return cast(Call, self._transport.request("POST", f"/v1/calls/{_id(call_id)}/cancel"))

    def get_transcript(self, call_id: str) -> CallTranscript:
        """GET /v1/calls/{id}/transcript: the ended call's turns in order (ConflictError call_not_ended
        while the call is initiated)."""
        return cast(CallTranscript, self._get(f"/v1/calls/{_id(call_id)}/transcript"))

    def get_recording(self, call_id: str) -> bytes:
        """GET /v1/calls/{id}/recording: the ended call's audio, whole (audio/wav from the simulator). A
        recording may be tens of megabytes: ``download_recording`` writes it to a file as it arrives.
        NotFoundError recording_not_available when the provider kept none."""
        body, _ = self._transport.request_bytes("GET", f"/v1/calls/{_id(call_id)}/recording")
        return body

    def download_recording(self, call_id: str, file: IO[bytes]) -> RecordingDownload:
        """GET /v1/calls/{id}/recording, copied to ``file`` (opened for binary writing) as it arrives. Retried
        until the answer's headers came; a body that breaks off after bytes were written raises
        ApiConnectionError (start again with an empty file)."""
        size, headers = self._transport.stream_to(f"/v1/calls/{_id(call_id)}/recording", file)
        return {"content_type": headers.get("content-type", "application/octet-stream"), "size": size}

    # -- agents --------------------------------------------------------------------------------------

    def get_agent(self, agent_id: str) -> Agent:
        """GET /v1/agents/{id}: an agent of the key's account."""
        return cast(Agent, self._get(f"/v1/agents/{_id(agent_id)}"))

    def list_agents(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> PageIterator[Agent]:
        """Every agent of the account (what ``agent_id`` may name), newest first, across pages."""
        return cast("PageIterator[Agent]", self._iterate("/v1/agents", {"limit": limit, "starting_after": starting_after}))

    def list_agents_page(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> Page[Agent]:
        return cast("Page[Agent]", self._page("/v1/agents", {"limit": limit, "starting_after": starting_after}))

    # -- batches -------------------------------------------------------------------------------------

    def create_batch(
        self,
        agent_id: str,
        recipients: Iterable[BatchRecipientParams],
        *,
        name: Optional[str] = None,
        scheduled_at: Optional[Union[str, datetime]] = None,
        max_concurrency: Optional[int] = None,
        calling_window: Optional[CallingWindow] = None,
        retry: Optional[RetryPolicy] = None,
        idempotency_key: Optional[str] = None,
    ) -> Batch:
        """POST /v1/batches: up to 10,000 recipients (``{"to", "metadata"?, "reference"?}``) called with one
        agent, from ``scheduled_at`` (ISO 8601 or an aware datetime; default now), within ``calling_window``, retrying failures as ``retry``
        says (docs/batches.md). One Idempotency-Key across its tries, as ``create_call``."""
        body = _without_none(
            {
                "agent_id": agent_id,
                "recipients": list(recipients),
                "name": name,
                "scheduled_at": _iso(scheduled_at, "scheduled_at"),
                "max_concurrency": max_concurrency,
                "calling_window": calling_window,
                "retry": retry,
            }
        )
        return cast(Batch, self._transport.request("POST", "/v1/batches", body=body, idempotent=True, idempotency_key=idempotency_key))

    def get_batch(self, batch_id: str) -> Batch:
        return cast(Batch, self._get(f"/v1/batches/{_id(batch_id)}"))

    def list_batches(
        self, *, status: Optional[str] = None, limit: Optional[int] = None, starting_after: Optional[str] = None
    ) -> PageIterator[Batch]:
        return cast(
            "PageIterator[Batch]", self._iterate("/v1/batches", {"status": status, "limit": limit, "starting_after": starting_after})
        )

    def list_batches_page(
        self, *, status: Optional[str] = None, limit: Optional[int] = None, starting_after: Optional[str] = None
    ) -> Page[Batch]:
        return cast("Page[Batch]", self._page("/v1/batches", {"status": status, "limit": limit, "starting_after": starting_after}))

    def list_batch_recipients(
        self, batch_id: str, *, status: Optional[str] = None, limit: Optional[int] = None, starting_after: Optional[str] = None
    ) -> PageIterator[Recipient]:
        """A batch's recipients in the order sent, across pages."""
        query: Dict[str, QueryValue] = {"status": status, "limit": limit, "starting_after": starting_after}
        return cast("PageIterator[Recipient]", self._iterate(f"/v1/batches/{_id(batch_id)}/recipients", query))

    # Pause, resume and cancel end in a state, not a new resource: the same request twice gives the same
    # answer, so they are retried like GETs (without an Idempotency-Key, which these routes do not read).
    def pause_batch(self, batch_id: str) -> Batch:
        return cast(Batch, self._transport.request("POST", f"/v1/batches/{_id(batch_id)}/pause"))

    def resume_batch(self, batch_id: str) -> Batch:
        return cast(Batch, self._transport.request("POST", f"/v1/batches/{_id(batch_id)}/resume"))

    def cancel_batch(self, batch_id: str, *, hang_up: bool = False) -> Batch:
        """Recipients not yet dialed end cancelled; with ``hang_up=True`` the calls under way are asked to
        end too (as ``cancel_call``)."""
        body = {"hang_up": True} if hang_up else None
        return cast(Batch, self._transport.request("POST", f"/v1/batches/{_id(batch_id)}/cancel", body=body))

    # -- suppressions --------------------------------------------------------------------------------

    def create_suppression(self, to: str, reason: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> Suppression:
        """POST /v1/suppressions: ``to`` is never called again (a number already listed answers its entry)."""
        body = _without_none({"to": to, "reason": reason})
        return cast(
            Suppression, self._transport.request("POST", "/v1/suppressions", body=body, idempotent=True, idempotency_key=idempotency_key)
        )

    def get_suppression(self, to: str) -> Suppression:
        return cast(Suppression, self._get(f"/v1/suppressions/{_id(to)}"))

    def delete_suppression(self, to: str) -> None:
        """DELETE /v1/suppressions/{to}: the number may be called again (NotFoundError when not listed)."""
        self._transport.request("DELETE", f"/v1/suppressions/{_id(to)}")

    def list_suppressions(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> PageIterator[Suppression]:
        return cast("PageIterator[Suppression]", self._iterate("/v1/suppressions", {"limit": limit, "starting_after": starting_after}))

    # -- events --------------------------------------------------------------------------------------

    def get_event(self, event_id: str) -> Event:
        """GET /v1/events/{id}: the event exactly as its webhooks carried it (the last 30 days)."""
        return cast(Event, self._get(f"/v1/events/{_id(event_id)}"))

    def list_events(
        self,
        *,
        type: Optional[str] = None,
        created_after: Optional[QueryValue] = None,
        limit: Optional[int] = None,
        starting_after: Optional[str] = None,
    ) -> PageIterator[Event]:
        """The key's events of the last 30 days, newest first, across pages: to catch up on missed webhooks,
        pass the ``created_after`` of the last event handled, and deduplicate on ``id``."""
        query: Dict[str, QueryValue] = {"type": type, "created_after": created_after, "limit": limit, "starting_after": starting_after}
        return cast("PageIterator[Event]", self._iterate("/v1/events", query))

    def list_events_page(
        self,
        *,
        type: Optional[str] = None,
        created_after: Optional[QueryValue] = None,
        limit: Optional[int] = None,
        starting_after: Optional[str] = None,
    ) -> Page[Event]:
        query: Dict[str, QueryValue] = {"type": type, "created_after": created_after, "limit": limit, "starting_after": starting_after}
        return cast("Page[Event]", self._page("/v1/events", query))

    # -- webhook endpoints ---------------------------------------------------------------------------

    def create_webhook_endpoint(
        self,
        url: str,
        enabled_events: Optional[List[str]] = None,
        description: Optional[str] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> WebhookEndpointWithSecret:
        """POST /v1/webhook_endpoints: an endpoint in the key's mode for ``enabled_events`` (default every
        type), answered with its ``secret`` (whsec_...), which no other read shows: store it. One
        Idempotency-Key across its tries, so a retry after a lost answer gets the same endpoint and secret."""
        body = _without_none({"url": url, "enabled_events": enabled_events, "description": description})
        return cast(
            WebhookEndpointWithSecret,
            self._transport.request("POST", "/v1/webhook_endpoints", body=body, idempotent=True, idempotency_key=idempotency_key),
        )

    def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        return cast(WebhookEndpoint, self._get(f"/v1/webhook_endpoints/{_id(endpoint_id)}"))

    def list_webhook_endpoints(
        self, *, url: Optional[str] = None, limit: Optional[int] = None, starting_after: Optional[str] = None
    ) -> PageIterator[WebhookEndpoint]:
        """Every endpoint of the key's mode, newest first, across pages; ``url`` keeps those of exactly that
        URL (as the endpoint shows it), which is how a tool finds the endpoint it made."""
        query: Dict[str, QueryValue] = {"url": url, "limit": limit, "starting_after": starting_after}
        return cast("PageIterator[WebhookEndpoint]", self._iterate("/v1/webhook_endpoints", query))

    def update_webhook_endpoint(
        self,
        endpoint_id: str,
        *,
        url: Optional[str] = None,
        enabled_events: Optional[List[str]] = None,
        description: Optional[str] = None,
        disabled: Optional[bool] = None,
    ) -> WebhookEndpoint:
        """PATCH /v1/webhook_endpoints/{id}: the fields given change (``disabled=False`` enables it again).
        Setting fields twice gives the same endpoint, so it is retried like a GET."""
        body = _without_none({"url": url, "enabled_events": enabled_events, "description": description, "disabled": disabled})
        return cast(WebhookEndpoint, self._transport.request("PATCH", f"/v1/webhook_endpoints/{_id(endpoint_id)}", body=body))

    def delete_webhook_endpoint(self, endpoint_id: str) -> None:
        """DELETE /v1/webhook_endpoints/{id}: nothing more is sent to it (NotFoundError once deleted)."""
        self._transport.request("DELETE", f"/v1/webhook_endpoints/{_id(endpoint_id)}")

    def rotate_webhook_endpoint_secret(self, endpoint_id: str, *, max_retries: int = 0) -> WebhookEndpointWithSecret:
        """POST /v1/webhook_endpoints/{id}/rotate_secret: a new ``secret``; the old one keeps signing beside it
        for 24 hours. Not retried unless ``max_retries`` says so: a second rotation after a lost answer would
        end the old secret's 24 hours at once, for a new secret nobody saw."""
        path = f"/v1/webhook_endpoints/{_id(endpoint_id)}/rotate_secret"
        return cast(WebhookEndpointWithSecret, self._transport.request("POST", path, max_retries=max_retries))
