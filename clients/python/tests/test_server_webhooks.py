"""Webhook endpoints through the API, and verify_webhook on REAL deliveries: callgate (started by the node:test
wrapper, which allows private webhook targets) POSTs its signed events to an http.server receiver here."""

from __future__ import annotations

import base64
import json
import os
import time
import unittest

from support import Proxy, Receiver, quick_client, require_server, take_account

import callgate

base_url = ""


def setUpModule() -> None:
    global base_url
    base_url = require_server()


class WebhookEndpointsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.proxy = Proxy(base_url)
        self.addCleanup(self.proxy.close)

    def test_create_list_update_delete_and_rotate(self) -> None:
        account = take_account()
        client = quick_client(account.key, self.proxy.url)
        self.proxy.drop = 1
        created = client.create_webhook_endpoint(
            "https://example.com/py/0", enabled_events=["call.completed", "call.failed"], description="CRM"
        )
        tries = self.proxy.tries_of("POST", "/v1/webhook_endpoints")
        self.assertEqual([(t.status, t.dropped) for t in tries], [(201, True), (201, False)])
        self.assertEqual(tries[1].idempotency_key, tries[0].idempotency_key)
        self.assertTrue(client.last_response and client.last_response.replayed, "the retry got the first endpoint and secret")
        self.assertTrue(created["id"].startswith("we_"))
        self.assertTrue(created["secret"].startswith("whsec_"))
        self.assertEqual(
            (created["enabled_events"], created["description"], created["livemode"], created["status"], created["disabled_reason"]),
            (["call.completed", "call.failed"], "CRM", False, "enabled", None),
        )
        ids = [created["id"]] + [client.create_webhook_endpoint(f"https://example.com/py/{n}")["id"] for n in (1, 2)]

        listed = client.list_webhook_endpoints(limit=2).to_list()
        self.assertEqual([e["id"] for e in listed], ids[::-1], "one endpoint despite two tries; newest first across pages")
        self.assertTrue(all("secret" not in e for e in listed))
        self.assertEqual([e["id"] for e in client.list_webhook_endpoints(url="https://example.com/py/1")], [ids[1]])
        self.assertEqual(client.get_webhook_endpoint(ids[0])["url"], "https://example.com/py/0")

        updated = client.update_webhook_endpoint(ids[0], enabled_events=["batch.completed"], description="Zap")
        self.assertEqual((updated["enabled_events"], updated["description"]), (["batch.completed"], "Zap"))
        self.assertNotIn("secret", updated)
        disabled = client.update_webhook_endpoint(ids[0], disabled=True)
        self.assertEqual((disabled["status"], disabled["disabled_reason"]), ("disabled", "Disabled by a user."))
        self.assertEqual(client.update_webhook_endpoint(ids[0], disabled=False)["status"], "enabled")
        with self.assertRaises(callgate.InvalidRequestError) as refused:
            client.update_webhook_endpoint(ids[0], enabled_events=["call.answered"])
        self.assertEqual((refused.exception.code, refused.exception.param), ("invalid_request", "enabled_events"))
        with self.assertRaises(callgate.InvalidRequestError) as bad_url:
            client.create_webhook_endpoint("ftp://example.com/")
        self.assertEqual(bad_url.exception.param, "url")

        rotated = client.rotate_webhook_endpoint_secret(ids[1])
        self.assertEqual(rotated["id"], ids[1])
        self.assertTrue(rotated["secret"].startswith("whsec_"))
        self.proxy.drop = 1
        with self.assertRaises(callgate.ApiConnectionError):
            client.rotate_webhook_endpoint_secret(ids[1])
        self.assertEqual(
            len(self.proxy.tries_of("POST", f"/v1/webhook_endpoints/{ids[1]}/rotate_secret")), 2, "the lost rotation was not retried"
        )

        self.assertIsNone(client.delete_webhook_endpoint(ids[2]))
        for action in (lambda: client.delete_webhook_endpoint(ids[2]), lambda: client.get_webhook_endpoint(ids[2])):
            with self.assertRaises(callgate.NotFoundError):
                action()
        stranger = quick_client(take_account().key, base_url)
        with self.assertRaises(callgate.NotFoundError):
            stranger.get_webhook_endpoint(ids[0])


class RealDeliveriesTest(unittest.TestCase):
    def test_verify_webhook_on_real_deliveries_and_their_forgeries(self) -> None:
        account = take_account()
        client = quick_client(account.key, base_url)
        receiver = Receiver()
        self.addCleanup(receiver.close)
        endpoint = client.create_webhook_endpoint(receiver.url, enabled_events=["call.completed", "call.failed"])
        self.addCleanup(client.delete_webhook_endpoint, endpoint["id"])
        secret = endpoint["secret"]

        call = client.create_call(agent_id=account.agent_id, to="+14155550601", metadata={"customer_name": "Ada"})
        delivery = receiver.next_for(call["id"])
        event = callgate.verify_webhook(delivery.body, delivery.headers, secret)
        self.assertEqual((event["type"], event["data"]["id"], event["livemode"]), ("call.completed", call["id"], False))
        self.assertEqual(event["data"]["metadata"], {"customer_name": "Ada"})
        self.assertEqual(event["id"], delivery.headers["webhook-id"])
        self.assertEqual(client.get_event(event["id"]), event, "the events API answers what the webhook carried")
        plain = {name.upper(): value for name, value in delivery.headers.items()}
        self.assertEqual(callgate.verify_webhook(delivery.body, plain, secret), event)

        def refusal(body: bytes, headers: object, with_secret: str = secret) -> str:
            with self.assertRaises(callgate.WebhookVerificationError) as raised:
                callgate.verify_webhook(body, headers, with_secret)  # type: ignore[arg-type]
            return raised.exception.message

        tampered = delivery.body.replace(b'"Ada"', b'"Eve"')
        self.assertNotEqual(tampered, delivery.body)
        self.assertIn("No v1 signature", refusal(tampered, delivery.headers))
        wrong_secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
        self.assertIn("No v1 signature", refusal(delivery.body, delivery.headers, wrong_secret))
        # The same body re-signed with the right secret but 10 minutes ago: a replay, refused for its age.
        old = int(time.time()) - 600
        replayed = {
            "webhook-id": event["id"],
            "webhook-timestamp": str(old),
            "webhook-signature": callgate.sign_webhook(delivery.body, event["id"], old, secret),
        }
        self.assertIn("old", refusal(delivery.body, replayed))
        moved = dict(plain, **{"WEBHOOK-TIMESTAMP": str(int(time.time()) + 1)})
        self.assertIn("No v1 signature", refusal(delivery.body, moved))

        # A rotation: deliveries carry two signatures, the new secret's and the old one's; either verifies.
        rotated = client.rotate_webhook_endpoint_secret(endpoint["id"])
        busy = client.create_call(agent_id=account.agent_id, to="+15005550001")
        rotated_delivery = receiver.next_for(busy["id"])
        self.assertEqual(len(rotated_delivery.headers["webhook-signature"].split(" ")), 2)
        for each in (secret, rotated["secret"]):
            failed = callgate.verify_webhook(rotated_delivery.body, rotated_delivery.headers, each)
            self.assertEqual((failed["type"], failed["data"]["id"], failed["data"]["failure_reason"]), ("call.failed", busy["id"], "busy"))
        self.assertIn("No v1 signature", refusal(rotated_delivery.body, rotated_delivery.headers, wrong_secret))
        self.assertEqual(json.loads(rotated_delivery.body)["id"], rotated_delivery.headers["webhook-id"])


if __name__ == "__main__":
    unittest.main()
