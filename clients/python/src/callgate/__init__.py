"""callgate: the Python client of the callgate API, standard library only.

import callgate

client = callgate.Client("cg_test_...", base_url="http://127.0.0.1:3000")
call = client.create_call(agent_id="agent_demo_simulator", to="+14155550123")
for ended in client.list_calls(status="completed"):
    print(ended["id"], ended.get("duration_seconds"))
# In a webhook receiver, on the raw body: raises unless callgate signed it.
event = callgate.verify_webhook(raw_body, headers, "whsec_...")
"""

from ._client import DEFAULT_BASE_URL, Client
from ._http import USER_AGENT, ResponseInfo
from ._pagination import Page, PageIterator
from ._version import VERSION
from .errors import (
    ApiConnectionError,
    ApiError,
    AuthenticationError,
    CallgateError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    WebhookVerificationError,
)
from .webhooks import WebhookHeaders, sign_webhook, verify_webhook

__version__ = VERSION

__all__ = [
    "Client",
    "DEFAULT_BASE_URL",
    "USER_AGENT",
    "ResponseInfo",
    "Page",
    "PageIterator",
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
    "verify_webhook",
    "sign_webhook",
    "WebhookHeaders",
    "__version__",
]
