"""The self-correction loop, end to end through the real sqlite3 shell."""
import json
import unittest

from harness import LLMTestCase, ShellError, sql_reply

COUNTRY_SQL_WRONG_TABLE = (
    "SELECT c.country, COUNT(*) AS order_count FROM orders o JOIN customer c ON c.id = o.customer_id "
    "GROUP BY c.country ORDER BY order_count DESC, c.country")
COUNTRY_SQL = COUNTRY_SQL_WRONG_TABLE.replace("JOIN customer c", "JOIN customers c")
CATEGORY_SQL_WRONG_COLUMN = (
    "SELECT p.category_name, ROUND(SUM(oi.quantity * oi.unit_price), 2) AS revenue FROM order_items oi "
    "JOIN products p ON p.id = oi.product_id GROUP BY p.category_name ORDER BY revenue DESC")
CATEGORY_SQL = CATEGORY_SQL_WRONG_COLUMN.replace("category_name", "category")

EXPECTED_COUNTRIES = [
    {"country": "Canada", "order_count": 18}, {"country": "United Kingdom", "order_count": 17},
    {"country": "United States", "order_count": 14}, {"country": "France", "order_count": 13},
]
EXPECTED_CATEGORIES = [
    {"category": "Outdoor", "revenue": 10839.0}, {"category": "Electronics", "revenue": 10006.0},
    {"category": "Home", "revenue": 5730.0}, {"category": "Kitchen", "revenue": 3440.7},
]


def script(match, *replies):
    return {"rules": [{"match": match, "replies": list(replies)}]}


def rows_of(ask_result):
    return [json.loads(r["row"]) for r in ask_result]


class RepairTest(LLMTestCase):
    def check_repair(self, provider):
        res = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT id, status, attempts, sql, llm_calls FROM agent_runs",
            "SELECT attempt, error_type, error, hint, strategy, diff FROM agent_attempts ORDER BY attempt",
        ], script("each country", sql_reply(COUNTRY_SQL_WRONG_TABLE), sql_reply(COUNTRY_SQL)), provider)
        answer, runs, attempts = res
        self.assertNotIsInstance(answer, ShellError, answer)
        self.assertEqual(rows_of(answer)[:4], EXPECTED_COUNTRIES)
        self.assertEqual(len(rows_of(answer)), 11)
        self.assertEqual(runs, [{"id": 1, "status": "ok", "attempts": 2, "sql": COUNTRY_SQL, "llm_calls": 3}])  # and the review
        self.assertEqual(attempts[0]["error_type"], "table_not_found")
        self.assertEqual(attempts[0]["error"], "no such table: customer")
        self.assertIn("did you mean customers?", attempts[0]["hint"])
        self.assertEqual(attempts[0]["strategy"], "schema")
        self.assertIsNone(attempts[1]["error_type"])
        self.assertEqual(attempts[1]["diff"], "'customer' -> 'customers'")
        # The second request carries the database's error text and the hint.
        log = self.llm.log(reviews=False)
        self.assertEqual(len(log), 2)
        last_user = log[1]["body"]["messages"][-1]["content"]
        self.assertIn("no such table: customer", last_user)
        self.assertIn("did you mean customers?", last_user)
        return log

    def test_wrong_table_repaired_on_attempt_2_openai(self):
        log = self.check_repair("openai")
        self.assertEqual(log[0]["path"], "/v1/chat/completions")
        self.assertEqual(log[0]["body"]["messages"][0]["role"], "system")

    def test_wrong_table_repaired_on_attempt_2_anthropic(self):
        log = self.check_repair("anthropic")
        self.assertEqual(log[0]["path"], "/v1/messages")
        self.assertEqual(log[0]["anthropic_version"], "2023-06-01")
        self.assertIn("CREATE TABLE customers", log[0]["body"]["system"])
        # Anthropic has no system role in messages; the conversation alternates.
        roles = [m["role"] for m in log[1]["body"]["messages"]]
        self.assertEqual(roles, ["user", "assistant", "user"])

    def test_wrong_column_repaired_on_attempt_2(self):
        answer, runs, attempts = self.session([
            "SELECT * FROM ask('What is the revenue per product category?')",
            "SELECT status, attempts FROM agent_runs",
            "SELECT attempt, error_type, error, hint, diff FROM agent_attempts ORDER BY attempt",
        ], script("revenue per product", CATEGORY_SQL_WRONG_COLUMN, sql_reply(CATEGORY_SQL)))
        self.assertEqual(rows_of(answer), EXPECTED_CATEGORIES)
        self.assertEqual(runs, [{"status": "ok", "attempts": 2}])
        self.assertEqual(attempts[0]["error_type"], "column_not_found")
        self.assertEqual(attempts[0]["error"], "no such column: p.category_name")
        self.assertIn("p is products", attempts[0]["hint"])
        self.assertIn("did you mean category", attempts[0]["hint"])
        self.assertEqual(attempts[1]["diff"], "'category_name' -> 'category' (2 places)")
        self.assertIn("no such column: p.category_name", self.llm.log()[1]["body"]["messages"][-1]["content"])

    def test_aggregation_strategy(self):
        bad = ("SELECT c.name, COUNT(o.id) AS orders_placed FROM customers c JOIN orders o ON o.customer_id = c.id "
               "WHERE COUNT(o.id) > 10 ORDER BY orders_placed DESC")
        good = ("SELECT c.name, COUNT(o.id) AS orders_placed FROM customers c JOIN orders o ON o.customer_id = c.id "
                "GROUP BY c.id HAVING COUNT(o.id) > 10 ORDER BY orders_placed DESC")
        answer, attempts = self.session([
            "SELECT * FROM ask('Which customers placed more than 10 orders?')",
            "SELECT error_type, strategy FROM agent_attempts ORDER BY attempt",
        ], script("more than 10 orders", json.dumps({"sql": bad}), json.dumps({"sql": good})))
        self.assertEqual(rows_of(answer), [
            {"name": "Grace Thompson", "orders_placed": 18}, {"name": "Ethan Walker", "orders_placed": 14},
            {"name": "Isla Campbell", "orders_placed": 12}])
        self.assertEqual(attempts[0], {"error_type": "aggregation_error", "strategy": "aggregation"})
        correction = self.llm.log()[1]["body"]["messages"][-1]["content"]
        self.assertIn("Keep every aggregate exactly as it is; add only the missing GROUP BY columns", correction)

    def test_unchanged_sql_stops_the_run(self):
        answer, runs, attempts = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT status, attempts, error_type FROM agent_runs",
            "SELECT attempt, error_type FROM agent_attempts ORDER BY attempt",
        ], script("each country", sql_reply(COUNTRY_SQL_WRONG_TABLE),
                  # the same query again, only differently formatted and commented
                  "```sql\n-- retry\nselect c.country,   count(*) as order_count from orders o join customer c "
                  "on c.id = o.customer_id group by c.country order by order_count desc, c.country;\n```"))
        self.assertIsInstance(answer, ShellError)
        self.assertIn("repeated the query of attempt 1", answer)
        # The run's error is its first real cause; the guard that stopped it follows.
        self.assertIn("(table_not_found): no such table:", answer)
        self.assertEqual(runs, [{"status": "failed", "attempts": 2, "error_type": "table_not_found"}])
        self.assertEqual(attempts, [{"attempt": 1, "error_type": "table_not_found"},
                                    {"attempt": 2, "error_type": "unchanged_sql"}])
        self.assertEqual(len(self.llm.log()), 2)

    def test_quoting_a_keyword_named_column_is_a_change(self):
        # s.order reads ORDER, the keyword; s."order" the column. Valid SQL,
        # not a repeat of the first attempt.
        _, _, answer, runs, attempts = self.session([
            'CREATE TABLE steps(id INTEGER PRIMARY KEY, "order" INTEGER, label TEXT)',
            "INSERT INTO steps VALUES (1, 2, 'second'), (2, 1, 'first')",
            "SELECT * FROM ask('List the step labels by their order')",
            "SELECT status, attempts, error_type FROM agent_runs",
            "SELECT attempt, error_type FROM agent_attempts ORDER BY attempt",
        ], script("step labels", sql_reply("SELECT s.label FROM steps s ORDER BY s.order"),
                  sql_reply('SELECT s.label FROM steps s ORDER BY s."order"')))
        self.assertNotIsInstance(answer, ShellError, answer)
        self.assertEqual(rows_of(answer), [{"label": "first"}, {"label": "second"}])
        self.assertEqual(runs, [{"status": "ok", "attempts": 2, "error_type": None}])
        self.assertEqual(attempts[0]["attempt"], 1)
        self.assertNotEqual(attempts[0]["error_type"], None)
        self.assertEqual(attempts[1], {"attempt": 2, "error_type": None})
        self.assertEqual(len(self.llm.log(reviews=False)), 2)

    def test_max_attempts_bounds_the_run(self):
        wrong = ["SELECT nope_%d FROM customers" % i for i in range(10)]
        setting, answer, runs = self.session([
            "SELECT agent_config('max_attempts', 4) AS v",
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT status, attempts, error_type, llm_calls FROM agent_runs",
        ], script("each country", *wrong))
        self.assertEqual(setting, [{"v": 4}])  # an integer setting reads back as an integer
        self.assertIsInstance(answer, ShellError)
        self.assertIn("no working SQL after 4 attempts", answer)
        self.assertIn("column_not_found", answer)
        self.assertEqual(runs, [{"status": "failed", "attempts": 4, "error_type": "column_not_found", "llm_calls": 4}])
        self.assertEqual(len(self.llm.log()), 4)

    def test_default_max_attempts_is_3(self):
        wrong = ["SELECT nope_%d FROM customers" % i for i in range(10)]
        answer, runs = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT status, attempts FROM agent_runs",
        ], script("each country", *wrong))
        self.assertIsInstance(answer, ShellError)
        self.assertEqual(runs, [{"status": "failed", "attempts": 3}])
        self.assertEqual(len(self.llm.log()), 3)

    def test_first_attempt_success_costs_one_call_and_its_review(self):
        answer, runs = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT status, attempts, llm_calls, prompt_tokens > 0 AS counted, completion_tokens > 0 AS counted2 FROM agent_runs",
        ], script("each country", sql_reply(COUNTRY_SQL)))
        self.assertEqual(rows_of(answer)[:4], EXPECTED_COUNTRIES)
        self.assertEqual(runs, [{"status": "ok", "attempts": 1, "llm_calls": 2, "counted": 1, "counted2": 1}])
        self.assertEqual(len(self.llm.log(reviews=False)), 1)

    def test_one_run_per_question_within_a_statement(self):
        res = self.session([
            # ask() as the inner loop of a join: SQLite re-scans it for each outer row.
            "SELECT count(*) AS n FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3) AS v, "
            "ask('How many orders came from each country?')",
            # The same question twice in one statement.
            "SELECT count(*) AS n FROM ask('How many orders came from each country?') a, "
            "ask('How many orders came from each country?') b",
            "SELECT count(*) AS runs FROM agent_runs",
        ], script("each country", sql_reply(COUNTRY_SQL)), QUERYPILOT_ANSWER_CACHE="0")
        self.assertEqual(res[0], [{"n": 33}])
        self.assertEqual(res[1], [{"n": 121}])
        self.assertEqual(res[2], [{"runs": 2}])
        self.assertEqual(len(self.llm.log(reviews=False)), 2)

    def test_each_statement_asks_again(self):
        # Identical statements one after the other (the shell may even reuse
        # the same memory for them): each is a new run that sees the data as
        # it is now, never the previous statement's answer.
        q = "SELECT count(*) AS n FROM ask('How many orders came from each country?')"
        res = self.session([
            q,
            q,
            # A correlated subquery re-runs ask() per outer row: still one run.
            "SELECT (SELECT count(*) FROM ask('How many orders came from each country?')) AS n "
            "FROM (SELECT 1 UNION ALL SELECT 2)",
            "SELECT count(*) AS runs FROM agent_runs",
        ], script("each country", sql_reply(COUNTRY_SQL)), QUERYPILOT_ANSWER_CACHE="0")
        self.assertEqual(res[0], [{"n": 11}])
        self.assertEqual(res[1], [{"n": 11}])
        self.assertEqual(res[2], [{"n": 11}, {"n": 11}])
        self.assertEqual(res[3], [{"runs": 3}])
        self.assertEqual(len(self.llm.log(reviews=False)), 3)

    def test_hidden_columns_and_json_access(self):
        res = self.session([
            "SELECT run_id, sql, row ->> '$.country' AS country FROM ask('How many orders came from each country?') LIMIT 2",
            "SELECT ask_sql('How many orders came from each country?') AS sql",
            "SELECT rows FROM agent_runs WHERE id = 1",
        ], script("each country", sql_reply(COUNTRY_SQL)))
        self.assertEqual(res[0], [{"run_id": 1, "sql": COUNTRY_SQL, "country": "Canada"},
                                  {"run_id": 1, "sql": COUNTRY_SQL, "country": "United Kingdom"}])
        self.assertEqual(res[1], [{"sql": COUNTRY_SQL}])

    def test_no_sql_in_reply_is_fed_back(self):
        answer, attempts = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT attempt, error_type FROM agent_attempts ORDER BY attempt",
        ], script("each country", "I am not sure which tables you mean.", sql_reply(COUNTRY_SQL)))
        self.assertEqual(rows_of(answer)[:4], EXPECTED_COUNTRIES)
        self.assertEqual(attempts, [{"attempt": 1, "error_type": "no_sql"}, {"attempt": 2, "error_type": None}])



class ReviewTest(LLMTestCase):
    """The model's review (review 1) in the sqlite3 shell: what it says is in
    agent_runs.review, agent_attempts.reflection and agent_metrics."""

    REVIEW = "The tables the query reads"  # only a review request holds this line

    @staticmethod
    def review_reply(acceptable, issue, reasoning):
        return json.dumps({"is_acceptable": acceptable, "should_refine": not acceptable,
                           "issues": [] if acceptable else [issue], "reasoning": reasoning})

    def test_a_correction_the_review_does_not_accept_leaves_the_first_answer(self):
        question = "How many orders came from each country?"
        rules = {"rules": [
            {"match": self.REVIEW, "review": True, "replies": [self.review_reply(False, "only two countries were asked for",
                                                                 "the question wants the top two"),
                                               self.review_reply(False, "it drops countries", "still wrong")]},
            {"match": "each country", "replies": [sql_reply(COUNTRY_SQL), sql_reply(COUNTRY_SQL + " LIMIT 2")]}]}
        answer, runs, attempts, metrics = self.session([
            "SELECT * FROM ask('%s')" % question,
            "SELECT review, attempts, answer_attempt, llm_calls, confidence < 50 AS low, confidence_reason, "
            "sql FROM agent_runs",
            "SELECT attempt, strategy, reflection ->> '$.is_acceptable' AS rules_accept, "
            "reflection ->> '$.review.source' AS source, reflection ->> '$.review.is_acceptable' AS review_accepts "
            "FROM agent_attempts ORDER BY attempt",
            "SELECT metric, value FROM agent_metrics WHERE metric LIKE 'review:%'",
        ], rules, QUERYPILOT_REVIEW="1")
        self.assertNotIsInstance(answer, ShellError, answer)
        # The first answer, whole: the correction the review did not accept replaced nothing.
        self.assertEqual(rows_of(answer)[:4], EXPECTED_COUNTRIES)
        self.assertEqual(len(rows_of(answer)), 11)
        self.assertEqual(len(runs), 1)
        run = runs[0]
        self.assertEqual((run["review"], run["attempts"], run["answer_attempt"], run["llm_calls"], run["low"],
                          run["sql"]), ("not accepted", 2, 1, 4, 1, COUNTRY_SQL))
        self.assertIn("the model's review did not accept it (the question wants the top two)",
                      run["confidence_reason"])
        self.assertEqual(attempts, [
            {"attempt": 1, "strategy": "review", "rules_accept": 1, "source": "review", "review_accepts": 0},
            {"attempt": 2, "strategy": None, "rules_accept": 1, "source": "review", "review_accepts": 0}])
        self.assertEqual(metrics, [{"metric": "review:not accepted", "value": 1}])
        # The review was shown the SQL and the first review_rows rows; the
        # correction was sent the review's issues.
        log = [r["body"]["messages"] for r in self.llm.log(reviews=True)]
        self.assertEqual(len(log), 4)
        shown = log[1][-1]["content"]
        self.assertIn(COUNTRY_SQL, shown)
        self.assertIn('"country":"Canada"', shown)
        self.assertIn("Its rows: 11", shown)
        self.assertIn("only two countries were asked for", log[2][-1]["content"])

    def test_an_accepted_review_keeps_the_answer_and_review_rows_0_sends_no_row(self):
        rules = {"rules": [
            {"match": self.REVIEW, "review": True, "replies": [self.review_reply(True, "", "it counts orders per country")]},
            {"match": "each country", "replies": [sql_reply(COUNTRY_SQL)]}]}
        answer, runs = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT review, attempts, llm_calls, confidence >= 50 AS sure FROM agent_runs",
        ], rules, QUERYPILOT_REVIEW_ROWS="0")
        self.assertEqual(rows_of(answer)[:4], EXPECTED_COUNTRIES)
        self.assertEqual(runs, [{"review": "accepted", "attempts": 1, "llm_calls": 2, "sure": 1}])
        shown = self.llm.log(reviews=True)[1]["body"]["messages"][-1]["content"]
        self.assertIn("Its rows: 11", shown)
        self.assertNotIn("Canada", shown)

    def test_an_unreadable_review_changes_nothing(self):
        rules = {"rules": [
            {"match": self.REVIEW, "review": True, "replies": ["Looks good to me!"]},
            {"match": "each country", "replies": [sql_reply(COUNTRY_SQL)]}]}
        answer, runs = self.session([
            "SELECT * FROM ask('How many orders came from each country?')",
            "SELECT review, status, attempts, llm_calls, confidence >= 50 AS sure FROM agent_runs",
        ], rules, QUERYPILOT_REVIEW="1")
        self.assertNotIsInstance(answer, ShellError, answer)
        self.assertEqual(len(rows_of(answer)), 11)
        self.assertEqual(runs, [{"review": "unreadable", "status": "ok", "attempts": 1, "llm_calls": 2, "sure": 1}])


class AnswerQualityTest(LLMTestCase):
    """Value hints, result checks with grounding, and schema pruning, through the shell."""

    def test_wrong_literal_is_grounded_and_corrected(self):
        wrong = "SELECT COUNT(*) AS n FROM customers WHERE country = 'france'"
        answer, runs, attempts = self.session([
            "SELECT * FROM ask('How many customers live in france?')",
            "SELECT status, attempts, answer_attempt, llm_calls FROM agent_runs",
            "SELECT attempt, strategy, reflection FROM agent_attempts ORDER BY attempt",
        ], script("customers live in", sql_reply(wrong), sql_reply(wrong.replace("'france'", "'France'"))))
        self.assertNotIsInstance(answer, ShellError, answer)
        self.assertEqual(rows_of(answer), [{"n": 2}])
        self.assertEqual(runs, [{"status": "ok", "attempts": 2, "answer_attempt": 2, "llm_calls": 3}])
        self.assertEqual(attempts[0]["strategy"], "rewrite")
        first = json.loads(attempts[0]["reflection"])
        self.assertTrue(first["should_refine"])
        # The zero itself is a warning: the literal that does not occur is what
        # sends it back.
        self.assertEqual([i["kind"] for i in first["issues"] if i["severity"] == "critical"],
                         ["value_not_found"])
        self.assertIn("zero_count", [i["kind"] for i in first["issues"]])
        grounded = [i for i in first["issues"] if i["kind"] == "value_not_found"][0]
        self.assertEqual((grounded["literal"], grounded["column"], grounded["values"]),
                         ("france", "customers.country", ["France"]))
        self.assertTrue(json.loads(attempts[1]["reflection"])["is_acceptable"])
        log = self.llm.log()
        # The first prompt already names the stored value...
        self.assertIn("- customers.country = 'France'", log[0]["body"]["messages"][-1]["content"])
        # ...and the correction says what is wrong and what the column holds.
        correction = log[1]["body"]["messages"][-1]["content"]
        self.assertIn("the query counted 0 rows", correction)
        self.assertIn("'france' does not occur in customers.country; it has 'France'", correction)

    def test_a_flagged_answer_the_model_stands_by_is_returned(self):
        # Sent back by a finding the data proves ('france' is stored as
        # 'France'); the model answers with the same query all the same.
        sql = "SELECT COUNT(*) AS n FROM customers WHERE country = 'france'"
        answer, runs, attempts, metrics = self.session([
            "SELECT * FROM ask('How many customers are there in france?')",
            "SELECT status, attempts, answer_attempt, error_type, stood_by, reflection ->> 'reasoning' AS why "
            "FROM agent_runs",
            "SELECT attempt, error_type, stood_by FROM agent_attempts ORDER BY attempt",
            "SELECT metric, value FROM agent_metrics WHERE metric IN ('stood_by', 'error:unchanged_sql')",
        ], script("there in france", sql_reply(sql)))
        self.assertEqual(rows_of(answer), [{"n": 0}])
        # Standing by an answer is recorded as such, not as an error.
        why = runs[0].pop("why")
        self.assertEqual(runs, [{"status": "ok", "attempts": 2, "answer_attempt": 1, "error_type": None,
                                 "stood_by": 1}])
        self.assertIn("the model stood by the query of attempt 1: its result is returned", why)
        self.assertEqual(attempts, [{"attempt": 1, "error_type": None, "stood_by": None},
                                    {"attempt": 2, "error_type": None, "stood_by": 1}])
        self.assertEqual(metrics, [{"metric": "stood_by", "value": 1}])

    def test_big_schema_is_pruned_and_widened_after_a_missing_column(self):
        bad = "SELECT name, SUM(quantity) AS units FROM products GROUP BY name ORDER BY units DESC LIMIT 3"
        good = ("SELECT p.name, SUM(oi.quantity) AS units FROM products p JOIN order_items oi "
                "ON oi.product_id = p.id GROUP BY p.name ORDER BY units DESC LIMIT 3")
        _, answer, runs = self.session([
            "SELECT agent_config('schema_budget_tokens', '60')",
            "SELECT * FROM ask('Which 3 products have the highest price?')",
            "SELECT status, attempts FROM agent_runs",
        ], script("highest price", sql_reply(bad), sql_reply(good)))
        self.assertNotIsInstance(answer, ShellError, answer)
        self.assertEqual(len(rows_of(answer)), 3)
        self.assertEqual(runs, [{"status": "ok", "attempts": 2}])
        log = self.llm.log()
        system = log[0]["body"]["messages"][0]["content"]
        self.assertIn("CREATE TABLE products", system)
        self.assertNotIn("CREATE TABLE customers", system)
        self.assertIn("more tables are not shown", system)
        correction = log[1]["body"]["messages"][-1]["content"]
        self.assertIn("no such column: quantity", correction)
        self.assertIn("Tables not shown before that may help:\nCREATE TABLE order_items", correction)

if __name__ == "__main__":
    unittest.main()
