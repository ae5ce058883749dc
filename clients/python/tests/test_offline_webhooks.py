"""verify_webhook on hand-made requests (no callgate needed): docs/webhooks.md's own example, every way a
request is refused, and the header shapes receivers pass. Real deliveries: test_server_webhooks.py."""

from __future__ import annotations

import base64
import json
import os
import re
import time
import unittest
from email.message import Message

import support  # noqa: F401  (puts src on sys.path)

import callgate

SECRET = "whsec_" + base64.b64encode(os.urandom(24)).decode()
OTHER_SECRET = "whsec_" + base64.b64encode(os.urandom(24)).decode()
BODY = json.dumps(
    {"id": "evt_1", "type": "call.completed", "created_at": "2026-11-24T09:00:00Z", "livemode": False, "data": {"id": "call_1"}}
).encode()


def headers_for(body: bytes = BODY, secrets: tuple = (SECRET,), timestamp: "int | None" = None, msg_id: str = "evt_1") -> dict:
    when = int(time.time()) if timestamp is None else timestamp
    signature = " ".join(callgate.sign_webhook(body, msg_id, when, secret) for secret in secrets)
    return {"webhook-id": msg_id, "webhook-timestamp": str(when), "webhook-signature": signature}


class VerifyWebhookTest(unittest.TestCase):
    def refused(self, body: bytes, headers: object, secret: str = SECRET) -> str:
        with self.assertRaises(callgate.WebhookVerificationError) as raised:
            callgate.verify_webhook(body, headers, secret)  # type: ignore[arg-type]
        error = raised.exception
        self.assertEqual((error.code, error.status, error.request_id), ("webhook_verification_failed", None, None))
        self.assertIsInstance(error, callgate.CallgateError)
        return error.message

    def test_the_documented_example_signs_as_docs_webhooks_md_says(self) -> None:
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "webhooks.md"), encoding="utf-8") as file:
            doc = file.read()
        block = re.search(r"```text\n(secret:.*?)```", doc, re.S)
        assert block is not None, "docs/webhooks.md lost its signature example"
        fields = dict(re.findall(r"^([a-z-]+):\s+(.+)$", block.group(1), re.M))
        timestamp = int(fields["webhook-timestamp"])
        signature = callgate.sign_webhook(fields["body"].encode(), fields["webhook-id"], timestamp, fields["secret"])
        self.assertEqual(signature, fields["webhook-signature"])
        # Its timestamp is long past, so a complete check refuses it at the timestamp step, as the doc says.
        self.assertIn(
            "old", self.refused(fields["body"].encode(), {k: v for k, v in fields.items() if k.startswith("webhook-")}, fields["secret"])
        )
        event = callgate.verify_webhook(fields["body"], fields, fields["secret"], tolerance_seconds=10**10)
        self.assertEqual(event["type"], "call.completed")

    def test_a_good_signature_returns_the_event(self) -> None:
        event = callgate.verify_webhook(BODY, headers_for(), SECRET)
        self.assertEqual((event["id"], event["type"]), ("evt_1", "call.completed"))
        self.assertEqual(callgate.verify_webhook(bytearray(BODY), headers_for(), SECRET), event)
        self.assertEqual(callgate.verify_webhook(BODY.decode(), headers_for(), SECRET), event)
        secret_without_prefix = SECRET[len("whsec_") :]
        self.assertEqual(callgate.verify_webhook(BODY, headers_for(), secret_without_prefix), event)

    def test_header_names_in_any_case_and_header_objects(self) -> None:
        upper = {name.upper(): value for name, value in headers_for().items()}
        self.assertEqual(callgate.verify_webhook(BODY, upper, SECRET)["id"], "evt_1")
        message = Message()
        for name, value in headers_for().items():
            message[name.title()] = value
        self.assertEqual(callgate.verify_webhook(BODY, message, SECRET)["id"], "evt_1")

    def test_any_v1_signature_of_several_matches(self) -> None:
        rotating = headers_for(secrets=(OTHER_SECRET, SECRET))
        self.assertEqual(len(rotating["webhook-signature"].split(" ")), 2)
        self.assertEqual(callgate.verify_webhook(BODY, rotating, SECRET)["id"], "evt_1")
        self.assertEqual(callgate.verify_webhook(BODY, rotating, OTHER_SECRET)["id"], "evt_1")
        signature = headers_for()["webhook-signature"].split(",", 1)[1]
        other_versions = dict(headers_for(), **{"webhook-signature": f"v1a,{signature} v2,{signature}"})
        self.assertIn("No v1 signature", self.refused(BODY, other_versions))

    def test_refusals(self) -> None:
        now = int(time.time())
        self.assertIn("No v1 signature", self.refused(BODY.replace(b"call_1", b"call_2"), headers_for()))
        self.assertIn("No v1 signature", self.refused(BODY, headers_for(secrets=(OTHER_SECRET,))))
        self.assertIn("No v1 signature", self.refused(BODY, dict(headers_for(), **{"webhook-id": "evt_2"})))
        self.assertIn("old", self.refused(BODY, headers_for(timestamp=now - 301)))
        self.assertIn("ahead", self.refused(BODY, headers_for(timestamp=now + 301)))
        self.assertEqual(callgate.verify_webhook(BODY, headers_for(timestamp=now - 290), SECRET)["id"], "evt_1")
        self.assertIn("Unix time", self.refused(BODY, dict(headers_for(), **{"webhook-timestamp": "12e9"})))
        for name in ("webhook-id", "webhook-timestamp", "webhook-signature"):
            without = {k: v for k, v in headers_for().items() if k != name}
            self.assertIn(f"The {name} header is missing", self.refused(BODY, without))
        self.assertIn("not a callgate signing secret", self.refused(BODY, headers_for(), "whsec_not base64!"))
        not_event = b'["a list"]'
        self.assertIn("not a callgate event", self.refused(not_event, headers_for(body=not_event)))


if __name__ == "__main__":
    unittest.main()
