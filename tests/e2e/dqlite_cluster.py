"""A dqlite cluster on 127.0.0.1 with QueryPilot in every node's connections.

Three nodes of Debian's dqlite-demo (package go-dqlite, over libdqlite0), each
started with LD_PRELOAD=libquerypilot_preload.so: dqlite's VFS has no xDlOpen,
so QueryPilot cannot be loaded there; the preload registers it as an automatic
extension (ext/preload.c). SQL reaches the cluster through the `dqlite` shell,
which sends it to the leader; writes go through the demo's HTTP API
(PUT /KEY) of any node, which forwards them to the leader.

Used by tests/e2e/test_dqlite.py and bench/dqlite_stall.py.
"""
import fcntl
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import BUILD_DIR, CLIENTS_DIR

PRELOAD = os.path.join(BUILD_DIR, "libquerypilot_preload.so")
PACKAGES = ["go-dqlite", "libdqlite0"]
DATABASE = "demo"
# Loopback only: no proxy the environment may name.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the database dqlite-demo keeps its table `model` in


def install_dqlite():
    """dqlite-demo and the dqlite shell (Debian's go-dqlite and libdqlite0),
    installed once with apt-get when they are missing, as scripts/install-deps.sh
    does for the whole suite. Raises unittest.SkipTest saying why where they
    cannot be had."""
    def present():
        return shutil.which("dqlite-demo") and shutil.which("dqlite")
    if present():
        return
    if not shutil.which("apt-get"):
        raise unittest.SkipTest("dqlite-demo is not installed and there is no apt-get to install %s"
                                % " ".join(PACKAGES))
    prefix = [] if os.geteuid() == 0 else ([shutil.which("sudo"), "-n"] if shutil.which("sudo") else None)
    if prefix is None:
        raise unittest.SkipTest("dqlite-demo is not installed and installing %s needs root (apt-get install %s)"
                                % (" ".join(PACKAGES), " ".join(PACKAGES)))
    os.makedirs(CLIENTS_DIR, exist_ok=True)
    with open(os.path.join(CLIENTS_DIR, ".apt-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = prefix + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + PACKAGES
        p = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
        if p.returncode != 0:  # an old package list: read it anew once
            subprocess.run(prefix + ["apt-get", "update", "-qq"], capture_output=True, timeout=900, env=env)
            p = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
    if not present():
        raise unittest.SkipTest("%s could not be installed here:\n%s" % (" ".join(PACKAGES),
                                                                           (p.stdout + p.stderr)[-2000:]))


def free_ports(n):
    """n loopback ports free now, for nodes that must be given their
    addresses. They are taken below the kernel's ephemeral range
    (ip_local_port_range), from which every connect() and every bind to port
    0 of the tests running beside draws: there, one of them could take a port
    between this check and the node's bind, and the node would not start."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    ports = []
    if low >= 12000:
        pool = list(range(low - 10000, low))
        random.shuffle(pool)
        for port in pool:
            if len(ports) == n:
                break
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            ports.append(port)
    if len(ports) == n:
        return ports
    # No room below the range: ports the kernel gives, released at once.
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Node:
    def __init__(self, api_port, db_port, folder):
        self.api = "127.0.0.1:%d" % api_port
        self.db = "127.0.0.1:%d" % db_port
        self.folder = folder
        self.proc = None
        self.log = os.path.join(folder, "node.log")


class Cluster:
    """Three dqlite-demo nodes with QueryPilot preloaded, the model at
    `env` (an environment from harness.ScriptedLLM.env). close() stops them."""

    def __init__(self, env, nodes=3):
        self.tmp = tempfile.mkdtemp(prefix="qp-dqlite-")
        ports = free_ports(2 * nodes)
        self.nodes = [Node(ports[2 * i], ports[2 * i + 1], os.path.join(self.tmp, "node%d" % (i + 1)))
                      for i in range(nodes)]
        self.env = dict(env)
        # An AddressSanitizer build's runtime (harness: LD_PRELOAD) stays first.
        self.env["LD_PRELOAD"] = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), PRELOAD) if p)
        try:
            for i, node in enumerate(self.nodes):
                os.makedirs(node.folder)
                self.start(node, join=[] if i == 0 else [self.nodes[0].db])
                if i == 0:
                    self.wait_for_leader()
            # Every node answers the demo's API and the cluster has them all.
            for node in self.nodes:
                self.wait_for_api(node)
            deadline = time.time() + 60
            while len(self.shell(".cluster").splitlines()) < nodes:
                if time.time() > deadline:
                    raise RuntimeError("the nodes did not join: %s" % self.shell(".cluster"))
                time.sleep(0.2)
        except BaseException:
            self.close()
            raise

    def start(self, node, join):
        args = ["dqlite-demo", "--api", node.api, "--db", node.db, "--dir", node.folder]
        for address in join:
            args += ["--join", address]
        with open(node.log, "ab") as log:
            node.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                         cwd=node.folder)

    def wait_for_api(self, node, timeout=60):
        deadline = time.time() + timeout
        while True:
            try:
                self.put("ready", "1", node=node)
                return
            except (OSError, RuntimeError) as e:
                if node.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("node %s never served its API: %s\n%s" % (node.api, e, self.logs()))
                time.sleep(0.2)

    def servers(self, alive_only=True):
        return ",".join(n.db for n in self.nodes if not alive_only or (n.proc and n.proc.poll() is None))

    def wait_for_leader(self, timeout=60):
        deadline = time.time() + timeout
        while True:
            p = subprocess.run(["dqlite", "-s", self.servers(), DATABASE, "SELECT 1"], capture_output=True,
                               text=True, timeout=30)
            if p.returncode == 0 and p.stdout.strip() == "1":
                return
            if time.time() > deadline:
                raise RuntimeError("no dqlite leader: %s %s\n%s" % (p.stdout, p.stderr, self.logs()))
            time.sleep(0.2)

    def shell(self, sql, timeout=60):
        """One statement through the dqlite shell (a connection of its own), run
        on the leader: its output, or RuntimeError with the shell's error."""
        p = subprocess.run(["dqlite", "-s", self.servers(), DATABASE, sql], capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0 or p.stderr.strip():
            raise RuntimeError((p.stderr or p.stdout).strip())
        return p.stdout.strip()

    def put(self, key, value, node=None, timeout=60):
        """A write through node's demo API (the last node by default: not the
        first leader); returns the seconds it took."""
        node = node or self.nodes[-1]
        req = urllib.request.Request("http://%s/%s" % (node.api, key), data=value.encode(), method="PUT")
        start = time.monotonic()
        body = _OPENER.open(req, timeout=timeout).read().decode()
        took = time.monotonic() - start
        if body.strip() != "done":
            raise RuntimeError("PUT /%s on %s: %s" % (key, node.api, body))
        return took

    def leader(self):
        """The node that leads now (the dqlite shell's .leader)."""
        address = self.shell(".leader")
        for node in self.nodes:
            if node.db == address:
                return node
        raise RuntimeError("unknown leader %r" % address)

    def kill(self, node):
        node.proc.send_signal(signal.SIGKILL)
        node.proc.wait(timeout=30)

    def logs(self):
        out = []
        for node in self.nodes:
            try:
                with open(node.log, errors="replace") as f:
                    out.append("%s:\n%s" % (node.db, f.read()[-3000:]))
            except FileNotFoundError:
                pass
        return "\n".join(out)

    def close(self):
        for node in self.nodes:
            if node.proc and node.proc.poll() is None:
                node.proc.terminate()
        for node in self.nodes:
            if node.proc:
                try:
                    node.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait()
        shutil.rmtree(self.tmp, True)


class Session:
    """One connection of the dqlite shell, kept open (its interactive mode,
    statements on stdin): for what must happen on one connection."""

    PROMPT = "dqlite> "

    def __init__(self, cluster):
        self.proc = subprocess.Popen(["dqlite", "-s", cluster.servers(), DATABASE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=0)
        self._until_prompt(60)

    def run(self, sql, timeout=60):
        """The statement's output (an error is the shell's message)."""
        self.proc.stdin.write(sql.rstrip(";") + ";\n")
        self.proc.stdin.flush()
        return self._until_prompt(timeout)

    def _until_prompt(self, timeout):
        # The shell prints its prompt, reads a statement, prints its answer
        # and then the prompt again.
        out = ""
        deadline = time.time() + timeout
        while not out.endswith(self.PROMPT):
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("the dqlite shell gave no answer in %d s: %r" % (timeout, out))
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536).decode(errors="replace")
                if not chunk:
                    raise RuntimeError("the dqlite shell ended: %r" % out)
                out += chunk
        return out[:-len(self.PROMPT)].strip()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
