"""The phrasing suite: questions and the SQL a model gave for them, each
marked right or wrong, run through the whole agent (one attempt, the scripted
model answering with that SQL), asserting whether the result checks send the
answer back.

A right answer must never be sent back: every correction costs a model call,
and a model that obeys one can turn a right answer into a wrong one. A wrong
answer that a check targets must be; `finding` names the check. Findings that
only read the question's words, or that the data may explain, are notes: such
a wrong answer must carry the note in its reflection, and is sent back only if
a finding proven by the data and the SQL sends it. Each finding's tier is
QueryPilot's own, read from agent_config('findings').

The cases are in tests/phrasing/*.jsonl, one JSON object per line:
  {"db": "shop" | "orchestra" | "superhero", "question": ..., "sql": ...,
   "right": true | false, "shape": ..., "finding": <issue kind, wrong ones>}
"shop" is the demo database; the others are ../shared/datasets's, and their
cases are skipped, with a message, where that folder is missing."""
import glob
import json
import os
import sqlite3
import unittest

import harness
from harness import ScriptedLLM, connect, make_shop_db, sql_reply

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "..", "phrasing")
SHARED_DIR = os.environ.get("QP_SHARED_DIR", os.path.join(harness.SOURCE_DIR, "..", "shared"))
DATASETS = os.path.join(SHARED_DIR, "datasets")
SHARED = {"orchestra": os.path.join(DATASETS, "spider", "orchestra.sqlite"),
          "superhero": os.path.join(DATASETS, "bird", "superhero.sqlite")}


def load_cases():
    cases = []
    for path in sorted(glob.glob(os.path.join(CASES, "*.jsonl"))):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    c = json.loads(line)
                    c["where"] = "%s:%d" % (os.path.basename(path), n)
                    cases.append(c)
    return cases


class PhrasingSuiteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="qp-phrasing-")
        cls.cases = load_cases()
        cls.llm = ScriptedLLM()
        # The severities each finding may have in a reflection, by name.
        con = connect(":memory:", cls.llm.env())
        try:
            (findings,) = con.execute("SELECT agent_config('findings')").fetchone()
        finally:
            con.close()
        cls.severities = {f["name"]: f["severities"] for f in json.loads(findings)}

    @classmethod
    def tearDownClass(cls):
        import shutil
        cls.llm.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def database(self, name):
        if name == "shop":
            return make_shop_db(self.tmp)
        path = SHARED[name]
        if not os.path.exists(path):
            self.skipTest("no %s (../shared/datasets is not here): its phrasing cases are skipped" % path)
        return path

    def reflect(self, db, cases):
        """Asks each case's question once; returns each first attempt's reflection."""
        uri = "file:%s?mode=ro" % db if db.endswith(".sqlite") else db
        con = connect(uri, self.llm.env(), uri=True)
        try:
            con.execute("SELECT agent_config('max_attempts', 1)")
            con.execute("SELECT agent_config('answer_cache', 0)")
            # The reflection is what is read: a doubtful empty answer's rows, not its error.
            con.execute("SELECT agent_config('empty_doubtful', 'rows')")
            out = []
            for c in cases:
                self.llm.load({"rules": [{"match": "", "replies": [sql_reply(c["sql"])]}]})
                try:
                    con.execute("SELECT row FROM ask(?)", (c["question"],)).fetchall()
                except sqlite3.Error as e:
                    out.append({"error": str(e)})
                    continue
                (reflection,) = con.execute(
                    "SELECT reflection FROM agent_attempts ORDER BY run_id DESC, attempt LIMIT 1").fetchone()
                out.append(json.loads(reflection or "{}"))
            return out
        finally:
            con.close()

    def run_db(self, name):
        cases = [c for c in self.cases if c["db"] == name]
        self.assertTrue(cases)
        db = self.database(name)
        for c, r in zip(cases, self.reflect(db, cases)):
            with self.subTest(case=c["where"], question=c["question"]):
                self.assertNotIn("error", r, r)
                flagged = bool(r.get("should_refine"))
                kinds = [i["kind"] for i in r.get("issues", []) if i.get("severity") == "critical"]
                notes = [i["kind"] for i in r.get("issues", []) if i.get("severity") == "note"]
                if c["right"]:
                    self.assertFalse(flagged, "a right answer was sent back: %s" % r.get("issues"))
                    continue
                self.assertIn(c["finding"], self.severities, "a finding QueryPilot does not have")
                severities = self.severities[c["finding"]]
                if "critical" not in severities:
                    self.assertIn(c["finding"], notes, "a wrong answer without its note")
                    self.assertNotIn(c["finding"], kinds)
                elif "note" in severities and c["finding"] in notes:
                    # A critical finding also raised as a note (foreign-key ids
                    # where the question does not name, word for word, what
                    # they stand for).
                    self.assertNotIn(c["finding"], kinds)
                else:
                    self.assertTrue(flagged, "a wrong answer passed (%s expected)" % c.get("finding"))
                    self.assertIn(c["finding"], kinds)

    def test_the_suite_has_every_shape(self):
        cases = self.cases
        self.assertGreaterEqual(len(cases), 150)
        shapes = {c["shape"] for c in cases if c["right"]}
        for shape in ("ordering", "each", "tie", "named_id", "percentage", "empty_by_design", "top_item",
                      "count", "list"):
            self.assertIn(shape, shapes)
        self.assertGreaterEqual(sum(1 for c in cases if not c["right"]), 30)

    def test_the_tiers_are_querypilots(self):
        con = connect(":memory:", self.llm.env())
        try:
            findings = json.loads(con.execute("SELECT agent_config('findings')").fetchone()[0])
            with self.assertRaises(sqlite3.Error) as e:
                con.execute("SELECT agent_config('findings', '[]')")
            self.assertIn("findings is read-only", str(e.exception))
        finally:
            con.close()
        by_name = {f["name"]: f for f in findings}
        self.assertEqual(len(by_name), len(findings))  # one row per finding
        for c in self.cases:
            if not c["right"]:
                self.assertIn(c["finding"], by_name, c["where"])
        # Critical findings come first, each with its strategy and instruction.
        tiers = [f["tier"] for f in findings]
        self.assertEqual(tiers, sorted(tiers, key=["critical", "note", "info"].index))
        for f in findings:
            self.assertEqual("strategy" in f and "prompt" in f, f["tier"] == "critical", f)
        self.assertEqual(by_name["too_many_rows"]["severities"], ["note"])
        self.assertEqual(by_name["foreign_key_ids"]["severities"], ["critical", "note"])

    def test_shop(self):
        self.run_db("shop")

    def test_orchestra(self):
        self.run_db("orchestra")

    def test_superhero(self):
        self.run_db("superhero")


if __name__ == "__main__":
    unittest.main()
