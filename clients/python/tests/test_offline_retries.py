"""The retry rules against a scripted fake server (no callgate needed): what is retried, with which key, after
how long; what is raised, with which fields; what every request carries."""

from __future__ import annotations

import email.utils
import re
import socket
import time
import unittest

from support import Answer, FakeServer, error_body

import callgate
from callgate._http import parse_retry_after

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
CREATED = {
    "id": "call_1",
    "agent_id": "agent_x",
    "to": "+14155550123",
    "status": "initiated",
    "created_at": "2026-11-24T09:00:00Z",
    "livemode": False,
}


class FakeServerCase(unittest.TestCase):
    def serve(self, *answers: Answer) -> FakeServer:
        server = FakeServer(*answers)
        self.addCleanup(server.close)
        return server

    def client(self, server: FakeServer, **options: object) -> callgate.Client:
        settings = {"initial_retry_delay": 0.01, "max_retry_delay": 0.05}
        settings.update(options)
        return callgate.Client("cg_test_fake", base_url=server.url + "/", **settings)  # type: ignore[arg-type]


class RetriedTest(FakeServerCase):
    def test_429_waits_out_retry_after_with_the_same_key(self) -> None:
        server = self.serve(Answer(429, error_body("rate_limit_exceeded"), {"Retry-After": "1"}), Answer(201, CREATED))
        client = self.client(server)
        call = client.create_call(agent_id="agent_x", to="+14155550123", metadata={"n": 1})
        self.assertEqual(call["id"], "call_1")
        first, second = server.seen
        self.assertRegex(first.headers["idempotency-key"], UUID4)
        self.assertEqual(second.headers["idempotency-key"], first.headers["idempotency-key"])
        self.assertEqual(first.body, second.body)
        self.assertGreaterEqual(second.at - first.at, 0.99, "Retry-After: 1 was waited out")
        info = client.last_response
        assert info is not None
        self.assertEqual((info.status, info.attempts, info.request_id), (201, 2, "req_fake2"))
        self.assertEqual(info.idempotency_key, first.headers["idempotency-key"])

    def test_5xx_and_idempotency_in_progress_are_retried_then_raised_with_their_fields(self) -> None:
        server = self.serve(
            Answer(503, error_body("idempotency_in_progress"), {"Retry-After": "0"}),
            Answer(502, error_body("provider_error", "The provider refused.", "req_502")),
        )
        client = self.client(server, max_retries=3)
        with self.assertRaises(callgate.ServerError) as raised:
            client.create_call(agent_id="agent_x", to="+14155550123", idempotency_key="my-key-1")
        self.assertEqual(len(server.seen), 4, "the first try and three retries")
        self.assertEqual({seen.headers["idempotency-key"] for seen in server.seen}, {"my-key-1"})
        error = raised.exception
        self.assertIsInstance(error, callgate.ApiError)
        self.assertEqual(
            (error.status, error.code, error.message, error.request_id), (502, "provider_error", "The provider refused.", "req_502")
        )
        self.assertEqual(error.idempotency_key, "my-key-1")
        self.assertIn("502 provider_error", str(error))

    def test_an_answer_that_says_retryable_false_is_raised_after_one_try(self) -> None:
        refusal = dict(error_body("provider_error", "The provider refused.", "req_502"), retryable=False)
        server = self.serve(Answer(502, refusal), Answer(201, {"id": "call_never"}))
        client = self.client(server, max_retries=3)
        with self.assertRaises(callgate.ServerError) as raised:
            client.create_call(agent_id="agent_x", to="+14155550123")
        self.assertEqual(len(server.seen), 1)
        self.assertEqual((raised.exception.code, raised.exception.retryable), ("provider_error", False))

    def test_backoff_grows_and_stays_under_its_cap(self) -> None:
        server = self.serve(Answer(500, error_body("internal_error")))
        client = self.client(server, max_retries=4, initial_retry_delay=0.1, max_retry_delay=0.2)
        waits = []
        client._transport.sleep = waits.append  # the delays drawn, not slept
        with self.assertRaises(callgate.ServerError):
            client.get_call("call_1")
        self.assertEqual(len(waits), 4)
        for attempt, wait in enumerate(waits, start=1):
            self.assertTrue(0 <= wait <= min(0.2, 0.1 * 2 ** (attempt - 1)), f"retry {attempt} waited {wait}")

    def test_a_retry_after_longer_than_max_retry_after_is_raised_at_once(self) -> None:
        server = self.serve(Answer(429, error_body("concurrency_limit_exceeded"), {"Retry-After": "30"}))
        with self.assertRaises(callgate.RateLimitError) as raised:
            self.client(server, max_retry_after=5).create_call(agent_id="agent_x", to="+14155550123")
        self.assertEqual(len(server.seen), 1)
        self.assertEqual((raised.exception.code, raised.exception.retry_after), ("concurrency_limit_exceeded", 30))

    def test_connection_errors_and_timeouts_are_retried_with_the_same_key(self) -> None:
        server = self.serve(Answer(201, hang_up=True), Answer(201, CREATED, delay=1.0), Answer(201, CREATED))
        client = self.client(server, timeout=0.3)
        call = client.create_call(agent_id="agent_x", to="+14155550123")
        self.assertEqual(call["status"], "initiated")
        self.assertEqual(len(server.seen), 3)
        self.assertEqual(len({seen.headers["idempotency-key"] for seen in server.seen}), 1)

    def test_no_answer_on_every_try_is_an_api_connection_error(self) -> None:
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        client = callgate.Client("cg_test_x", base_url=f"http://127.0.0.1:{port}", max_retries=2, initial_retry_delay=0.01)
        with self.assertRaises(callgate.ApiConnectionError) as raised:
            client.create_call(agent_id="agent_x", to="+14155550123", idempotency_key="keep-me")
        error = raised.exception
        self.assertEqual((error.status, error.code, error.request_id, error.idempotency_key), (None, "connection_error", None, "keep-me"))
        self.assertIsInstance(error, callgate.CallgateError)

        slow = self.serve(Answer(200, {"data": [], "has_more": False}, delay=1.0))
        with self.assertRaises(callgate.ApiConnectionError) as timed_out:
            self.client(slow, timeout=0.2, max_retries=1).list_calls_page()
        self.assertEqual(timed_out.exception.code, "timeout")
        self.assertEqual(len(slow.seen), 2)

    def test_gets_patches_and_deletes_are_retried_without_a_key(self) -> None:
        server = self.serve(Answer(503, error_body("database_unavailable")), Answer(204))
        self.assertIsNone(self.client(server).delete_webhook_endpoint("we_1"))
        self.assertEqual([seen.method for seen in server.seen], ["DELETE", "DELETE"])
        self.assertNotIn("idempotency-key", server.seen[0].headers)


class NotRetriedTest(FakeServerCase):
    def test_other_4xx_are_raised_after_one_try_as_their_class(self) -> None:
        cases = [
            (400, "invalid_request", callgate.InvalidRequestError),
            (401, "unauthorized", callgate.AuthenticationError),
            (403, "agent_not_found", callgate.PermissionDeniedError),
            (404, "not_found", callgate.NotFoundError),
            (409, "idempotency_conflict", callgate.ConflictError),
            (409, "call_not_ended", callgate.ConflictError),
            (413, "payload_too_large", callgate.InvalidRequestError),
        ]
        for status, code, cls in cases:
            with self.subTest(code=code):
                server = self.serve(Answer(status, dict(error_body(code), param="to"), {"Retry-After": "0"}))
                with self.assertRaises(cls) as raised:
                    self.client(server).create_call(agent_id="agent_x", to="+14155550123")
                self.assertEqual(len(server.seen), 1)
                self.assertEqual((raised.exception.status, raised.exception.code, raised.exception.param), (status, code, "to"))

    def test_rotate_secret_is_tried_once_unless_asked(self) -> None:
        server = self.serve(Answer(503, error_body("service_unavailable")), Answer(200, {"id": "we_1", "secret": "whsec_x"}))
        with self.assertRaises(callgate.ServerError):
            self.client(server).rotate_webhook_endpoint_secret("we_1")
        self.assertEqual(len(server.seen), 1)
        self.assertEqual(self.client(server).rotate_webhook_endpoint_secret("we_1", max_retries=1)["id"], "we_1")

    def test_answers_that_are_not_callgate_json(self) -> None:
        proxy_page = self.serve(Answer(502, b"<html>Bad gateway</html>"))
        with self.assertRaises(callgate.ServerError) as raised:
            self.client(proxy_page, max_retries=0).get_call("call_1")
        self.assertEqual((raised.exception.code, raised.exception.request_id), ("http_502", "req_fake1"))
        not_json = self.serve(Answer(200, b"<html>proxy</html>"))
        with self.assertRaises(callgate.CallgateError) as invalid:
            self.client(not_json).get_call("call_1")
        self.assertEqual((invalid.exception.code, invalid.exception.status), ("invalid_response", 200))


class RequestTest(FakeServerCase):
    def test_headers_query_and_paths(self) -> None:
        server = self.serve(Answer(200, {"data": [{"id": "call_2"}], "has_more": False}), Answer(200, {"to": "+14155550123"}))
        client = self.client(server)
        calls = client.list_calls(to="+14155550123", created_after="2026-11-24T09:00:00+01:00", status=None, limit=5).to_list()
        self.assertEqual([call["id"] for call in calls], ["call_2"])
        client.get_suppression("+14155550123")
        listed, read = server.seen
        self.assertEqual(listed.path, "/v1/calls?to=%2B14155550123&created_after=2026-11-24T09%3A00%3A00%2B01%3A00&limit=5")
        self.assertEqual(read.path, "/v1/suppressions/%2B14155550123")
        self.assertEqual(listed.headers["authorization"], "Bearer cg_test_fake")
        self.assertEqual(listed.headers["user-agent"], f"callgate-python/{callgate.__version__}")
        self.assertEqual(listed.headers["accept"], "application/json")
        self.assertNotIn("idempotency-key", listed.headers)

    def test_the_body_is_compact_utf8_json_without_none_fields(self) -> None:
        server = self.serve(Answer(201, CREATED))
        self.client(server).create_call(agent_id="agent_x", to="+14155550123", metadata={"name": "Zoë"})
        self.assertEqual(server.seen[0].body, '{"agent_id":"agent_x","to":"+14155550123","metadata":{"name":"Zoë"}}'.encode())
        self.assertEqual(server.seen[0].headers["content-type"], "application/json")

    def test_retry_after_reads_seconds_and_http_dates(self) -> None:
        now = time.time()
        self.assertEqual(parse_retry_after("3", now), 3)
        self.assertEqual(parse_retry_after(" 0 ", now), 0)
        self.assertAlmostEqual(parse_retry_after(email.utils.formatdate(now + 5, usegmt=True), now) or 0, 5, delta=1)
        self.assertEqual(parse_retry_after(email.utils.formatdate(now - 60, usegmt=True), now), 0)
        for unreadable in (None, "soon", "-1", ""):
            self.assertIsNone(parse_retry_after(unreadable, now))

    def test_arguments_the_client_refuses_itself(self) -> None:
        with self.assertRaises(ValueError):
            callgate.Client("")
        with self.assertRaises(ValueError):
            callgate.Client("cg_test_x").get_call("")
        import datetime

        with self.assertRaises(ValueError):
            callgate.Client("cg_test_x").list_calls_page(created_after=datetime.datetime(2026, 1, 1))


if __name__ == "__main__":
    unittest.main()
