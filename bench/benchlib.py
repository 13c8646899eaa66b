"""Helpers shared by the benchmark scripts."""
import sqlite3


def connect(extension, db, base_url):
    """A connection to `db` with QueryPilot loaded and pointed at the scripted
    model at `base_url` (its root, without /v1). Usable from any thread."""
    con = sqlite3.connect(db, check_same_thread=False)
    con.enable_load_extension(True)
    con.load_extension(extension)
    # The answer cache off: the benchmarks measure the whole loop each time.
    for k, v in (("provider", "openai"), ("base_url", base_url + "/v1"), ("model", "scripted"),
                 ("answer_cache", "0")):
        con.execute("SELECT agent_config(?, ?)", (k, v))
    return con


def pct(values, p):
    """The p-th percentile of `values` (nearest rank on the sorted values)."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]
