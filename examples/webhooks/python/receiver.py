"""A callgate webhook receiver with Python's standard library only (Python 3.9+).

It verifies each request's Standard Webhooks signature on the raw body, checks the timestamp, and
answers fast.

    WEBHOOK_SECRET=whsec_... PORT=8080 python3 receiver.py
"""
import base64
import hashlib
import hmac
import json
import logging
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 5 * 60
# The key is the base64-decoded part after `whsec_`, not the text itself.
KEY = base64.b64decode(os.environ["WEBHOOK_SECRET"].removeprefix("whsec_"))


class VerificationError(Exception):
    pass


def verify(body: bytes, headers) -> dict:
    """Returns the event if the headers sign exactly this body; raises VerificationError otherwise."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        raise VerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    if not (timestamp.isascii() and timestamp.isdigit()) or abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        raise VerificationError("timestamp is more than 5 minutes away from now")
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(KEY, signed, hashlib.sha256).digest())
    # Several signatures, space-separated, while a secret is being rotated: one match is enough.
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected):
            return json.loads(body)
    raise VerificationError("no matching signature")


# One JSON line per request on stdout; logging is thread-safe, so lines of concurrent requests never mix.
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")


def log(**fields):
    logging.info(json.dumps(fields))


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            event = verify(body, self.headers)
        except VerificationError as error:
            log(verified=False, error=str(error))
            self.send_response(400)
            self.end_headers()
            return
        log(verified=True, id=event["id"], type=event["type"])
        # Answer first, work later: queue the event and skip ids already seen (retries reuse webhook-id).
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    ThreadingHTTPServer(("", int(os.environ.get("PORT", "8080"))), Handler).serve_forever()
