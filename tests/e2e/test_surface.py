"""The SQL surface a load registers, pinned: every function with its argument
count and flags, and every module. A function or module added, removed or
re-flagged fails here until this list says so (and docs/ documents it); the
flags say what CONVENTIONS.md asks: a function that reaches the network or
changes settings is DIRECTONLY and never DETERMINISTIC or INNOCUOUS."""
import sqlite3
import unittest

from harness import EXTENSION

DIRECTONLY = 0x080000
DETERMINISTIC = 0x000800
INNOCUOUS = 0x200000

# name, argument count, flags beyond the text encoding
FUNCTIONS = sorted([
    ("agent_chart", 1, "directonly"), ("agent_chart_html", 1, "directonly"),
    ("agent_config", 0, "directonly"), ("agent_config", 1, "directonly"), ("agent_config", 2, "directonly"),
    ("agent_describe", 1, "directonly"), ("agent_describe", 2, "directonly"),
    ("agent_explain", 1, "directonly"), ("agent_feedback", 2, "directonly"), ("agent_forget", 1, "directonly"),
    ("agent_index", 0, "directonly"), ("agent_index", 1, "directonly"),
    ("agent_prompt", 1, "directonly"), ("agent_prompt", 2, "directonly"),
    ("ask_prompt", 1, "directonly"), ("ask_sql", 1, "directonly"),
    ("ask_start", 1, "directonly"), ("ask_state", 1, "directonly"),
    ("querypilot_version", 0, "deterministic innocuous"),
])
MODULES = sorted(["agent_attempts", "agent_descriptions", "agent_metrics", "agent_prompts", "agent_runs", "ask", "ask_result"])


def flag_names(flags):
    names = [n for n, bit in (("deterministic", DETERMINISTIC), ("directonly", DIRECTONLY),
                              ("innocuous", INNOCUOUS)) if flags & bit]
    return " ".join(names)


class SqlSurfaceTest(unittest.TestCase):
    def test_a_load_registers_exactly_this(self):
        con = sqlite3.connect(":memory:")
        self.addCleanup(con.close)
        if not hasattr(con, "enable_load_extension"):
            self.fail("this Python's sqlite3 cannot load extensions; use Debian's /usr/bin/python3")
        functions = "SELECT name, narg, flags FROM pragma_function_list"
        before_f = set(con.execute(functions).fetchall())
        before_m = {m for (m,) in con.execute("SELECT name FROM pragma_module_list")}
        con.enable_load_extension(True)
        con.load_extension(EXTENSION)
        con.enable_load_extension(False)
        added = sorted((name, narg, flag_names(flags))
                       for name, narg, flags in set(con.execute(functions).fetchall()) - before_f)
        self.assertEqual(added, FUNCTIONS)
        self.assertEqual(sorted({m for (m,) in con.execute("SELECT name FROM pragma_module_list")} - before_m), MODULES)


if __name__ == "__main__":
    unittest.main()
