"""A fault-injecting model server on 127.0.0.1, and the provider-fault cases.

The server speaks raw HTTP over a socket so that it can misbehave in ways a
real HTTP library will not: a slow first byte, a body that trickles, a body
cut short, a reset connection, a redirect, invalid UTF-8, ten megabytes.
Each case runs one ask() in a fresh sqlite3 shell and checks that it ends in
a clear error (or a bounded retry that succeeds), in bounded time, with the
run and its attempts recorded whole.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

from harness import EXTENSION, SQLITE3, TIMED, file_digest, isolated_env, make_shop_db  # noqa: E402

GOOD_SQL = "SELECT COUNT(*) AS n FROM orders"
REQUEST_TIMEOUT_MS = 2000


def openai_body(content):
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()


def anthropic_body(content):
    return json.dumps({"id": "x", "type": "message", "role": "assistant", "model": "m",
                       "content": [{"type": "text", "text": content}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": 10, "output_tokens": 5}}).encode()


def response(status, body, content_type="application/json", headers=(), length=None):
    reason = {200: "OK", 302: "Found", 307: "Temporary Redirect", 401: "Unauthorized", 403: "Forbidden",
              404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
              503: "Service Unavailable"}.get(status, "Status")
    head = ["HTTP/1.1 %d %s" % (status, reason), "Content-Type: %s" % content_type,
            "Content-Length: %d" % (len(body) if length is None else length), "Connection: close"]
    head += list(headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


# Each fault: how the server answers one request. `send(conn, n)` gets the
# connection and the request's index within the case.
def plain(status, body, **kw):
    return lambda conn, n: conn.sendall(response(status, body, **kw))


def slow_first_byte(conn, n):
    time.sleep(6)
    conn.sendall(response(200, openai_body(GOOD_SQL)))


def slow_body(conn, n):
    body = openai_body(GOOD_SQL + " " * 2000)
    conn.sendall(response(200, b"", length=len(body)))
    for i in range(len(body)):
        conn.sendall(body[i:i + 1])
        time.sleep(0.05)


def truncated(conn, n):
    body = openai_body(GOOD_SQL)
    conn.sendall(response(200, body[: len(body) // 2], length=len(body)))


def reset(conn, n):
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def close_silently(conn, n):
    pass


def garbage_status_line(conn, n):
    conn.sendall(b"HTTP/1.1 OK-ISH\r\n\r\n{}")


def first_fails_then_ok(status):
    def send(conn, n):
        if n == 0:
            conn.sendall(response(status, b'{"error":{"message":"busy"}}', headers=["Retry-After: 0"]))
        else:
            conn.sendall(response(200, openai_body(GOOD_SQL)))
    return send


class FaultServer:
    """Answers every request with the current fault; records each request."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.fault = plain(200, openai_body(GOOD_SQL))
        self.requests = 0
        self.lock = threading.Lock()
        self.stopping = False
        threading.Thread(target=self.serve, daemon=True).start()

    def set(self, fault):
        with self.lock:
            self.fault, self.requests = fault, 0

    def serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            with self.lock:
                fault, n = self.fault, self.requests
                self.requests += 1
            fault(conn, n)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stopping = True
        self.sock.close()


class Recorder:
    """A second loopback port that records any connection: where redirects point."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self):
        self.sock.close()


def cases(recorder_port):
    big = openai_body("x" * (10 << 20))
    bad_utf8 = openai_body("SELECT 'PLACEHOLDER' AS s").replace(b"PLACEHOLDER", b"\xff\xfe\xc3")
    off_host = "Location: http://127.0.0.1:%d/v1/chat/completions" % recorder_port
    # (name, provider, fault, expected run status, expected error_type or None)
    return [
        ("ok", "openai", plain(200, openai_body(GOOD_SQL)), "ok", None),
        ("ok_anthropic", "anthropic", plain(200, anthropic_body(GOOD_SQL)), "ok", None),
        ("slow_first_byte", "openai", slow_first_byte, "provider_error", "provider_timeout"),
        ("slow_body", "openai", slow_body, "provider_error", "provider_timeout"),
        ("truncated_body", "openai", truncated, "provider_error", "provider_unavailable"),
        ("not_json", "openai", plain(200, b"hello, world"), "provider_error", "provider_bad_response"),
        ("json_of_another_shape", "openai", plain(200, b'{"result": "SELECT 1"}'), "provider_error",
         "provider_bad_response"),
        ("html_error_page", "openai", plain(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>",
                                            content_type="text/html"), "provider_error", "provider_unavailable"),
        ("200_with_error_object", "openai", plain(200, b'{"error": {"message": "model overloaded", "type": "server_error"}}'),
         "provider_error", "provider_bad_response"),
        ("200_with_error_anthropic", "anthropic",
         plain(200, b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'),
         "provider_error", "provider_bad_response"),
        ("10mb_reply", "openai", plain(200, big), "provider_error", "provider_bad_response"),
        ("invalid_utf8", "openai", plain(200, bad_utf8), "provider_error", "provider_bad_response"),
        ("401", "openai", plain(401, b'{"error":{"message":"bad key"}}'), "provider_error", "provider_auth"),
        ("403", "anthropic", plain(403, b'{"type":"error","error":{"type":"permission_error","message":"no"}}'),
         "provider_error", "provider_auth"),
        ("404", "openai", plain(404, b'{"error":{"message":"no such model"}}'), "provider_error", "provider_request"),
        ("429_always", "openai", plain(429, b'{"error":{"message":"slow down"}}', headers=["Retry-After: 0"]),
         "provider_error", "provider_rate_limit"),
        ("429_then_ok", "openai", first_fails_then_ok(429), "ok", None),
        ("500", "openai", plain(500, b'{"error":{"message":"boom"}}'), "provider_error", "provider_unavailable"),
        ("503_then_ok", "openai", first_fails_then_ok(503), "ok", None),
        ("503", "anthropic", plain(503, b'{"type":"error","error":{"type":"api_error","message":"down"}}'),
         "provider_error", "provider_unavailable"),
        ("redirect_other_host", "openai", plain(302, b"", headers=[off_host]), "provider_error", "provider_request"),
        ("redirect_307", "openai", plain(307, b"", headers=[off_host]), "provider_error", "provider_request"),
        ("connection_reset", "openai", reset, "provider_error", "provider_unavailable"),
        ("closed_without_reply", "openai", close_silently, "provider_error", "provider_unavailable"),
        ("garbage_status_line", "openai", garbage_status_line, "provider_error", "provider_bad_response"),
    ]


# Longest a case should take: the request timeout, three tries and short
# waits. A figure the table marks, never a failure: on a busy machine (CI runs
# this beside its builds and fuzzers) a case takes what the machine gives it.
# That a fault was ended by the timeout or the retry policy is in its status,
# error type and tries; a case nothing ended would hit the shell's timeout.
BOUND_SECONDS = 3 * REQUEST_TIMEOUT_MS / 1000 + 2


def run_faults(workdir):
    server, recorder = FaultServer(), Recorder()
    db = make_shop_db(workdir, "faults.db")
    before = file_digest(db)
    results = []
    try:
        for name, provider, fault, want_status, want_type in cases(recorder.port):
            server.set(fault)
            env = isolated_env()
            env.update(QUERYPILOT_PROVIDER=provider, QUERYPILOT_MODEL="m", QUERYPILOT_API_KEY="k",
                       QUERYPILOT_BASE_URL="http://127.0.0.1:%d%s" % (server.port, "/v1" if provider == "openai" else ""),
                       QUERYPILOT_REQUEST_TIMEOUT_MS=str(REQUEST_TIMEOUT_MS), QUERYPILOT_RETRY_BASE_MS="50")
            # The case's own run: the newest of the database's history,
            # which keeps the earlier cases' too.
            script = (".load %s\n.mode json\nSELECT * FROM ask('How many orders are there?');\n"
                      "SELECT status, error_type, error, attempts, llm_calls, "
                      "(SELECT COUNT(*) FROM agent_attempts WHERE run_id = agent_runs.id) AS attempt_rows "
                      "FROM agent_runs ORDER BY id DESC LIMIT 1;\n" % EXTENSION)
            started = time.time()
            p = subprocess.run([SQLITE3, "-batch", db], input=script, capture_output=True, text=True,
                               env=env, timeout=60, errors="replace")
            seconds = time.time() - started
            out = p.stdout + p.stderr
            run = {}
            for line in p.stdout.splitlines():
                if line.startswith('[{"status"'):
                    run = json.loads(line)[0]
            r = {"name": name, "seconds": seconds, "tries": server.requests, "status": run.get("status"),
                 "error_type": run.get("error_type"), "error": run.get("error") or "",
                 "crashed": p.returncode < 0}
            whole = bool(run) and run["attempts"] == run["attempt_rows"] and run["attempts"] >= 1
            clear = want_status == "ok" or "ask(): " in out
            # bounded: retried within the policy (then answered or failed);
            # error: a clear error at the first try.
            r["outcome"] = "bounded" if r["tries"] > 1 else ("answered" if run.get("status") == "ok" else "error")
            r["ok"] = (not r["crashed"] and whole and clear and run.get("status") == want_status
                       and (want_type is None or run.get("error_type") == want_type))
            r["over_time"] = TIMED and seconds >= BOUND_SECONDS
            results.append(r)
    finally:
        server.close()
        recorder.close()
    summary = {
        "part": "provider faults",
        "cases": len(results),
        "refused": 0,
        "bounded": sum(r["outcome"] == "bounded" for r in results),
        "answered": sum(r["outcome"] == "answered" for r in results),
        "errors": sum(r["outcome"] == "error" for r in results),
        "crashed": sum(r["crashed"] for r in results),
        "unexpected": sum(not r["ok"] for r in results),
        "max_ms": 1000 * max(r["seconds"] for r in results),
        "db_unchanged": file_digest(db) == before,
        "redirects_followed": recorder.connections,
    }
    summary["unexpected"] += recorder.connections
    return results, summary


def faults_table(results):
    lines = ["%-26s %-9s %6s %5s  %-22s %s" % ("fault", "outcome", "s", "tries", "error_type", "error")]
    for r in results:
        lines.append("%-26s %-9s %6.2f %5d  %-22s %s%s%s" % (
            r["name"], r["outcome"], r["seconds"], r["tries"], r["error_type"] or "", r["error"][:70],
            "" if r["ok"] else "  UNEXPECTED",
            "  (over %d s: a figure)" % BOUND_SECONDS if r.get("over_time") else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        results, summary = run_faults(d)
        print(faults_table(results))
        print(summary)
