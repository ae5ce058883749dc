"""The API's shapes as TypedDicts: what the methods return and what webhooks deliver (docs/openapi.json).

They are plain dicts at runtime. Fields that are not always present are in a ``total=False`` class (a
call's outcome, say, appears once it ended). Values the API may add later (an event type, a failure
reason) arrive as strings: treat one you do not know as unknown.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
    "MetadataValue",
    "Metadata",
    "CallStatus",
    "CallAnalysis",
    "CallCreated",
    "Call",
    "TranscriptTurn",
    "CallTranscript",
    "RecordingDownload",
    "Agent",
    "CallingWindow",
    "RetryPolicy",
    "BatchCounts",
    "Batch",
    "BatchRecipientParams",
    "Recipient",
    "Suppression",
    "CallCompletedData",
    "CallFailedData",
    "CallCompletedEvent",
    "CallFailedEvent",
    "BatchCompletedEvent",
    "WebhookTestData",
    "WebhookTestEvent",
    "Event",
    "WebhookEvent",
    "WebhookEndpoint",
    "WebhookEndpointWithSecret",
    "ErrorBody",
]

MetadataValue = Union[str, int, float, bool, None]
Metadata = Dict[str, MetadataValue]
"""Passed to the agent as dynamic_variables: keys of at most 64 characters, at most 5 KB of JSON."""

CallStatus = Literal["initiated", "completed", "failed"]


class CallAnalysis(TypedDict):
    """The provider's judgement (``successful``, None when it made none) and the results its agent collected."""

    successful: Optional[bool]
    data: Dict[str, MetadataValue]


class CallCreated(TypedDict):
    """The answer of POST /v1/calls (201): the call, still ``initiated``."""

    id: str
    agent_id: str
    to: str
    status: str
    created_at: str
    livemode: bool


class _CallRequired(TypedDict):
    id: str
    agent_id: str
    to: str
    status: str
    metadata: Optional[Metadata]
    created_at: str
    livemode: bool


class Call(_CallRequired, total=False):
    """A call as GET /v1/calls/{id} and GET /v1/calls answer it; its outcome once it ended."""

    duration_seconds: int
    transcript_summary: str
    started_at: str
    ended_at: str
    failure_reason: str
    failure_message: Optional[str]
    failed_at: str
    analysis: CallAnalysis
    batch_id: str
    reference: Optional[str]
    found_after_lost_answer: bool
    cancel_requested_at: str


class TranscriptTurn(TypedDict):
    role: str
    """``agent`` or ``user``."""
    text: str
    offset_seconds: Optional[float]


class CallTranscript(TypedDict):
    """GET /v1/calls/{id}/transcript: the ended call's conversation, turn by turn."""

    call_id: str
    turns: List[TranscriptTurn]


class RecordingDownload(TypedDict):
    """What ``Client.download_recording`` wrote."""

    content_type: str
    """The provider's audio type: audio/wav (the simulator, usually Retell), audio/mpeg (ElevenLabs), ..."""
    size: int
    """Bytes written."""


class Agent(TypedDict):
    """An agent of the account (GET /v1/agents): what a call or a batch is placed with."""

    id: str
    name: str
    provider: str
    """``simulator``, ``elevenlabs``, ``retell`` or ``vapi``."""
    provider_agent_id: str
    created_at: str


class _CallingWindowRequired(TypedDict):
    start: str
    end: str
    time_zone: str


class CallingWindow(_CallingWindowRequired, total=False):
    """Local hours (HH:MM) and days in which a batch dials (docs/batches.md)."""

    days: List[str]


class RetryPolicy(TypedDict, total=False):
    """Which failures of a batch recipient are dialed again, how often and after how long."""

    on: List[str]
    max_attempts: int
    delay_minutes: int


class BatchCounts(TypedDict):
    total: int
    queued: int
    dialing: int
    in_progress: int
    completed: int
    failed: int
    cancelled: int


class Batch(TypedDict):
    """A batch (POST/GET /v1/batches) and the data of its batch.completed event."""

    id: str
    agent_id: str
    name: Optional[str]
    status: str
    """``scheduled``, ``running``, ``paused``, ``completed`` or ``cancelled``."""
    scheduled_at: str
    max_concurrency: int
    counts: BatchCounts
    calling_window: Optional[CallingWindow]
    retry: Optional[RetryPolicy]
    created_at: str
    completed_at: Optional[str]
    livemode: bool


class _BatchRecipientRequired(TypedDict):
    to: str


class BatchRecipientParams(_BatchRecipientRequired, total=False):
    """One recipient of ``Client.create_batch``: a number (E.164), its metadata, your own reference."""

    metadata: Metadata
    reference: str


class _RecipientRequired(TypedDict):
    id: str
    to: str
    reference: Optional[str]
    metadata: Optional[Metadata]
    status: str
    call_ids: List[str]
    attempts: int
    last_failure_reason: Optional[str]
    last_failure_message: Optional[str]
    next_attempt_at: Optional[str]
    updated_at: str
    livemode: bool


class Recipient(_RecipientRequired, total=False):
    """A batch's recipient, as GET /v1/batches/{id}/recipients lists it."""

    call_id: str
    failure_reason: str
    failure_message: Optional[str]


class Suppression(TypedDict):
    """A number on the account's suppression list: never called."""

    id: str
    to: str
    reason: Optional[str]
    created_at: str


class _CallCompletedDataRequired(TypedDict):
    id: str
    agent_id: str
    status: str
    duration_seconds: int
    transcript_summary: str
    started_at: str
    ended_at: str
    analysis: CallAnalysis
    to: str
    metadata: Optional[Metadata]


class CallCompletedData(_CallCompletedDataRequired, total=False):
    batch_id: str
    reference: Optional[str]
    found_after_lost_answer: bool


class _CallFailedDataRequired(TypedDict):
    id: str
    agent_id: str
    status: str
    failure_reason: str
    """busy, no_answer, voicemail, rejected, provider_error, timeout or unknown."""
    failure_message: Optional[str]
    failed_at: str
    to: str
    metadata: Optional[Metadata]


class CallFailedData(_CallFailedDataRequired, total=False):
    batch_id: str
    reference: Optional[str]
    found_after_lost_answer: bool


class CallCompletedEvent(TypedDict):
    id: str
    """evt_..., also the webhook-id header of its deliveries: deduplicate on it."""
    type: Literal["call.completed"]
    created_at: str
    livemode: bool
    data: CallCompletedData


class CallFailedEvent(TypedDict):
    id: str
    type: Literal["call.failed"]
    created_at: str
    livemode: bool
    data: CallFailedData


class BatchCompletedEvent(TypedDict):
    id: str
    type: Literal["batch.completed"]
    created_at: str
    livemode: bool
    data: Batch


class WebhookTestData(TypedDict):
    endpoint_id: str
    message: str


class WebhookTestEvent(TypedDict):
    """Sent to try an endpoint (the portal's or the CLI's test); never listed by GET /v1/events."""

    id: str
    type: Literal["webhook.test"]
    created_at: str
    livemode: bool
    data: WebhookTestData


Event = Union[CallCompletedEvent, CallFailedEvent, BatchCompletedEvent]
"""An event as GET /v1/events answers it."""

WebhookEvent = Union[CallCompletedEvent, CallFailedEvent, BatchCompletedEvent, WebhookTestEvent]
"""What a webhook delivers, told apart by ``type``; ignore types you do not know."""


class WebhookEndpoint(TypedDict):
    """An endpoint as every read answers it: never with its secret."""

    id: str
    url: str
    enabled_events: List[str]
    description: str
    livemode: bool
    status: str
    """``enabled`` or ``disabled``."""
    disabled_reason: Optional[str]
    created_at: str


class WebhookEndpointWithSecret(WebhookEndpoint):
    """The answer of a creation or a rotation: the endpoint with its ``secret`` (whsec_...), shown there only."""

    secret: str


class _ErrorBodyRequired(TypedDict):
    error: str
    message: str
    request_id: str


class ErrorBody(_ErrorBodyRequired, total=False):
    """Every error answer's body: ``{"error", "message", "request_id", "param"?}``."""

    param: str


# Kept for annotations of values the API returns that this version has no name for.
JsonObject = Dict[str, Any]
