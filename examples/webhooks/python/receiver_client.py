"""A callgate webhook receiver that verifies with the Python client's verify_webhook (Python 3.9+).

The same receiver as receiver.py, with the signature and timestamp checks of the `callgate` package
(clients/python, standard library only) instead of its own:

    pip install ./clients/python
    WEBHOOK_SECRET=whsec_... PORT=8080 python3 examples/webhooks/python/receiver_client.py
"""

import json
import logging
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import callgate

SECRET = os.environ["WEBHOOK_SECRET"]

# One JSON line per request on stdout; logging is thread-safe, so lines of concurrent requests never mix.
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")


def log(**fields):
    logging.info(json.dumps(fields))


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        # The raw body, exactly as received: JSON parsed and serialised again would not verify.
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            event = callgate.verify_webhook(body, self.headers, SECRET)
        except callgate.WebhookVerificationError as error:
            log(verified=False, error=error.message)
            self.send_response(400)
            self.end_headers()
            return
        log(verified=True, id=event["id"], type=event["type"])
        # Answer first, work later: queue the event and skip ids already seen (retries reuse webhook-id).
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass  # the JSON lines above are the log


if __name__ == "__main__":
    ThreadingHTTPServer(("", int(os.environ.get("PORT", "8080"))), Handler).serve_forever()
