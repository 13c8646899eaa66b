#!/usr/bin/env python3
"""A dqlite cluster's writes while QueryPilot asks on its leader.

Three dqlite-demo nodes on 127.0.0.1 (Debian's go-dqlite), QueryPilot in every
node's connections through libquerypilot_preload.so, the scripted model
answering after --delay-ms (8 s: a slow hosted model). The leader steps every
client's statements in one loop, so whatever a statement waits on, every
client waits on.

It prints, each over --writes writes (PUT through the demo's API of a node
that does not lead, which forwards it to the leader):
  baseline  writes with nothing else running: median and slowest;
  ask()     the synchronous ask's time, and the writes sent while its model
            thinks, one after another: the first waits for the model;
  ask_start the asynchronous ask (ask_start, ask_state polled every 0.1 s,
            then ask_result): the writes sent while its model thinks, and the
            time from ask_start to the rows through ask_result. Skipped with a note where this build has
            no ask_start.

Usage: /usr/bin/python3 bench/dqlite_stall.py [--delay-ms 8000] [--writes 5]
"""
import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
os.environ.setdefault("QP_BUILD_DIR", os.path.join(HERE, "..", "build"))

from harness import ScriptedLLM, sql_reply  # noqa: E402
from dqlite_cluster import Cluster, Session, install_dqlite  # noqa: E402

QUESTION = "How many keys are stored?"


def figures(label, times):
    print("%-44s median %.3f s, slowest %.3f s (%d writes)" % (label, statistics.median(times), max(times),
                                                                len(times)))


def wait_for_request(llm, n):
    deadline = time.time() + 60
    while len(llm.log()) < n:
        if time.time() > deadline:
            raise RuntimeError("the model was never asked")
        time.sleep(0.01)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay-ms", type=int, default=8000)
    ap.add_argument("--writes", type=int, default=5)
    args = ap.parse_args()
    install_dqlite()
    reply = {"content": sql_reply("SELECT count(*) AS n FROM model"), "delay_ms": args.delay_ms}
    llm = ScriptedLLM({"rules": [{"match": "", "replies": [reply]}]})
    try:
        cluster = Cluster(llm.env(QUERYPILOT_ANSWER_CACHE="0"))
    except BaseException:
        llm.close()
        raise
    try:
        leader = cluster.leader()
        other = next(n for n in cluster.nodes if n is not leader)
        print("dqlite cluster: 3 nodes on 127.0.0.1, leader %s; writes through %s; model delay %d ms"
              % (leader.db, other.api, args.delay_ms))
        figures("baseline writes", [cluster.put("base-%d" % i, "x", node=other) for i in range(args.writes)])

        result = {}

        def ask():
            start = time.monotonic()
            try:
                result["rows"] = cluster.shell("SELECT row FROM ask('%s')" % QUESTION, timeout=600)
            except RuntimeError as e:  # the leader may lose its leadership meanwhile
                result["rows"] = "error: %s" % str(e).splitlines()[0]
            result["took"] = time.monotonic() - start
        t = threading.Thread(target=ask)
        t.start()
        wait_for_request(llm, 1)
        during = [cluster.put("sync-%d" % i, "x", node=other) for i in range(args.writes)]
        t.join()
        print("%-44s %.2f s, rows %s" % ("synchronous ask()", result["took"], result["rows"]))
        print("%-44s first %.3f s, then median %.3f s" % ("writes during ask()", during[0],
                                                           statistics.median(during[1:] or during)))
        now = cluster.leader()
        if now is not leader:
            print("leader after ask(): %s (was %s: it stopped leading while the model thought)" % (now.db, leader.db))

        session = Session(cluster)
        try:
            start = time.monotonic()
            out = session.run("SELECT ask_start('%s')" % QUESTION)
            if "no such function: ask_start" in out:
                print("asynchronous ask: not in this build (no such function: ask_start)")
                return
            run = int(out)
            wait_for_request(llm, 2)
            during = [cluster.put("async-%d" % i, "x", node=other) for i in range(args.writes)]
            figures("writes during ask_start's model call", during)
            # Polled: a wait inside ask_result would hold the leader's loop.
            deadline = time.time() + args.delay_ms / 1000.0 * 4 + 30
            while session.run("SELECT ask_state(%d)" % run) == "pending" and time.time() < deadline:
                time.sleep(0.1)
            rows = session.run("SELECT row FROM ask_result(%d)" % run)
            print("%-44s %.2f s, rows %s" % ("ask_start to rows through ask_result", time.monotonic() - start,
                                              rows))
        finally:
            session.close()
    finally:
        cluster.close()
        llm.close()


if __name__ == "__main__":
    main()
