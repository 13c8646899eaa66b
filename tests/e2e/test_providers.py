"""Provider behaviour over HTTP: retries, timeouts, bad replies, and the API key."""
import base64
import contextlib
import json
import os
import socket
import sqlite3
import time
import unittest

from harness import TIMED, isolated_env, LLMTestCase, ScriptedLLM, ShellError, file_digest, session, sql_reply

GOOD_SQL = "SELECT COUNT(*) AS n FROM orders"
QUESTION = "SELECT * FROM ask('How many orders are there?')"


@contextlib.contextmanager
def refusing_port():
    """A loopback port that refuses connections while the block runs: bound,
    so that no other test's server or connection can take it meanwhile, but
    not listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


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
                    # The newest run: the database's history keeps the
                    # earlier provider's too.
                    [QUESTION, "SELECT status, attempts, llm_calls FROM agent_runs ORDER BY id DESC LIMIT 1"],
                    script({"status": 429, "headers": {"Retry-After": "1"}, "error": "slow down"},
                           sql_reply(GOOD_SQL)), provider)
                elapsed = time.monotonic() - start
                self.assertEqual(answer, [{"row": '{"n":100}'}])
                self.assertEqual(runs, [{"status": "ok", "attempts": 1, "llm_calls": 2}])
                self.assertEqual(len(self.llm.log(reviews=True)), 3)  # one HTTP retry inside one model call; the review
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
        # The model holds its reply (for two minutes, never released): only
        # the timeout ends the call.
        setting, answer, runs = self.session(
            ["SELECT agent_config('request_timeout_ms', 800)", QUESTION,
             "SELECT status, error_type FROM agent_runs"],
            script({"hold": True, "content": sql_reply(GOOD_SQL)}))
        self.assertIsInstance(answer, ShellError)
        self.assertIn("provider_timeout", answer)
        self.assertIn("within 800 ms", answer)
        self.assertEqual(runs, [{"status": "provider_error", "error_type": "provider_timeout"}])

    def test_malformed_json_reply(self):
        for provider in ("openai", "anthropic"):
            with self.subTest(provider=provider):
                answer, runs = self.session(
                    [QUESTION, "SELECT status, error_type FROM agent_runs ORDER BY id DESC LIMIT 1"],
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
        with refusing_port() as port:
            env = self.llm.env()
            env["QUERYPILOT_BASE_URL"] = "http://127.0.0.1:%d/v1" % port
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
                log = self.llm.log(reviews=True)
                self.assertEqual(len(log), 3)  # two generations and the review
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

    def test_base_url_credentials_are_sent_but_never_shown(self):
        user, password, qkey = "alice", "pw-SECRET-4f2a", "K-SECRET-9c1e77"
        for provider, path in (("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages")):
            with self.subTest(provider=provider):
                history = os.path.join(self.tmp, "history-%s.db" % provider)
                base = "http://%s:%s@127.0.0.1:%d%s?api-version=2024-06-01&api-key=%s" % (
                    user, password, self.llm.port, "/v1" if provider == "openai" else "", qkey)
                shown = "http://[redacted]@127.0.0.1:%d%s?api-version=2024-06-01&api-key=[redacted]" % (
                    self.llm.port, "/v1" if provider == "openai" else "")
                res = self.session([
                    "SELECT agent_config('history_file', '%s')" % history,
                    QUESTION,
                    "SELECT agent_config('base_url') AS b", "SELECT agent_config() AS c",
                    "SELECT * FROM agent_runs", "SELECT * FROM agent_attempts",
                ], script(sql_reply("SELECT nope FROM orders"), sql_reply(GOOD_SQL)), provider,
                    QUERYPILOT_BASE_URL=base)
                self.assertEqual(res[1], [{"row": '{"n":100}'}])
                self.assertEqual(res[2], [{"b": shown}])
                self.assertIn("api-version=2024-06-01", res[3][0]["c"])
                self.assertNotIn("SECRET", json.dumps(res))
                with open(history, "rb") as f:
                    self.assertNotIn(b"SECRET", f.read())
                log = self.llm.log(reviews=True)
                self.assertEqual(len(log), 3)  # two generations and the review
                for entry in log:
                    # The path before the query, the query as configured, the userinfo as basic auth.
                    self.assertEqual(entry["path"], path)
                    self.assertEqual(entry["query"], {"api-version": "2024-06-01", "api-key": qkey})
                    self.assertEqual(entry["authorization"],
                                     "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode())
                    self.assertNotIn("SECRET", json.dumps(entry["body"]))

    def test_errors_show_base_url_redacted(self):
        with refusing_port() as port:
            env = self.llm.env(QUERYPILOT_BASE_URL="http://bob:pw-SECRET-77aa@127.0.0.1:%d/v1?key=K-SECRET-55bb" % port)
            answer, runs = session(self.db, [QUESTION, "SELECT status, error FROM agent_runs"], env)
        self.assertIsInstance(answer, ShellError)
        self.assertIn("could not connect to http://[redacted]@127.0.0.1:%d/v1/chat/completions?key=[redacted]"
                      % port, answer)
        self.assertNotIn("SECRET", answer)
        self.assertEqual(runs[0]["status"], "provider_error")
        self.assertNotIn("SECRET", json.dumps(runs))

    def test_a_base_url_without_v1_names_the_url_and_the_missing_v1(self):
        self.llm.load(script({"status": 404, "error": "Unknown request URL: POST /chat/completions."}))
        env = self.llm.env(QUERYPILOT_BASE_URL="http://bob:pw-SECRET-77aa@127.0.0.1:%d" % self.llm.port)
        answer, runs = session(self.db, [QUESTION, "SELECT status, error_type FROM agent_runs"], env)
        self.assertIsInstance(answer, ShellError)
        self.assertIn("HTTP 404: Unknown request URL: POST /chat/completions. (POST "
                      "http://[redacted]@127.0.0.1:%d/chat/completions; the base URL has no /v1: try "
                      "base_url 'http://[redacted]@127.0.0.1:%d/v1')" % (self.llm.port, self.llm.port), answer)
        self.assertNotIn("SECRET", answer)
        self.assertEqual(runs, [{"status": "provider_error", "error_type": "provider_request"}])

    def test_base_url_slips_are_named_before_the_first_ask_and_by_the_404(self):
        # A whole endpoint as the base URL: named with the fix before the ask,
        # which still sends, and whose 404 names the fix again.
        self.llm.load(script({"status": 404, "error": "Unknown request URL"}))
        env = self.llm.env(QUERYPILOT_BASE_URL=self.llm.base + "/v1/chat/completions")
        res = session(self.db, ["SELECT agent_config('problems') AS p", QUESTION], env)
        problems = json.loads(res[0][0]["p"])
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("base_url ends with /chat/completions, which QueryPilot adds itself", problems[0])
        self.assertIn("SELECT agent_config('base_url', '%s/v1')" % self.llm.base, problems[0])
        self.assertIsInstance(res[1], ShellError)
        self.assertIn("the base URL already ends with /chat/completions, which is added to it: try "
                      "base_url '%s/v1'" % self.llm.base, res[1])
        self.assertEqual([e["path"] for e in self.llm.log()], ["/v1/chat/completions/chat/completions"])
        # An Anthropic base URL ending in /v1, and an OpenAI one with no path.
        for provider, base, says in (
                ("anthropic", self.llm.base + "/v1", "base_url ends with /v1"),
                ("openai", self.llm.base, "base_url has no path")):
            with self.subTest(provider=provider):
                res = session(self.db, ["SELECT agent_config('problems') AS p"],
                              self.llm.env(provider, QUERYPILOT_BASE_URL=base))
                problems = json.loads(res[0][0]["p"])
                self.assertEqual(len(problems), 1, problems)
                self.assertIn(says, problems[0])
        # A Claude model with both keys set and no provider named: OpenAI's
        # endpoint would be used, so the ask stops before sending (not tried
        # here: it would leave loopback were it wrong).
        env = isolated_env()
        env.update(OPENAI_API_KEY="k-1", ANTHROPIC_API_KEY="k-2", QUERYPILOT_MODEL="claude-sonnet-4-5")
        res = session(self.db, ["SELECT agent_config('problems') AS p", "SELECT agent_config('in_use') AS u"], env)
        problems = json.loads(res[0][0]["p"])
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("model 'claude-sonnet-4-5' is anthropic's", problems[0])
        self.assertIn("SELECT agent_config('provider', 'anthropic')", problems[0])
        self.assertEqual(res[1], [{"u": "null"}])

    def test_the_listing_names_the_provider_in_use_and_what_the_ask_would_stop_at(self):
        res = session(self.db, ["SELECT agent_config() AS c"], self.llm.env())
        config = json.loads(res[0][0]["c"])
        self.assertEqual(config["in_use"], {"provider": "openai", "model": "scripted-model",
                                            "endpoint": self.llm.base + "/v1/chat/completions"})
        self.assertEqual(config["problems"], [])
        # A mistyped base URL and a misspelt variable: each named before any ask,
        # with what the ask then says.
        env = self.llm.env(QUERYPILOT_BASE_URL="htp://127.0.0.1:%d/v1" % self.llm.port,
                           QUERYPILOT_MODLE="scripted-model")
        res = session(self.db, ["SELECT agent_config('problems') AS p", "SELECT agent_config('in_use') AS u",
                                QUESTION], env)
        problems = json.loads(res[0][0]["p"])
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("QUERYPILOT_BASE_URL", problems[0])
        self.assertIn("QUERYPILOT_MODLE", problems[0])
        self.assertIn("no model endpoint is configured", problems[1])
        self.assertEqual(res[1], [{"u": "null"}])
        self.assertIsInstance(res[2], ShellError)
        self.assertIn(problems[0], res[2])
        self.assertEqual(self.llm.log(), [])

    def test_ask_prompt_is_what_the_first_call_sends_and_calls_nothing(self):
        prompt_sql = "SELECT ask_prompt('How many orders are there?') AS p"
        # Without a model configured, and with one: nothing is asked, nothing recorded.
        for env in (isolated_env(), self.llm.env()):
            res = session(self.db, [prompt_sql, "SELECT count(*) AS n FROM agent_runs"], env)
            messages = json.loads(res[0][0]["p"])
            self.assertEqual([m["role"] for m in messages], ["system", "user"])
            self.assertIn("orders", messages[0]["content"])
            self.assertIn("How many orders are there?", messages[1]["content"])
            self.assertEqual(res[1], [{"n": 0}])
        self.assertEqual(self.llm.log(), [])
        # The same messages as the ask's first request.
        self.llm.load(script(sql_reply(GOOD_SQL)))
        res = session(self.db, [prompt_sql, QUESTION], self.llm.env())
        self.assertEqual(res[1], [{"row": '{"n":100}'}])
        (request,) = self.llm.log(reviews=False)
        self.assertEqual(request["body"]["messages"], json.loads(res[0][0]["p"]))
        self.assertNotIn("sk-", res[0][0]["p"])

    def test_credentials_the_model_echoes_are_never_stored(self):
        key, password = "sk-echo-SECRET-31d0c9", "pw-SECRET-8e8e"
        history = os.path.join(self.tmp, "history.db")
        base = "http://carol:%s@127.0.0.1:%d/v1" % (password, self.llm.port)
        echo = "Your key is %s and your password %s.\n\n```sql\nSELECT nope FROM orders\n```\n" % (key, password)
        res = self.session([
            "SELECT agent_config('history_file', '%s')" % history,
            QUESTION,
            "SELECT reply FROM agent_attempts ORDER BY attempt", "SELECT * FROM agent_runs",
        ], script(echo, sql_reply(GOOD_SQL), require_key=key), QUERYPILOT_API_KEY=key, QUERYPILOT_BASE_URL=base)
        self.assertEqual(res[1], [{"row": '{"n":100}'}])
        first = res[2][0]["reply"]
        self.assertIn("Your key is [redacted] and your password [redacted].", first)
        self.assertNotIn("SECRET", json.dumps(res))
        with open(history, "rb") as f:
            self.assertNotIn(b"SECRET", f.read())
        log = self.llm.log(reviews=True)
        self.assertEqual(len(log), 3)  # two generations and the review
        self.assertIn(key, log[1]["authorization"])  # the key is still sent where it belongs
        # Nothing of the first reply that goes back in the second prompt holds them.
        self.assertNotIn("SECRET", json.dumps(log[1]["body"]))

    def test_a_reply_that_echoes_the_request_shows_no_secret_anywhere(self):
        # Short secrets (a 4-byte password, a 6-byte query value), a value the
        # reply echoes percent-encoded, one it echoes decoded, the fragment's,
        # and the basic credential the userinfo becomes: none is shown or kept.
        user, password, key = "carol", "pass", "sk-key-0123456789"
        params = "key=SECRET&sig=Sig!Val*9&api-version=2024-06-01"
        base = "http://%s:%s@127.0.0.1:%d/v1;tok=PathTok%%2F1?%s#frag=FragS3cret" % (
            user, password, self.llm.port, params)
        basic = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        echo = ("POST /v1;tok=PathTok%%2F1/chat/completions?%s HTTP/1.1\r\n"
                "Host: 127.0.0.1:%d\r\nAuthorization: Basic %s\r\nX-Key: Bearer %s\r\n\r\n"
                "You came from %s as %s with password %s; signed Sig%%21Val%%2A9, token "
                "PathTok/1.") % (params, self.llm.port, basic, key, base, user, password)
        history = os.path.join(self.tmp, "history.db")
        res = self.session([
            "SELECT agent_config('history_file', '%s')" % history,
            QUESTION,
            "SELECT * FROM agent_runs", "SELECT * FROM agent_attempts",
            "SELECT ask_prompt('How many orders did %s place with SECRET?') AS p" % user,
            "SELECT agent_config() AS c",
        ], script(echo, require_key=key), QUERYPILOT_API_KEY=key, QUERYPILOT_BASE_URL=base)
        self.assertIsInstance(res[1], ShellError)
        self.assertIn("held no SQL", res[1])
        self.assertIn("POST /v1;tok=[redacted]/chat/completions?key=[redacted]&sig=[redacted]"
                      "&api-version=2024-06-01 HTTP/1.1", res[1])
        self.assertIn("held no SQL", res[2][0]["error"])
        self.assertIn("Authorization: Basic [redacted]", res[3][0]["reply"])
        with open(history, "rb") as f:
            kept = f.read().decode("utf-8", "replace")
        self.assertIn("api-version=2024-06-01", kept)  # not a secret
        shown = {"ask()": res[1], "agent_runs": json.dumps(res[2]), "agent_attempts": json.dumps(res[3]),
                 "ask_prompt": json.dumps(res[4]), "agent_config": json.dumps(res[5]), "history file": kept}
        for where, text in shown.items():
            for secret in ("SECRET", "Sig!Val*9", "Sig%21Val%2A9", "PathTok", "FragS3cret", key,
                           basic, "carol", "pass;", "pass:", "password pass"):
                self.assertNotIn(secret, text, where)
        self.assertEqual(len(self.llm.log()), 3)  # every attempt asked, and got the echo

    def test_a_bad_environment_variable_fails_the_ask_and_reaches_no_endpoint(self):
        # Another scripted model stands where a fallback would go (the
        # ecosystem's variable, or a cloud default for a key).
        other = ScriptedLLM()
        self.addCleanup(other.close)
        other.load(script(sql_reply(GOOD_SQL)))
        self.llm.load(script(sql_reply(GOOD_SQL)))
        typo_url = "127.0.0.1:%d/v1" % self.llm.port
        cases = [
            ("QUERYPILOT_BASE_URL", typo_url, "must start with http:// or https://", "base_url"),
            ("QUERYPILOT_BASE_URL", "http://127.0.0.1:%d /v1" % self.llm.port, "must not contain spaces", "base_url"),
            ("QUERYPILOT_MAX_ATTEMPTS", "50", "must be a whole number from 1 to 10, not '50'", "max_attempts"),
            ("QUERYPILOT_PROVIDER", "antropic", "must be 'openai' or 'anthropic'", "provider"),
            ("QUERYPILOT_SQL_TIMEOUT_MS", "10s", "must be a whole number from 10 to 3600000", "sql_timeout_ms"),
            ("QUERYPILOT_API_KEY", "sk-SECRET-0a0a\tx", "the API key contains", "api_key"),
        ]
        for var, value, says, key in cases:
            with self.subTest(var=var, value=value):
                env = self.llm.env()
                env["OPENAI_BASE_URL"] = other.base + "/v1"
                env["OPENAI_API_KEY"] = "sk-other-0123456789"
                env[var] = value
                res = session(self.db, [
                    QUESTION, "SELECT agent_config('%s') AS v" % key,
                    "SELECT count(*) AS n FROM agent_runs", "SELECT agent_explain(1)",
                ], env)
                answer = res[0]
                self.assertIsInstance(answer, ShellError)
                self.assertIn("nothing was asked", answer)
                self.assertIn("%s %s" % (var, says) if key != "api_key" else "%s: %s" % (var, says), answer)
                self.assertIn("agent_config('%s', ...)" % key, answer)
                self.assertNotIn("SECRET", answer)
                self.assertIsInstance(res[3], ShellError)  # an explanation is a model call too
                self.assertIn(var, res[3])
                self.assertEqual(res[2], [{"n": 0}])
                self.assertEqual(self.llm.log(), [])
                self.assertEqual(other.log(), [])

    def test_a_misspelt_or_empty_variable_fails_the_ask_and_reaches_no_endpoint(self):
        # What the slip would have let through: the question, the schema and
        # the key sent to the ecosystem's variable's server instead.
        other = ScriptedLLM()
        self.addCleanup(other.close)
        other.load(script(sql_reply(GOOD_SQL)))
        self.llm.load(script(sql_reply(GOOD_SQL)))
        local = self.llm.base + "/v1"
        cases = [
            # (variables, the variable named, what is said of it, the setting that answers it)
            ({"QUERYPILOT_BASEURL": local}, "QUERYPILOT_BASEURL",
             "is not a variable QueryPilot reads; did you mean QUERYPILOT_BASE_URL?", "base_url"),
            ({"QueryPilot_Base_Url": local}, "QueryPilot_Base_Url",
             "is not a variable QueryPilot reads; did you mean QUERYPILOT_BASE_URL?", "base_url"),
            ({"QUERYPILOT_BASE_URL": ""}, "QUERYPILOT_BASE_URL", "is set but empty", "base_url"),
            ({"QUERYPILOT_BASE_URL": local, "QUERYPILOT_MAX_ATEMPTS": "1"}, "QUERYPILOT_MAX_ATEMPTS",
             "is not a variable QueryPilot reads; did you mean QUERYPILOT_MAX_ATTEMPTS?", "max_attempts"),
            ({"QUERYPILOT_BASE_URL": local, "QUERYPILOT_APIKEY": "sk-SECRET-1d1d"}, "QUERYPILOT_APIKEY",
             "is not a variable QueryPilot reads; did you mean QUERYPILOT_API_KEY?", "api_key"),
        ]
        for variables, var, says, key in cases:
            with self.subTest(variables=sorted(variables)):
                env = self.llm.env()
                del env["QUERYPILOT_BASE_URL"]
                env["OPENAI_BASE_URL"] = other.base + "/v1"
                env["OPENAI_API_KEY"] = "sk-other-0123456789"
                env.update(variables)
                before = file_digest(self.db)
                res = session(self.db, [QUESTION, "SELECT count(*) AS n FROM agent_runs"], env)
                answer = res[0]
                self.assertIsInstance(answer, ShellError)
                self.assertIn("nothing was asked: %s %s" % (var, says), answer)
                self.assertIn("agent_config('%s', ...)" % key, answer)
                self.assertNotIn("SECRET", answer)
                self.assertEqual(res[1], [{"n": 0}])
                self.assertEqual(self.llm.log(), [])
                self.assertEqual(other.log(), [])
                self.assertEqual(file_digest(self.db), before)
        # Set on the connection, the setting answers the slip.
        env = self.llm.env()
        del env["QUERYPILOT_BASE_URL"]
        env["QUERYPILOT_BASEURL"] = local
        res = session(self.db, [QUESTION, "SELECT agent_config('base_url', '%s') AS b" % local, QUESTION], env)
        self.assertIsInstance(res[0], ShellError)
        self.assertEqual(res[2], [{"row": '{"n":100}'}])
        self.assertEqual(len(self.llm.log(reviews=False)), 1)
        self.assertEqual(other.log(), [])

    def test_credentials_after_a_semicolon_or_an_unencoded_character_are_never_shown(self):
        history = os.path.join(self.tmp, "history.db")
        with refusing_port() as port:
            # A ';' separates the key from api-version: sent, never shown.
            base = "http://127.0.0.1:%d/v1?api-version=1;api_key=K-SECRET-3c3c" % port
            res = session(self.db, [
                "SELECT agent_config('history_file', '%s')" % history,
                QUESTION, "SELECT agent_config('base_url') AS b", "SELECT agent_config() AS c",
                "SELECT status, error FROM agent_runs",
            ], self.llm.env(QUERYPILOT_BASE_URL=base))
        self.assertIsInstance(res[1], ShellError)
        self.assertIn("could not connect to http://127.0.0.1:%d/v1/chat/completions?api-version=1;api_key=[redacted]"
                      % port, res[1])
        self.assertEqual(res[2], [{"b": "http://127.0.0.1:%d/v1?api-version=1;api_key=[redacted]" % port}])
        self.assertEqual(res[4][0]["status"], "provider_error")
        self.assertNotIn("SECRET", json.dumps(res))
        with open(history, "rb") as f:
            self.assertNotIn(b"SECRET", f.read())
        # ... and it is sent as configured.
        self.llm.load(script(sql_reply(GOOD_SQL)))
        base = self.llm.base + "/v1?api-version=1;api_key=K-SECRET-3c3c"
        res = session(self.db, [QUESTION, "SELECT agent_config('base_url') AS b"], self.llm.env(QUERYPILOT_BASE_URL=base))
        self.assertEqual(res[0], [{"row": '{"n":100}'}])
        self.assertNotIn("SECRET", json.dumps(res))
        self.assertIn("K-SECRET-3c3c", json.dumps(self.llm.log()[0]["query"]))
        # A password with an unencoded '?', '#' or '/' leaves no telling where
        # it ends: refused, from the environment and in SQL, saying what to
        # encode, and never shown.
        for password in ("pw?SECRET-4d4d", "pw#SECRET-4d4d", "pw/SECRET-4d4d"):
            with self.subTest(password=password):
                base = "http://alice:%s@127.0.0.1:%d/v1" % (password, self.llm.port)
                # No run recorded (the history in memory: the database's
                # file holds the run asked above).
                res = session(self.db, [
                    QUESTION, "SELECT agent_config('base_url', '%s')" % base,
                    "SELECT agent_config() AS c", "SELECT count(*) AS n FROM agent_runs",
                ], self.llm.env(QUERYPILOT_BASE_URL=base, QUERYPILOT_HISTORY_FILE="off"))
                self.assertIsInstance(res[0], ShellError)
                self.assertIn("nothing was asked: QUERYPILOT_BASE_URL holds an '@' after the host's end", res[0])
                self.assertIn("%3F, %23", res[0])
                self.assertIsInstance(res[1], ShellError)
                self.assertIn("base_url holds an '@' after the host's end", res[1])
                self.assertEqual(res[3], [{"n": 0}])
                self.assertNotIn("SECRET", json.dumps(res))
        self.assertEqual(len(self.llm.log(reviews=False)), 1)

    def test_setting_it_on_the_connection_replaces_a_bad_variable(self):
        env = self.llm.env(QUERYPILOT_MAX_ATTEMPTS="50")
        self.llm.load(script(sql_reply(GOOD_SQL)))
        before, setting, after = session(self.db, [
            QUESTION, "SELECT agent_config('max_attempts', 5) AS m", QUESTION], env)
        self.assertIsInstance(before, ShellError)
        self.assertIn("QUERYPILOT_MAX_ATTEMPTS", before)
        self.assertEqual(setting, [{"m": 5}])
        self.assertEqual(after, [{"row": '{"n":100}'}])
        self.assertEqual(len(self.llm.log(reviews=False)), 1)

    def test_not_configured_says_how(self):
        env = {k: v for k, v in self.llm.env().items() if not k.startswith("QUERYPILOT_")}
        answer, runs = session(self.db, [QUESTION, "SELECT status, attempts, llm_calls FROM agent_runs"], env)
        self.assertIsInstance(answer, ShellError)
        self.assertIn("no model endpoint is configured", answer)
        self.assertIn("OPENAI_API_KEY", answer)
        self.assertIn("QUERYPILOT_BASE_URL=http://127.0.0.1:11434/v1", answer)
        self.assertEqual(runs, [{"status": "not_configured", "attempts": 0, "llm_calls": 0}])


if __name__ == "__main__":
    unittest.main()
