"""Shared pieces of QueryPilot's end-to-end tests.

Everything here talks only to 127.0.0.1: a scripted LLM server the build
produces (querypilot-scripted-llm), the real sqlite3 shell, and Python's
sqlite3 module. Paths come from the environment ctest sets (see
tests/CMakeLists.txt); the defaults suit a run from the source tree.
"""
import atexit
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

SOURCE_DIR = os.environ.get("QP_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("QP_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
SQLITE3 = os.environ.get("QP_SQLITE3", shutil.which("sqlite3") or "sqlite3")
EXTENSION = os.path.join(BUILD_DIR, "querypilot")
SCRIPTED_LLM = os.path.join(BUILD_DIR, "querypilot-scripted-llm")
SHOP_SQL = os.path.join(SOURCE_DIR, "sql", "shop.sql")
DEMO_SCRIPT = os.path.join(SOURCE_DIR, "examples", "demo_script.json")
# Wall-time bounds are asserted only where they mean something: in a build
# without sanitizers (which slow code several times over, and more on a busy
# machine). A sanitizer build asserts the behaviour: bounded, a clear error,
# nothing changed.
TIMED = not os.environ.get("QP_SANITIZE")

# Clients installed from their registries for the client tests: a cache of
# this user's, like npm's own (~/.npm), shared by every build directory and
# every clone, so that a package is fetched and its addon built once per
# machine (tests/e2e/test_clients.py). QP_CLIENTS_DIR puts it elsewhere.
CLIENTS_DIR = os.environ.get("QP_CLIENTS_DIR", os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "querypilot", "clients"))
NODE_PACKAGES = ["better-sqlite3@12", "libsql@0.5"]
# What the chart tests use: the Vega scripts agent_chart_html() inlines, and
# playwright-core to drive Debian's chromium (tests/e2e/test_charts.py).
CHART_PACKAGES = ["vega@5", "vega-lite@5", "vega-embed@6", "playwright-core@1"]

# What QueryPilot keeps in the cache folder (value indexes under
# $XDG_CACHE_HOME/querypilot/values, the history of each database file under
# .../history) goes to a folder of this test process's, removed at its exit: a
# test never writes the user's cache.
VALUE_CACHE_HOME = tempfile.mkdtemp(prefix="qp-test-cache-")
os.environ["XDG_CACHE_HOME"] = VALUE_CACHE_HOME
atexit.register(shutil.rmtree, VALUE_CACHE_HOME, True)

# And each test gets a cache folder of its own inside it, so that no test
# sees the runs an earlier one kept (a database made anew at the same path can
# have the same identity). Every test case runs through TestCase.run, whatever
# its class.
_run_test = unittest.TestCase.run


def _run_in_own_cache(self, result=None):
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="test-", dir=VALUE_CACHE_HOME)
    try:
        return _run_test(self, result)
    finally:
        os.environ["XDG_CACHE_HOME"] = VALUE_CACHE_HOME


unittest.TestCase.run = _run_in_own_cache

# Variables that could point QueryPilot somewhere other than the scripted model.
PROVIDER_VARS = [
    "QUERYPILOT_PROVIDER", "QUERYPILOT_BASE_URL", "QUERYPILOT_API_KEY", "QUERYPILOT_MODEL",
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "QUERYPILOT_MAX_ATTEMPTS", "QUERYPILOT_REQUEST_TIMEOUT_MS", "QUERYPILOT_SQL_TIMEOUT_MS",
    "QUERYPILOT_MAX_ROWS", "QUERYPILOT_ANSWER_CACHE", "QUERYPILOT_CORRECTION_MODEL", "QUERYPILOT_EXPLAIN_MODEL", "QUERYPILOT_CLARIFY",
]


def _querypilot_var(name):
    # Every QUERYPILOT* variable is read at load, or refused there as unknown.
    return name in PROVIDER_VARS or name.upper().startswith("QUERYPILOT")


def isolated_env():
    """This process's environment without anything that could point
    QueryPilot at a model (so nothing reaches a real provider), nor any other
    QUERYPILOT* variable of the developer's."""
    return {k: v for k, v in os.environ.items() if not _querypilot_var(k)}


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def is_review(body):
    """A review of an answer: its system message (OpenAI's first message,
    Anthropic's "system") names the reflection record's field."""
    system = body.get("system") if isinstance(body.get("system"), str) else ""
    messages = body.get("messages") or []
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        system += messages[0]["content"]
    return '"is_acceptable"' in system


class ScriptedLLM:
    """The scripted model server, started on a free loopback port."""

    def __init__(self, script=None):
        self.tmp = tempfile.mkdtemp(prefix="qp-llm-")
        port_file = os.path.join(self.tmp, "port")
        args = [SCRIPTED_LLM, "--port-file", port_file]
        if script is not None:
            path = os.path.join(self.tmp, "script.json")
            with open(path, "w") as f:
                json.dump(script, f)
            args += ["--script", path]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 60  # a sanitizer build on a busy machine starts slowly
        while not _read(port_file).strip():
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()  # its stderr ends only when it does
                raise RuntimeError("scripted LLM did not start: %s" % self.proc.stderr.read())
            time.sleep(0.02)
        self.port = int(_read(port_file))
        self.base = "http://127.0.0.1:%d" % self.port

    def load(self, script):
        # JSON, not urllib's default form encoding (which the server caps at 8 KB).
        req = urllib.request.Request(self.base + "/__script", data=json.dumps(script).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=60).read()

    def release(self):
        """Sends every reply the script holds ("hold": true), and any later
        one at once, until the next script is loaded."""
        req = urllib.request.Request(self.base + "/__release", data=b"", method="POST")
        urllib.request.urlopen(req, timeout=60).read()

    def wait_for_requests(self, n=1, timeout=120):
        """Waits until the server has received `n` requests (a held reply's
        request counts as soon as it arrives); AssertionError if it has not
        after `timeout` seconds, which only a broken run takes."""
        deadline = time.monotonic() + timeout
        while len(self.log()) < n:
            if time.monotonic() > deadline:
                raise AssertionError("the model received %d requests of %d in %d s" % (len(self.log()), n, timeout))
            time.sleep(0.02)

    def log(self, reviews=False):
        """The requests so far: the questions' calls (generations,
        corrections, selections, explanations, charts); reviews=True adds the
        reviews of answers (`review`, on by default), whose system message
        names the field "is_acceptable"."""
        entries = json.loads(urllib.request.urlopen(self.base + "/__log", timeout=60).read())
        return entries if reviews else [e for e in entries if not is_review(e["body"])]

    def env(self, provider="openai", **extra):
        """An environment that points QueryPilot at this server and nowhere else."""
        env = isolated_env()
        env["QUERYPILOT_PROVIDER"] = provider
        env["QUERYPILOT_BASE_URL"] = self.base + ("/v1" if provider == "openai" else "")
        env["QUERYPILOT_MODEL"] = "scripted-model"
        env.update(extra)
        return env

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def connect(db, env, **kwargs):
    """Python's sqlite3 connection to `db` with QueryPilot loaded, its settings
    read from `env` (swapped into this process's environment only while the
    extension loads)."""
    import sqlite3
    ours = {k for k in os.environ if _querypilot_var(k)} | set(PROVIDER_VARS)
    saved = {k: os.environ.get(k) for k in set(env) | ours}
    for k in ours:
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        con = sqlite3.connect(db, **kwargs)
        con.enable_load_extension(True)
        con.load_extension(EXTENSION)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return con


def install_node_clients():
    """npm's better-sqlite3 and libsql in CLIENTS_DIR/node, installed once
    (a lock keeps parallel tests from installing twice). Returns the
    node_modules folder, or raises unittest.SkipTest saying why they cannot be
    had here."""
    import fcntl
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise unittest.SkipTest("Node.js and npm are not installed (apt-get install nodejs npm)")
    root = os.path.join(CLIENTS_DIR, "node")
    modules = os.path.join(root, "node_modules")
    addon = os.path.join(modules, "better-sqlite3", "build", "Release", "better_sqlite3.node")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(root, "package.json")):
            with open(os.path.join(root, "package.json"), "w") as f:
                json.dump({"name": "querypilot-client-tests", "private": True}, f)
        def npm_run(*args):
            p = subprocess.run([npm, *args, "--no-audit", "--no-fund"], cwd=root, capture_output=True,
                               text=True, timeout=900)
            if p.returncode != 0:
                raise unittest.SkipTest("npm %s failed here:\n%s" % (" ".join(args), (p.stdout + p.stderr)[-2000:]))
        if not os.path.isdir(os.path.join(modules, "libsql")) or not os.path.isdir(os.path.join(modules, "better-sqlite3")):
            npm_run("install", "--no-save", *NODE_PACKAGES)
        # npm 11 runs no install script it was not told to trust: better-sqlite3's
        # addon is built (from its own bundled SQLite) by a rebuild.
        if not os.path.exists(addon):
            npm_run("rebuild", "better-sqlite3")
        if not os.path.exists(addon):
            raise unittest.SkipTest("better-sqlite3's addon was not built in %s" % modules)
    return modules


def install_chart_clients():
    """npm's vega, vega-lite, vega-embed and playwright-core in
    CLIENTS_DIR/charts, installed once. Returns the node_modules folder, or
    raises unittest.SkipTest saying why they cannot be had here."""
    import fcntl
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise unittest.SkipTest("Node.js and npm are not installed (apt-get install nodejs npm)")
    root = os.path.join(CLIENTS_DIR, "charts")
    modules = os.path.join(root, "node_modules")
    wanted = [os.path.join(modules, p) for p in ("vega/build/vega.min.js", "vega-lite/build/vega-lite.min.js",
                                                 "vega-embed/build/vega-embed.min.js", "playwright-core/package.json")]
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(root, "package.json")):
            with open(os.path.join(root, "package.json"), "w") as f:
                json.dump({"name": "querypilot-chart-tests", "private": True}, f)
        if not all(os.path.exists(w) for w in wanted):
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)  # a sanitizer build's runtime is not npm's
            p = subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund", *CHART_PACKAGES], cwd=root,
                               capture_output=True, text=True, timeout=900, env=env)
            if p.returncode != 0:
                raise unittest.SkipTest("npm install %s failed here:\n%s" % (" ".join(CHART_PACKAGES),
                                                                              (p.stdout + p.stderr)[-2000:]))
    missing = [w for w in wanted if not os.path.exists(w)]
    if missing:
        raise unittest.SkipTest("npm did not install %s" % ", ".join(missing))
    return modules


def install_debian(package, present):
    """Installs the Debian package `package` with apt-get, once, when
    `present()` is false. Raises unittest.SkipTest saying why where it cannot
    be had."""
    import fcntl
    if present():
        return
    if not shutil.which("apt-get"):
        raise unittest.SkipTest("%s is not installed and there is no apt-get to install it" % package)
    prefix = [] if os.geteuid() == 0 else ([shutil.which("sudo"), "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        raise unittest.SkipTest("%s is not installed and installing it needs root (apt-get install %s)"
                                % (package, package))
    os.makedirs(CLIENTS_DIR, exist_ok=True)
    with open(os.path.join(CLIENTS_DIR, ".apt-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        env.pop("LD_PRELOAD", None)
        install = prefix + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
        p = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
        if p.returncode != 0:  # an old package list: read it anew once
            subprocess.run(prefix + ["apt-get", "update", "-qq"], capture_output=True, timeout=900, env=env)
            p = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if not present():
        raise unittest.SkipTest("%s could not be installed here:\n%s" % (package, (p.stdout + p.stderr)[-2000:]))


def install_apsw(python="/usr/bin/python3"):
    """APSW, the Python SQLite library that can always load extensions, for
    `python` (Debian's): Debian's python3-apsw, installed once with apt-get
    when it is missing. Raises unittest.SkipTest saying why where it cannot be
    had."""
    import fcntl

    def present():
        return subprocess.run([python, "-c", "import apsw"], capture_output=True, timeout=60).returncode == 0
    if present():
        return
    if not shutil.which("apt-get"):
        raise unittest.SkipTest("APSW is not installed for %s and there is no apt-get to install "
                                "python3-apsw (pip install apsw)" % python)
    prefix = [] if os.geteuid() == 0 else ([shutil.which("sudo"), "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        raise unittest.SkipTest("APSW is not installed and installing python3-apsw needs root "
                                "(apt-get install python3-apsw)")
    os.makedirs(CLIENTS_DIR, exist_ok=True)
    with open(os.path.join(CLIENTS_DIR, ".apt-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = prefix + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3-apsw"]
        p = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
        if p.returncode != 0:  # an old package list: read it anew once
            subprocess.run(prefix + ["apt-get", "update", "-qq"], capture_output=True, timeout=900, env=env)
            p = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if not present():
        raise unittest.SkipTest("python3-apsw could not be installed here:\n%s" % (p.stdout + p.stderr)[-2000:])


def make_shop_db(directory, name="shop.db"):
    path = os.path.join(directory, name)
    with open(SHOP_SQL) as f:
        subprocess.run([SQLITE3, path], stdin=f, check=True)
    return path


def built_version():
    """What querypilot_version() of the build under test says: VERSION, or
    VERSION+dev... for work past the release (cmake/version.cmake)."""
    with open(os.path.join(BUILD_DIR, "generated", "querypilot_version.h")) as f:
        return re.search(r'#define QUERYPILOT_VERSION "([^"]+)"', f.read()).group(1)


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


MARKER = "@@qp-statement@@"


class ShellError(str):
    """The error text the shell printed for one statement."""


def session(db, statements, env, timeout=300, cwd=None):
    """Runs statements in one sqlite3 shell session (JSON output mode), in
    the folder `cwd` when given.

    Returns one item per statement: the parsed rows (a list of dicts), or a
    ShellError with the message the shell printed."""
    lines = [".load %s" % EXTENSION, ".mode json", ".bail off"]
    for st in statements:
        lines.append(".print %s" % MARKER)
        lines.append(st if st.rstrip().endswith(";") or st.startswith(".") else st + ";")
    p = subprocess.run(["stdbuf", "-o0", "-e0", SQLITE3, "-batch", db], input="\n".join(lines) + "\n",
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                       timeout=timeout, cwd=cwd)
    chunks = p.stdout.split(MARKER + "\n")
    if chunks[0].strip():
        raise AssertionError("loading the extension printed: %s" % chunks[0])
    results = []
    for chunk in chunks[1:]:
        text = chunk.strip()
        if re.match(r"^(Runtime error|Parse error|Error)", text):
            results.append(ShellError(re.sub(r"^(Runtime error|Parse error|Error)( near line \d+)?: ", "", text)))
        elif not text:
            results.append([])
        else:
            results.append(json.loads(text))
    if len(results) != len(statements):
        raise AssertionError("expected %d results, got %d: %s" % (len(statements), len(results), p.stdout))
    return results


def replay_transcript(db, transcript, env, extension=EXTENSION):
    """Replays a `sqlite>` transcript in the interactive shell.

    Returns (expected, actual) text, ready to compare. Lines starting with
    `sqlite> ` or `   ...> ` are input; everything else is expected output."""
    commands = []
    for line in transcript.splitlines():
        if line.startswith("sqlite> "):
            commands.append(line[len("sqlite> "):])
        elif line.startswith("   ...> "):
            commands.append(line[len("   ...> "):])
    script = "\n".join(c.replace("./build/querypilot", extension) for c in commands) + "\n"
    p = subprocess.run(["stdbuf", "-o0", "-e0", SQLITE3, "-interactive", db], input=script,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                       timeout=300)
    lines = p.stdout.splitlines()
    # Drop the banner and the final empty prompt.
    while lines and not lines[0].startswith("sqlite> "):
        lines.pop(0)
    if lines and lines[-1].strip() == "sqlite>":
        lines.pop()
    actual = "\n".join(l.replace(extension, "./build/querypilot") for l in lines)
    expected = "\n".join(transcript.strip("\n").splitlines())
    return expected, actual


def transcripts_in_markdown(path):
    """Every fenced block of a Markdown file whose first line is a `sqlite>` prompt."""
    text = _read(path)
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    return [b for b in blocks if b.startswith("sqlite> ")]


class LLMTestCase(unittest.TestCase):
    """A test case with a scripted LLM and a fresh shop database per test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qp-test-")
        self.db = make_shop_db(self.tmp)
        self.llm = ScriptedLLM()
        self.addCleanup(self.llm.close)
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def session(self, statements, script, provider="openai", **env):
        self.llm.load(script)
        return session(self.db, statements, self.llm.env(provider, **env))


def sql_reply(sql):
    """A model reply as real models often give it: prose and a fenced block."""
    return "Here is the query:\n\n```sql\n%s\n```\n" % sql
