"""Provider behaviour over HTTP: retries, timeouts, bad replies, and the API key."""
import json
import socket
import time
import unittest

from harness import TIMED, LLMTestCase, ShellError, sql_reply

GOOD_SQL = "SELECT COUNT(*) AS n FROM orders"
QUESTION = "SELECT * FROM ask('How many orders are there?')"


def script(*replies, **extra):
    s = {"rules": [{"match": "How many orders", "replies": list(replies)}]}
    s.update(extra)
    return s


class ProviderTest(LLMTestCase):
    def test_429_then_success_honours_retry_after(self):
        for provider in ("openai", "anthropic"):
            with self.subTest(provider=provider):
                start = time.monotonic()
                answer, runs = self.session(
                    [QUESTION, "SELECT status, attempts, llm_calls FROM agent_runs"],
                    script({"status": 429, "headers": {"Retry-After": "1"}, "error": "slow down"},
                           sql_reply(GOOD_SQL)), provider)
                elapsed = time.monotonic() - start
                self.assertEqual(answer, [{"row": '{"n":100}'}])
                self.assertEqual(runs, [{"status": "ok", "attempts": 1, "llm_calls": 1}])
                self.assertEqual(len(self.llm.log()), 2)  # one HTTP retry inside one model call
                self.assertGreaterEqual(elapsed, 1.0)     # it waited as Retry-After asked

    def test_persistent_500_is_a_clear_error_in_bounded_time(self):
        start = time.monotonic()
        answer, runs = self.session(
            [QUESTION, "SELECT status, error_type FROM agent_runs"],
            script({"status": 500, "error": "upstream exploded"}))
        elapsed = time.monotonic() - start
        self.assertIsInstance(answer, ShellError)
        self.assertIn("the model provider failed (provider_unavailable)", answer)
        self.assertIn("HTTP 500: upstream exploded", answer)
        self.assertIn("after 3 tries", answer)
        self.assertEqual(runs, [{"status": "provider_error", "error_type": "provider_unavailable"}])
        self.assertEqual(len(self.llm.log()), 3)  # 1 try + 2 retries, then stop
        if TIMED:
            self.assertLess(elapsed, 10)  # backoff 0.5 s + 1 s by default

    def test_slow_provider_times_out(self):
        start = time.monotonic()
        setting, answer, runs = self.session(
            ["SELECT agent_config('request_timeout_ms', 800)", QUESTION,
             "SELECT status, error_type FROM agent_runs"],
            script({"delay_ms": 5000, "content": sql_reply(GOOD_SQL)}))
        elapsed = time.monotonic() - start
        self.assertIsInstance(answer, ShellError)
        self.assertIn("provider_timeout", answer)
        self.assertIn("within 800 ms", answer)
        self.assertEqual(runs, [{"status": "provider_error", "error_type": "provider_timeout"}])
        if TIMED:
            self.assertLess(elapsed, 4.5)  # the scripted delay is 5 s; we did not wait for it

    def test_malformed_json_reply(self):
        for provider in ("openai", "anthropic"):
            with self.subTest(provider=provider):
                answer, runs = self.session(
                    [QUESTION, "SELECT status, error_type FROM agent_runs"],
                    script({"raw_body": "{\"choices\": [ {\"message\": "}), provider)
                self.assertIsInstance(answer, ShellError)
                self.assertIn("provider_bad_response", answer)
                self.assertIn("not a JSON object", answer)
                self.assertEqual(runs, [{"status": "provider_error", "error_type": "provider_bad_response"}])

    def test_html_error_page(self):
        answer, = self.session([QUESTION], script(
            {"status": 502, "raw_body": "<html><head><title>502 Bad Gateway</title></head></html>",
             "content_type": "text/html"}))
        self.assertIsInstance(answer, ShellError)
        self.assertIn("HTTP 502: HTML page: 502 Bad Gateway", answer)

    def test_refused_connection(self):
        with socket.socket() as s:  # a port that nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = self.llm.env()
        env["QUERYPILOT_BASE_URL"] = "http://127.0.0.1:%d/v1" % port
        from harness import session
        start = time.monotonic()
        answer, runs = session(self.db, [QUESTION, "SELECT status, error_type FROM agent_runs"], env)
        if TIMED:
            self.assertLess(time.monotonic() - start, 5)
        self.assertIsInstance(answer, ShellError)
        self.assertIn("could not connect to http://127.0.0.1:%d/v1/chat/completions" % port, answer)
        self.assertEqual(runs, [{"status": "provider_error", "error_type": "provider_connection"}])

    def test_wrong_key_is_an_auth_error_without_retries(self):
        for provider in ("openai", "anthropic"):
            with self.subTest(provider=provider):
                answer, runs = self.session(
                    [QUESTION, "SELECT status, error_type FROM agent_runs"],
                    script(sql_reply(GOOD_SQL), require_key="right-key"), provider,
                    QUERYPILOT_API_KEY="wrong-key-123456")
                self.assertIsInstance(answer, ShellError)
                self.assertIn("provider_auth", answer)
                self.assertIn("HTTP 401: invalid api key", answer)
                self.assertEqual(len(self.llm.log()), 1)

    def test_api_key_is_sent_but_never_stored_logged_or_prompted(self):
        key = "sk-test-SECRET-4e1f9a77c2"
        for provider, header in (("openai", "authorization"), ("anthropic", "x_api_key")):
            with self.subTest(provider=provider):
                wrong = "SELECT nope FROM orders"
                res = self.session([
                    QUESTION,
                    "SELECT * FROM agent_runs", "SELECT * FROM agent_attempts",
                    "SELECT agent_config()", "SELECT agent_config('api_key') AS k",
                ], script(sql_reply(wrong), sql_reply(GOOD_SQL), require_key=key), provider,
                    QUERYPILOT_API_KEY=key)
                self.assertEqual(res[0], [{"row": '{"n":100}'}])
                self.assertEqual(res[4], [{"k": "set (environment: QUERYPILOT_API_KEY)"}])
                self.assertNotIn(key, json.dumps(res))
                log = self.llm.log()
                self.assertEqual(len(log), 2)
                for entry in log:
                    self.assertIn(key, entry[header])          # sent where it belongs
                    self.assertNotIn(key, json.dumps(entry["body"]))  # never in a prompt
                    self.assertNotIn("SECRET", json.dumps(entry["body"]))

    def test_key_set_in_sql_is_used_and_never_read_back(self):
        key = "sk-sql-SECRET-90ab12"
        res = self.session([
            "SELECT agent_config('api_key', '%s') AS k" % key,
            QUESTION,
            "SELECT agent_config() AS c",
        ], script(sql_reply(GOOD_SQL), require_key=key))
        self.assertEqual(res[0], [{"k": "set (agent_config)"}])
        self.assertEqual(res[1], [{"row": '{"n":100}'}])
        self.assertNotIn(key, json.dumps(res[2]))

    def test_key_in_a_provider_error_is_redacted(self):
        key = "sk-echo-SECRET-77aa55"
        answer, runs = self.session([QUESTION, "SELECT error FROM agent_runs"],
                                    script({"status": 400, "error": "bad key " + key + " given"}),
                                    QUERYPILOT_API_KEY=key)
        self.assertIsInstance(answer, ShellError)
        self.assertNotIn(key, answer)
        self.assertIn("[redacted]", answer)
        self.assertNotIn(key, json.dumps(runs))

    def test_not_configured_says_how(self):
        env = {k: v for k, v in self.llm.env().items() if not k.startswith("QUERYPILOT_")}
        from harness import session
        answer, runs = session(self.db, [QUESTION, "SELECT status, attempts, llm_calls FROM agent_runs"], env)
        self.assertIsInstance(answer, ShellError)
        self.assertIn("no model endpoint is configured", answer)
        self.assertIn("OPENAI_API_KEY", answer)
        self.assertIn("QUERYPILOT_BASE_URL=http://127.0.0.1:11434/v1", answer)
        self.assertEqual(runs, [{"status": "not_configured", "attempts": 0, "llm_calls": 0}])


if __name__ == "__main__":
    unittest.main()
