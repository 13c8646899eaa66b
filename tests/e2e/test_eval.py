"""querypilot-eval end to end: a small dataset built from the shop database,
with a prediction file whose outcomes are known, so every figure the harness
prints can be checked exactly; the live-provider path against the scripted
model; and, where ../shared/datasets exists, docs/measure.md's command over the
real Spider and BIRD questions with the published systems' SQL.

Everything talks only to 127.0.0.1 (the replay model and the scripted model).
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

EVAL = os.path.join(harness.BUILD_DIR, "querypilot-eval")
SHARED = os.environ.get("QP_SHARED_DIR", os.path.join(harness.SOURCE_DIR, "..", "shared"))
DATASETS = os.path.join(SHARED, "datasets")
# The Spider and BIRD dev questions the prediction files answer (the broad
# spider_train set beside them has a mode of its own).
DEV_SETS = ",".join(os.path.join(DATASETS, d) for d in ("spider", "bird"))

CANADA = "SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.country = 'Canada'"
MOST = ("SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id "
        "GROUP BY c.id ORDER BY count(*) DESC LIMIT 1")
QUESTIONS = [
    {"id": "q1", "db_id": "shop", "question": "How many customers are there?",
     "gold_sql": "SELECT count(*) FROM customers", "difficulty": "simple"},
    {"id": "q2", "db_id": "shop", "question": "How many orders came from Canada?",
     "gold_sql": CANADA, "difficulty": "simple"},
    {"id": "q3", "db_id": "shop", "question": "List the names of Outdoor products.",
     "gold_sql": "SELECT name FROM products WHERE category = 'Outdoor'", "difficulty": "simple"},
    {"id": "q4", "db_id": "shop", "question": "Which customer placed the most orders?",
     "gold_sql": MOST, "difficulty": "moderate", "evidence": "most orders refers to MAX(COUNT(orders.id))"},
    {"id": "q5", "db_id": "shop", "question": "What is the cheapest product?",
     "gold_sql": "SELECT name FROM products ORDER BY price LIMIT 1", "difficulty": "simple"},
]
PREDICTIONS = [
    # Right first time.
    {"db_id": "shop", "question": "How many customers are there?",
     "pred_sql": "SELECT COUNT(id) FROM customers", "repaired_sql": "SELECT COUNT(id) FROM customers"},
    # An error on attempt 1 (no such column); the repair is right.
    {"db_id": "shop", "question": "How many orders came from Canada?",
     "pred_sql": CANADA.replace("c.country", "c.nation"), "repaired_sql": CANADA},
    # Right first time; the (wrong) repair is never asked for.
    {"db_id": "shop", "question": "List the names of Outdoor products.",
     "pred_sql": "SELECT name FROM products WHERE category = 'Outdoor'",
     "repaired_sql": "SELECT name FROM products"},
    # Runs cleanly but is wrong (fewest instead of most): no error, no retry.
    {"db_id": "shop", "question": "Which customer placed the most orders?",
     "pred_sql": MOST.replace("DESC", "ASC"), "repaired_sql": MOST},
    # q5 has no prediction; this one matches no question.
    {"db_id": "shop", "question": "Not a question of this dataset",
     "pred_sql": "SELECT 1", "repaired_sql": "SELECT 1"},
]


def run_eval(args, env=None, timeout=300):
    if env is None:  # nothing may point the harness at a real provider
        env = harness.isolated_env()
    return subprocess.run([EVAL] + args, capture_output=True, text=True, timeout=timeout, env=env)


class ShopDatasetTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qp-eval-")
        self.data = os.path.join(self.tmp, "shopset")
        os.makedirs(self.data)
        self.db = harness.make_shop_db(self.data, "shop.sqlite")
        with open(os.path.join(self.data, "questions.jsonl"), "w") as f:
            f.writelines(json.dumps(q) + "\n" for q in QUESTIONS)
        self.preds = os.path.join(self.tmp, "shop_preds.jsonl")
        with open(self.preds, "w") as f:
            f.writelines(json.dumps(p) + "\n" for p in PREDICTIONS)

    def run_replay(self, *extra):
        before = harness.file_digest(self.db)
        out_json = os.path.join(self.tmp, "out.json")
        chart = os.path.join(self.tmp, "chart.svg")
        p = run_eval(["--data", self.data, "--replay", self.preds, "--json", out_json,
                      "--chart", chart] + list(extra))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(harness.file_digest(self.db), before, "the dataset's database changed")
        with open(out_json) as f:
            return p, json.load(f), chart

    def test_replay_figures_without_and_with_retry(self):
        p, result, chart = self.run_replay("--max-attempts", "1,3")
        runs = {r["name"]: r for r in result["runs"]}
        self.assertEqual(sorted(runs), ["shop_preds x1", "shop_preds x3"])
        base, retry = runs["shop_preds x1"]["summary"], runs["shop_preds x3"]["summary"]
        # No retry: q1 and q3 right; q2 fails with an error, q4 is wrong.
        self.assertEqual((base["questions"], base["first_ok"], base["final_ok"]), (4, 2, 2))
        self.assertEqual((base["corrected"], base["mis_repairs"], base["avg_attempts"]), (0, 0, 1.0))
        self.assertEqual(base["by_status"], {"failed": 1, "ok": 3})
        # With retry: q2's error triggers one correction, which the repair fixes.
        self.assertEqual((retry["first_ok"], retry["final_ok"]), (2, 3))
        self.assertEqual((retry["first_failures"], retry["corrected"], retry["mis_repairs"]), (2, 1, 0))
        self.assertEqual(retry["correction_effectiveness"], 50.0)
        self.assertEqual(retry["avg_attempts"], 1.25)
        self.assertEqual(retry["llm_calls_per_question"], 1.25)
        self.assertEqual(retry["accuracy_by_attempt"], [50.0, 75.0, 75.0])
        self.assertEqual(retry["by_first_attempt_outcome"]["column_not_found"]["final_ok"], 1)
        self.assertEqual(retry["by_first_attempt_outcome"]["wrong_result"]["final_ok"], 0)
        self.assertEqual(retry["by_difficulty"]["moderate"], {"n": 1, "first_ok": 0, "final_ok": 0})
        self.assertEqual((retry["without_prediction"], retry["unmatched_predictions"]), (1, 1))
        self.assertEqual(retry["rows_inconsistent"], 0)
        self.assertTrue(retry["tokens_estimated"])
        self.assertGreater(retry["prompt_chars_mean"], 200)  # the schema went into the prompt
        # Per question: what each attempt was and how it scored.
        qs = {q["id"]: q for q in runs["shop_preds x3"]["questions"]}
        self.assertEqual([a["error_type"] for a in qs["q2"]["attempt_scores"]], ["column_not_found", ""])
        self.assertEqual(qs["q4"]["first_outcome"], "wrong_result")
        # The terminal table has a line per run with these figures.
        line = next(l for l in p.stdout.splitlines() if l.startswith("shop_preds x3"))
        self.assertRegex(line, r"shop_preds x3\s+4\s+75\.0%\s+50\.0%\s+1/2\s+0\s")
        self.assertIn("first attempt: column_not_found 1 (1 ended right)", p.stdout)
        self.assertIn("not scored: 1 questions have no prediction; 1 predictions match no question", p.stdout)
        with open(chart) as f:
            svg = f.read()
        self.assertTrue(svg.startswith("<svg") and "shop_preds x3" in svg)

    def test_compare_puts_two_runs_side_by_side(self):
        _, base, _ = self.run_replay("--max-attempts", "1", "--name", "shop")
        a = os.path.join(self.tmp, "a.json")
        with open(a, "w") as f:
            json.dump(base, f)
        _, retry, _ = self.run_replay("--max-attempts", "3", "--name", "shop")
        b = os.path.join(self.tmp, "b.json")
        with open(b, "w") as f:
            json.dump(retry, f)
        p = run_eval(["compare", a, b])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"final accuracy\s+50\.0%\s+75\.0%\s+\+25\.0")
        self.assertIn("right only in B (1): q2", p.stdout)
        self.assertIn("right only in A (0): none", p.stdout)

    def test_bad_input_is_a_clear_error(self):
        cases = [
            ([], 2, "--data is required"),
            (["--data", os.path.join(self.tmp, "absent")], 1, "no dataset at"),
            (["--data", self.data, "--max-attempts", "0"], 2, "--max-attempts takes numbers from 1 to 10"),
            (["--data", self.data, "--limit", "many"], 2, "--limit needs a number"),
            (["--data", self.data, "--bogus", "1"], 2, "unknown option --bogus"),
            (["--data", self.data, "--replay", os.path.join(self.tmp, "none.jsonl")], 1, "no prediction files"),
            (["--data", self.data, "--replay", self.preds, "--set", "max_rows=-5"], 1, "max_rows must be a whole number"),
            (["compare", self.preds, self.preds], 1, "is not a querypilot-eval JSON file"),
        ]
        for args, code, message in cases:
            p = run_eval(args)
            self.assertEqual(p.returncode, code, (args, p.stdout, p.stderr))
            self.assertIn(message, p.stderr, args)


    def test_review_replies_from_a_recording_and_missing_ones_dumped(self):
        """The cycle of a review recording on a tiny hand-made one: a run dumps
        the review requests it has no reply for (and goes on unreviewed), the
        replies are merged, the next run dumps the correction a review sent
        back, then the review of that correction; with all three recorded the
        wrong answer (q4) is fixed and the report says so."""
        merge = os.path.join(harness.SOURCE_DIR, "eval", "merge_review_replies.py")
        rec = os.path.join(self.tmp, "reviews.json")
        with open(rec, "w") as f:
            f.write("[]")

        def run(dump):
            p, result, _ = self.run_replay("--max-attempts", "2", "--review", "0,1",
                                           "--review-recording", rec, "--dump-missing", dump)
            return p, result

        def requests(dump):
            out = {}
            for n in sorted(os.listdir(dump)):
                if n.endswith(".request.txt"):
                    with open(os.path.join(dump, n), encoding="utf-8", newline="") as f:
                        out[n] = f.read()
            return out

        def answer_and_merge(dump, reply_for):
            for name, text in requests(dump).items():
                with open(os.path.join(dump, name.replace(".request.", ".response.")), "w") as f:
                    f.write(reply_for(text))
            m = subprocess.run(["/usr/bin/python3", merge, rec, dump], capture_output=True, text=True)
            self.assertEqual(m.returncode, 0, m.stderr)

        accept = json.dumps({"is_acceptable": True, "should_refine": False, "issues": [], "reasoning": "fine"})
        reject = json.dumps({"is_acceptable": False, "should_refine": True,
                             "issues": ["ASC gives the customer with the fewest orders"], "reasoning": "fewest"})

        # Round 1: every answer that ran is reviewed; none has a reply.
        d1 = os.path.join(self.tmp, "q1")
        p, result = run(d1)
        first = requests(d1)
        self.assertEqual(len(first), 4, p.stdout)  # q1, q2 (after its repair), q3, q4
        for text in first.values():
            self.assertTrue(text.startswith("=== system ===\n"), text[:80])
            self.assertIn("\n\n=== user ===\n", text)
            self.assertNotIn("=== assistant ===", text)
        on = next(r for r in result["runs"] if r["name"].endswith(" review on"))
        qs = {q["id"]: q for q in on["questions"]}
        self.assertFalse(qs["q4"]["final_ok"])  # unreviewed: the wrong answer stands
        self.assertEqual(result["review"]["review on"]["all"]["review_missing"], 4)
        self.assertIn("4 without a reply, 4 newly written", p.stdout)
        run(d1)  # asked again: nothing new is written
        self.assertEqual(len(requests(d1)), 4)

        answer_and_merge(d1, lambda t: reject if "most orders" in t else accept)
        # Round 2: q4 not accepted, so its correction is the one missing request.
        d2 = os.path.join(self.tmp, "q2")
        p, result = run(d2)
        second = list(requests(d2).values())
        self.assertEqual(len(second), 1, p.stdout)
        self.assertIn("=== assistant ===", second[0])
        self.assertIn("fewest orders", second[0])
        on = next(r for r in result["runs"] if r["name"].endswith(" review on"))
        q4 = next(q for q in on["questions"] if q["id"] == "q4")
        self.assertEqual(q4["review"], "not accepted", json.dumps(q4, indent=1)[:3000])
        self.assertLess(q4["confidence"], 50)

        answer_and_merge(d2, lambda t: "```sql\n" + MOST + "\n```")
        # Round 3: the corrected answer's review.
        d3 = os.path.join(self.tmp, "q3")
        run(d3)
        third = list(requests(d3).values())
        self.assertEqual(len(third), 1)
        self.assertIn("DESC", third[0])
        self.assertNotIn("=== assistant ===", third[0])

        answer_and_merge(d3, lambda t: accept)
        d4 = os.path.join(self.tmp, "q4")
        p, result = run(d4)
        self.assertEqual(requests(d4), {})
        on = result["review"]["review on"]["all"]
        off = result["review"]["review off"]["all"]
        self.assertEqual((on["wrong"], on["caught"], on["fixed"], on["replaced"], on["review_missing"]),
                         (1, 1, 1, 0, 0))
        self.assertEqual((off["wrong"], off["fixed"]), (1, 0))
        self.assertGreater(on["llm_calls_per_question"], off["llm_calls_per_question"])
        self.assertRegex(p.stdout, r"review on\s+all\s+4\s+1\s+1 \(100%\)\s+1\s+2\s+0 \(0%\)\s+0\s")

    def test_other_files_served_as_independent_samples(self):
        """--samples: the first prompt's n choices are the prediction's SQL,
        then each sample file's SQL for the same question."""
        other = os.path.join(self.tmp, "other.jsonl")
        with open(other, "w") as f:
            f.write(json.dumps({"db_id": "shop", "question": "How many customers are there?",
                                "pred_sql": "SELECT count(*) + 1 FROM customers"}) + "\n")
        _, result, _ = self.run_replay("--max-attempts", "1", "--samples", other, "--set", "samples=2")
        run = result["runs"][0]
        self.assertTrue(run["name"].endswith("+samples"), run["name"])
        q1 = next(q for q in run["questions"] if q["id"] == "q1")
        samples = q1["samples"]
        self.assertEqual(samples["asked"], 2, samples)
        self.assertEqual(samples["samples"][1]["sql"], "SELECT count(*) + 1 FROM customers")
        self.assertEqual(samples["agreeing"], 1, samples)
        self.assertEqual(q1["llm_calls"], 1)  # one request for both choices
        p = run_eval(["--data", self.data, "--samples", other])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--samples needs --replay", p.stderr)


class LiveProviderTest(unittest.TestCase):
    """Without --replay, the configured provider answers: here the scripted model."""

    def test_scripted_model_through_the_configured_provider(self):
        tmp = tempfile.mkdtemp(prefix="qp-eval-live-")
        data = os.path.join(tmp, "shopset")
        os.makedirs(data)
        harness.make_shop_db(data, "shop.sqlite")
        with open(os.path.join(data, "questions.jsonl"), "w") as f:
            f.writelines(json.dumps(q) + "\n" for q in QUESTIONS[:2])
            # Refused before any run: scored wrong, and no other run is
            # mistaken for it.
            f.write(json.dumps({"id": "blank", "db_id": "shop", "question": "   ",
                                "gold_sql": "SELECT 1"}) + "\n")
        llm = harness.ScriptedLLM({"rules": [
            {"match": "How many customers", "replies": [harness.sql_reply("SELECT count(*) FROM customers")]},
            {"match": "Canada", "replies": [harness.sql_reply(CANADA.replace("c.country", "c.land")),
                                            harness.sql_reply(CANADA)]},
        ]})
        try:
            out_json = os.path.join(tmp, "out.json")
            p = run_eval(["--data", data, "--json", out_json, "--quiet"], env=llm.env())
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(out_json) as f:
                run = json.load(f)["runs"][0]
            s = run["summary"]
            self.assertEqual(s["provider"], "openai scripted-model")
            self.assertEqual((s["questions"], s["first_ok"], s["final_ok"], s["corrected"]), (3, 1, 2, 1))
            blank = run["questions"][2]
            self.assertIn("the question is empty", blank["error"])
            self.assertEqual((blank["status"], blank["attempts"], blank["attempt_scores"]), ("", 0, []))
            self.assertEqual(s["by_status"], {"no_run": 1, "ok": 2})
            self.assertFalse(s["tokens_estimated"])
            self.assertEqual(len(llm.log()), 3)  # one call, then one call and a correction
        finally:
            llm.close()


@unittest.skipUnless(os.path.isdir(DATASETS),
                     "../shared/datasets is not here (it is in CI); skipping the Spider/BIRD replay")
class SharedDatasetsTest(unittest.TestCase):
    """docs/measure.md's command over the real questions and published predictions."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qp-eval-shared-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_readme_command(self):
        digests = {p: harness.file_digest(p) for p in (
            os.path.join(DATASETS, "bird", "superhero.sqlite"),
            os.path.join(DATASETS, "spider", "orchestra.sqlite"))}
        env = dict(os.environ, QP_SKIP_BUILD="1", BUILD_DIR=harness.BUILD_DIR, QP_EVAL_DATA=DATASETS)
        p = subprocess.run([os.path.join(harness.SOURCE_DIR, "scripts", "eval.sh"), "--quiet"],
                           capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for path, digest in digests.items():
            self.assertEqual(harness.file_digest(path), digest, path + " changed")
        with open(os.path.join(harness.BUILD_DIR, "eval-results", "results.json")) as f:
            results = json.load(f)["runs"]
        runs = {r["name"]: r["summary"] for r in results}
        # Performance warnings: the datasets' tables are small, so none fires;
        # and every run's time is accounted for by its nodes.
        for r in results:
            for q in r["questions"]:
                if not q["status"]:
                    continue  # no run was recorded
                self.assertEqual(q["advice"], "", (r["name"], q["id"]))
                self.assertAlmostEqual(q["node_ms_sum"], q["duration_ms"], delta=0.05,
                                       msg=(r["name"], q["id"]))
        files = sorted(f[:-6] for f in os.listdir(os.path.join(DATASETS, "predictions")) if f.endswith(".jsonl"))
        self.assertEqual(sorted(runs), sorted("%s x%d" % (f, m) for f in files for m in (1, 3)))
        for name, s in runs.items():
            self.assertEqual(s["rows_inconsistent"], 0, name)
            self.assertEqual(s["gold_failed"], 0, name)
            self.assertGreaterEqual(s["questions"], 40, name)
            # No right first answer ends wrong: reflection sends none back here.
            self.assertEqual(s["mis_repairs"], 0, name)
            self.assertIn(re.escape(name), re.escape(p.stdout))
        # The datasets' README: GPT-4o systems get about 99 of 124 BIRD questions right.
        gpt4o = runs["MAC-SQL_BIRD_GPT-4o x1"]
        self.assertEqual((gpt4o["questions"], gpt4o["first_ok"]), (124, 99))
        for f in files:
            self.assertGreaterEqual(runs[f + " x3"]["final_ok"], runs[f + " x1"]["final_ok"], f)
            self.assertEqual(runs[f + " x3"]["first_ok"], runs[f + " x1"]["first_ok"], f)
        self.assertTrue(os.path.getsize(os.path.join(harness.BUILD_DIR, "eval-results", "chart.svg")) > 1000)
        # Reflection on the first attempts that ran, all files together (issue figures).
        x1 = [runs[f + " x1"] for f in files]
        total = lambda key: sum(s[key] for s in x1)
        self.assertEqual(total("first_ran_wrong"), 127)
        # 38 (before hint_column_unused, below): a zero or an empty result is sent back only when grounding finds a
        # compared value that does not occur (43 when zero and empty results
        # were critical by themselves, a rule that sends back right answers
        # such as "How many orchestras were founded after 2050?"); ties of
        # `= (SELECT MAX(...))` are the answer when the subquery filters by the
        # same values as the outer query, however many they are (41 while more
        # than 20 ties were sent back, a rule that sends back the 40 heroes
        # tied for the highest durability). 42 with hint_column_unused: four
        # answers that never read the column a "Hint:" clause names ("Name of
        # superheroes refers to superhero_name", answered with full_name).
        # 39 once the findings that read the question's words (too_many_rows,
        # foreign_key_ids unless the question names what the ids stand for)
        # and those the data may explain (all_null, value_missing) became
        # notes: on Spider train's gold they sent back 5.4% of right answers.
        self.assertEqual(total("flagged_wrong"), 39)
        self.assertEqual(total("flagged_right"), 0)
        self.assertEqual(total("first_ran_right"), 572)
        self.assertEqual((total("not_found_gold_value"), total("literals_not_found")), (12, 13))
        # Every question naming a value the gold SQL uses gets it as a hint.
        self.assertEqual(total("questions_hinted"), total("questions_naming_values"))
        self.assertEqual(total("questions_naming_values"), 364)
        self.assertIn("reflection on first attempts that ran", p.stdout)
        # The published systems' own repairs, triggered by result checks, lift CHESS.
        self.assertGreater(runs["CHESS_BIRD_GPT-3.5-Turbo x3"]["corrected"], 20)

    def test_schema_linking_on_the_combined_database(self):
        p = subprocess.run([os.path.join(harness.BUILD_DIR, "querypilot-eval"), "linking", "--data", DEV_SETS,
                            "--budgets", "1000,4000"], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("314 tables (14 from the datasets, 300 distractors)", p.stdout)
        rows = {int(line.split()[0]): line.split() for line in p.stdout.splitlines()
                if line.strip()[:1].isdigit()}
        self.assertEqual(sorted(rows), [1000, 4000])
        budget, questions, tokens, cut, kept = rows[4000][:5]
        self.assertEqual(kept, "%s/%s" % (questions, questions))  # every gold table kept
        self.assertGreater(float(cut.rstrip("%")), 60.0)

    def test_linking_ranks_on_wide_schemas_sharing_column_names(self):
        """50 generated tables sharing status, amount, name...: each question's
        table is in the prompt, the value 'paid' (or another status) is hinted
        in that table's column, and the prompt is at most half the schema."""
        p = subprocess.run([os.path.join(harness.BUILD_DIR, "querypilot-eval"), "linking", "--wide", "50",
                            "--budgets", "2000"], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        row = [c.strip() for c in next(l for l in p.stdout.splitlines() if l.startswith("| 50 |")).split("|")[1:-1]]
        self.assertEqual(row[3], "50/50 100.0%", p.stdout)  # gold tables kept
        self.assertEqual(row[4], "50/50 100.0%", p.stdout)  # hinted in the question's table
        self.assertEqual(row[8], "50/50 100.0%", p.stdout)  # prompts within half the schema

    def test_linking_with_other_databases_attached(self):
        """Spider train's databases of half B (not tuned on), each with nine
        others attached: gold tables in the prompt for at least 98%, no hint
        lost to the distractors, and the median question's prompt at most 1.3
        times its prompt alone."""
        train = os.path.join(DATASETS, "spider_train")
        if not os.path.isdir(train):
            self.skipTest("../shared/datasets/spider_train is not here")
        p = subprocess.run([os.path.join(harness.BUILD_DIR, "querypilot-eval"), "linking", "--data", train,
                            "--attach", "9", "--half", "B", "--budgets", "2000"],
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rows = {}
        for line in p.stdout.splitlines():
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if len(cells) > 2 and cells[0] == "2000":
                rows[cells[1]] = cells
        share = lambda cell: int(cell.split()[0].split("/")[0]) / int(cell.split()[0].split("/")[1])
        self.assertGreaterEqual(share(rows["attached"][3]), 0.98, p.stdout)
        self.assertEqual(rows["attached"][4], rows["alone"][4], p.stdout)
        self.assertGreaterEqual(share(rows["attached"][5]), 0.95, p.stdout)
        self.assertLessEqual(float(rows["attached"][8]), 1.3, p.stdout)

    def test_gold_of_many_databases_is_not_sent_back(self):
        """Spider train's gold queries, a fixed sample of 1,500 over its 138
        databases, replayed as the model's answers: every one is right, so
        every one sent back is a false alarm. At most 0.5%."""
        train = os.path.join(DATASETS, "spider_train")
        if not os.path.isdir(train):
            self.skipTest("../shared/datasets/spider_train is not here")
        p = subprocess.run([os.path.join(harness.BUILD_DIR, "querypilot-eval"), "gold", "--data", train,
                            "--sample", "1500", "--show", "50"], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        m = re.search(r"^sent back: (\d+) of (\d+)", p.stdout, re.M)
        self.assertIsNotNone(m, p.stdout)
        sent_back, ran = int(m.group(1)), int(m.group(2))
        self.assertGreaterEqual(ran, 1000, p.stdout)
        self.assertLessEqual(sent_back, ran * 0.005, p.stdout)

    def _pooled(self, runs):
        """first_ok, final_ok and the confidence bands (answers, right by the
        dataset's comparison and as a user compares, the confidence stated in
        all), added over runs."""
        first = sum(r["summary"]["first_ok"] for r in runs)
        final = sum(r["summary"]["final_ok"] for r in runs)
        n = sum(r["summary"]["questions"] for r in runs)
        bands = {}
        for r in runs:
            for band, c in r["summary"]["by_confidence"].items():
                b = bands.setdefault(band, {"n": 0, "final_ok": 0, "user_ok": 0, "stated": 0.0})
                b["n"] += c["n"]
                b["final_ok"] += c["final_ok"]
                b["user_ok"] += c["user_ok"]
                b["stated"] += c["mean_confidence"] * c["n"]
        return first, final, n, bands

    def test_candidates_with_six_systems_answers(self):
        """Spider dev6: each system's SQL is the first reading and the next two
        systems' the alternatives (docs/confidence.md). The answer
        returned is right more often than the first reading, and answers at
        confidence 80 or more are right at least 90% of the time."""
        dev6 = os.path.join(DATASETS, "spider_dev6")
        if not os.path.isdir(dev6):
            self.skipTest("../shared/datasets/spider_dev6 is not here")
        out = os.path.join(self.tmp, "dev6.json")
        p = subprocess.run([EVAL, "--data", dev6, "--replay", os.path.join(dev6, "predictions"),
                            "--alternatives", "2", "--max-attempts", "3", "--quiet", "--json", out],
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            runs = json.load(f)["runs"]
        self.assertEqual(len(runs), 6)
        first, final, n, bands = self._pooled(runs)
        self.assertEqual(n, 6 * 198)
        self.assertGreaterEqual(final - first, 0.035 * n, p.stdout)
        self.assertGreaterEqual(bands["80-100"]["n"], n // 2, p.stdout)
        self.assertGreaterEqual(bands["80-100"]["final_ok"], 0.9 * bands["80-100"]["n"], p.stdout)

    def _recorded(self, data, samples):
        """Replays the recorded live replies (eval/recordings) on `data`, one
        run per reply; the pooled first, returned and per-band figures."""
        recording = os.path.join(harness.SOURCE_DIR, "eval", "recordings", "first-prompt-2026-11.json")
        out = os.path.join(self.tmp, f"recorded-{samples}.json")
        p = subprocess.run([EVAL, "--data", data, "--recording", recording, "--max-attempts", "1",
                            "--set", f"samples={samples}", "--quiet", "--json", out],
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("prompt's rules differ", p.stdout)
        with open(out) as f:
            runs = json.load(f)["runs"]
        self.assertEqual(len(runs), 3)
        return (*self._pooled(runs), p.stdout)

    def test_the_confidence_holds_on_recorded_live_replies_it_was_not_set_on(self):
        """Recorded live replies to the first prompt, on Spider train's half B
        (the weights were set on spider_dev6 and superhero): in every band of 10
        answers or more the mean stated confidence is within 15 points of how
        often its answers were right as a user compares; the 80-100 band holds
        at least 40% of the answers and is right at least 90% of the time; the
        answer returned is right at least as often as the first reading. With
        one reply, and with three independent samples."""
        train = os.path.join(DATASETS, "spider_train")
        if not os.path.isdir(train):
            self.skipTest("../shared/datasets/spider_train is not here")
        for samples in (1, 3):
            first, final, n, bands, out = self._recorded(train, samples)
            self.assertGreaterEqual(n, 3 * 128, out)
            self.assertGreaterEqual(final, first, out)
            for name, b in bands.items():
                if b["n"] < 10:
                    continue
                right = 100.0 * b["user_ok"] / b["n"]
                stated = b["stated"] / b["n"]
                self.assertLessEqual(abs(stated - right), 15.0, (samples, name, b, out))
            top = bands.get("80-100", {"n": 0, "user_ok": 0})
            self.assertGreaterEqual(top["n"], 0.4 * n, (samples, out))
            self.assertGreaterEqual(top["user_ok"], 0.9 * top["n"], (samples, out))

    def test_the_review_on_recorded_replies(self):
        """The review's figures on the recorded replies of a model to QueryPilot's
        own review requests (eval/recordings/review): published systems' silently
        wrong and right answers (spider_dev6, BIRD) and Spider train's gold and
        mutants, per half. The recording answers every request the current
        review prompt makes (a changed prompt fails here: record again), and,
        with each of its two independent replies, the review catches at least 80%
        of the wrong answers that ran, flags at most 10% of the right ones,
        replaces at most 3% of them, and every confidence band of 10 answers or
        more is right within 15 points of its range."""
        review = os.path.join(harness.SOURCE_DIR, "eval", "recordings", "review")
        sets = [os.path.join(DATASETS, d) for d in ("spider_dev6", "bird", "spider_train")]
        if not all(os.path.isdir(d) for d in sets):
            self.skipTest("../shared/datasets/{spider_dev6,bird,spider_train} are not all here")
        for reply in (1, 2):
            out = os.path.join(self.tmp, "review-%d.json" % reply)
            p = subprocess.run([EVAL, "--data", ",".join(sets), "--replay", review, "--max-attempts", "2",
                                "--review", "0,1", "--review-recording",
                                os.path.join(review, "review-replies.json"), "--review-reply", str(reply),
                                "--quiet", "--json", out], capture_output=True, text=True, timeout=900)
            self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr)
            with open(out) as f:
                figures = json.load(f)["review"]
            on, off = figures["review on"]["all"], figures["review off"]["all"]
            self.assertEqual(on["review_missing"], 0, (reply, p.stdout[-2000:]))
            self.assertGreaterEqual(on["caught"], 0.8 * on["wrong"], (reply, on))
            self.assertLessEqual(on["flagged"], 0.1 * on["right"], (reply, on))
            self.assertLessEqual(on["replaced"], 0.03 * on["right"], (reply, on))
            self.assertGreater(on["caught"], off["caught"], (reply, on, off))
            for band, b in on["calibration"].items():
                if b["n"] < 10:
                    continue
                lo, hi = (int(x) for x in band.split("-"))
                right = 100.0 * b["right"] / b["n"]
                self.assertTrue(lo - 15 <= right <= hi + 15, (reply, band, b))

    def test_candidates_of_gold_and_its_mutants(self):
        """Spider train's held-out half: gold with an agreeing rewrite, gold with
        two mutants, a mutant with gold and another mutant, as one reply's
        readings. Agreement never costs gold its answer; the majority and the
        findings bring gold back from behind a mutant; the surest answers are
        right."""
        train = os.path.join(DATASETS, "spider_train")
        if not os.path.isdir(train):
            self.skipTest("../shared/datasets/spider_train is not here")
        out = os.path.join(self.tmp, "mutants.json")
        p = subprocess.run([EVAL, "mutants", "--data", train, "--half", "B", "--sample", "1200",
                            "--candidates", "--json", out], capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            runs = {r["name"]: r for r in json.load(f)["runs"]}
        self.assertEqual(sorted(runs), ["gold+agreeing", "gold+mutants", "mutant+gold"])
        agreeing = runs["gold+agreeing"]["summary"]
        self.assertGreaterEqual(agreeing["questions"], 1000)
        self.assertEqual(agreeing["final_ok"], agreeing["questions"], p.stdout)
        self.assertLessEqual(agreeing["flagged_right"], 0.005 * agreeing["questions"], p.stdout)
        with_mutants = runs["gold+mutants"]["summary"]
        self.assertGreaterEqual(with_mutants["final_ok"], 0.9 * with_mutants["questions"], p.stdout)
        mutant_first = runs["mutant+gold"]["summary"]
        self.assertGreaterEqual(mutant_first["final_ok"] - mutant_first["first_ok"],
                                0.2 * mutant_first["questions"], p.stdout)
        # The surest answers are right where gold is the first reading. With a
        # mutant first, the readings disagree on purpose by construction: the
        # weights are set on live replies, where a model's own alternatives
        # disagreeing was no sign of a wrong answer (docs/confidence.md), so
        # that run's bands are not held to it.
        for name in ("gold+agreeing", "gold+mutants"):
            top = runs[name]["summary"]["by_confidence"].get("80-100", {"n": 0, "final_ok": 0})
            self.assertGreaterEqual(top["final_ok"], 0.9 * top["n"], (name, p.stdout))

    def test_few_shot_memory_finds_the_question_asked_in_other_words(self):
        p = subprocess.run([os.path.join(harness.BUILD_DIR, "querypilot-eval"), "examples", "--data", DEV_SETS],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()[1:]}
        # Spider words most gold queries twice: all 40 questions have a twin.
        self.assertEqual(rows["spider"][1:3], ["40", "40"])
        self.assertGreaterEqual(float(rows["spider"][4].rstrip("%")), 90.0)  # twin among the 3 shown


if __name__ == "__main__":
    unittest.main()
