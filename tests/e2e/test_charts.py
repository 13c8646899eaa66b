"""Charts of an answer (agent_chart, agent_chart_html), end to end: per shape,
the page agent_chart_html() wrote with the shell's .once is opened in
headless Chromium (Debian's chromium, driven by npm's playwright-core), and
what was drawn is checked: as many bars or points as the answer has rows,
the column names as axis titles, and no request made by the page. Each
page's screenshot is kept in the build folder (build/charts/). Bad input (no
rows, a failed run, a run that does not exist, a million rows, a NULL column,
a single value, no scripts installed) is a clear error or a capped chart.
A chart the model proposes (chart_model) or a spec put in the page by hand
makes no request when it is viewed, to a logging server on 127.0.0.1. The
Python (querypilot.chart) and Node (spec and SVG) paths are tested here
too."""
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import unittest

import harness
from harness import LLMTestCase, ShellError, sql_reply

SCREENSHOTS = os.path.join(harness.BUILD_DIR, "charts")
SANITIZED = bool(os.environ.get("QP_SANITIZE"))
HERE = os.path.dirname(os.path.abspath(__file__))


def without_sanitizer(env):
    """`env` without a sanitizer build's preloaded runtime: node and
    chromium load no QueryPilot."""
    env = dict(env)
    env.pop("LD_PRELOAD", None)
    return env


def chart_clients():
    """The chart tests' npm packages, and Debian's chromium."""
    modules = harness.install_chart_clients()
    harness.install_debian("chromium", lambda: shutil.which("chromium") is not None)
    return modules


def x_axis_texts(svg, role):
    """The texts of the x axis's `role` ('label' or 'title') in `svg` (as
    vega draws it), each as (text, font size, transform, text-anchor)."""
    axis = svg[svg.index('aria-label="X-axis'):]
    axis = axis[:axis.index('aria-label="Y-axis')] if 'aria-label="Y-axis' in axis else axis
    group = re.search(r'<g class="mark-text role-axis-%s"[^>]*>(.*?)</g>' % role, axis, re.S).group(1)
    texts = []
    for attributes, text in re.findall(r'<text([^>]*)>(.*?)</text>', group):
        attribute = dict(re.findall(r'([a-z-]+)="([^"]*)"', attributes))
        texts.append((html.unescape(text), float(attribute["font-size"].rstrip("px")), attribute["transform"],
                      attribute.get("text-anchor", "start")))
    return texts


def text_box_bottom(text, size, transform, anchor):
    """The lowest point of `text` drawn at `transform` (translate, rotate,
    translate): 0.6 of `size` a character wide (as wide as sans-serif fonts
    draw, or wider), 0.8 of it above the baseline and 0.25 below."""
    import math
    parts = re.findall(r'(translate|rotate)\(([^)]*)\)', transform)
    width = 0.6 * size * len(text)
    x0 = {"start": 0, "middle": -width / 2, "end": -width}[anchor]
    x1 = x0 + width
    corners = [(x, y) for x in (x0, x1) for y in (-0.8 * size, 0.25 * size)]
    for kind, args in reversed(parts):
        values = [float(v) for v in re.split(r'[ ,]+', args.strip())]
        if kind == "translate":
            corners = [(x + values[0], y + values[1]) for x, y in corners]
        else:
            a = math.radians(values[0])
            corners = [(x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a)) for x, y in corners]
    return max(y for _, y in corners)


def x_title_gap(svg):
    """How far (px) below the bottom of the x axis's lowest label the top of
    its title is drawn in `svg` (negative: over them)."""
    labels = x_axis_texts(svg, "label")
    bottom = max(text_box_bottom(*label) for label in labels)
    (_, size, transform, _), = x_axis_texts(svg, "title")
    title_y = float(re.match(r'translate\(([^,]+),([^)]+)\)', transform).group(2))
    return title_y - 0.8 * size - bottom


class FetchLog:
    """An HTTP server on 127.0.0.1 that answers every GET with an empty JSON
    object (readable from any page) and keeps the paths it was asked for."""

    def __init__(self):
        self.paths = []
        log = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                log.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ChartTestCase(LLMTestCase):
    def setUp(self):
        super().setUp()
        self.modules = chart_clients()
        self.run_count = 0

    def ask_then(self, sql, statements, question="Chart it", rules=(), **env):
        """Asks `question`, answered with `sql`, then runs `statements`;
        chart_scripts names the installed scripts. `rules` come before the
        question's in the scripted model's script."""
        return self.session(
            ["SELECT agent_config('chart_scripts', '%s')" % self.modules,
             "SELECT COUNT(*) AS n FROM ask('%s')" % question.replace("'", "''")] + statements,
            {"rules": list(rules) + [{"match": question, "replies": [sql_reply(sql)]}]}, **env)[2:]

    def write_page(self, sql, name, question="Chart it", before=(), rules=()):
        """The result of agent_chart(1) (run 1 answered with `sql`: the spec
        as JSON, or a ShellError) and the path of the page agent_chart_html(1)
        wrote; `before` runs after the question."""
        page = os.path.join(self.tmp, name + ".html")
        res = self.ask_then(sql, list(before) + [
            "SELECT agent_chart(1) AS spec",
            ".mode list\n.once %s\nSELECT agent_chart_html(1);\n.mode json" % page,
        ], question, rules)[len(before):]
        return (res[0] if isinstance(res[0], ShellError) else json.loads(res[0][0]["spec"])), page

    def open_page(self, page, name, click=False):
        """What Chromium drew of `page` (chart_page.js), its screenshot kept
        in build/charts/; with `click`, the first mark is clicked."""
        os.makedirs(SCREENSHOTS, exist_ok=True)
        p = subprocess.run(["node", os.path.join(HERE, "chart_page.js"), page,
                            os.path.join(SCREENSHOTS, name + ".png")] + (["--click"] if click else []),
                           capture_output=True, text=True, timeout=180,
                           env=without_sanitizer(dict(os.environ, NODE_PATH=self.modules)))
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def render(self, sql, name, question="Chart it", before=(), rules=()):
        """The spec of run 1 (answered with `sql`), and what Chromium drew of
        the page the shell wrote for it; `before` runs after the question."""
        spec, page = self.write_page(sql, name, question, before, rules)
        self.assertNotIsInstance(spec, ShellError, spec)
        with open(page) as f:
            self.assertTrue('<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in f.read(),
                            "the page has no Content-Security-Policy")
        drawn = self.open_page(page, name)
        self.assertEqual(drawn["rendered"], "yes", drawn)
        self.assertEqual(drawn["errors"], [])
        self.assertEqual(drawn["requests"], [], "the page fetched something")
        # Nothing the page's scripts do is refused by its policy.
        self.assertEqual(drawn["blocked"], [])
        self.assertEqual([m for m in drawn["console"] if "Content Security Policy" in m], [])
        return spec, drawn

    @staticmethod
    def chart_rule(spec):
        """The scripted model's reply to agent_chart's request (chart_model):
        `spec`. Only that request lists the answer's first rows so."""
        return {"match": "First rows:", "replies": [
            "Here is a chart:\n\n```json\n%s\n```\n" % json.dumps(spec)]}

    def rows(self, sql):
        import sqlite3
        con = sqlite3.connect(self.db)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()


class TextNumbersTest(LLMTestCase):
    def test_a_csv_imported_without_types_is_charted_and_shown_to_the_model_as_numbers(self):
        # The shell's plain .import makes every column TEXT.
        csv = os.path.join(self.tmp, "books.csv")
        with open(csv, "w") as f:
            f.write("title,year,pages\nEmma,1815,474\nDune,1965,412\nUlysses,1922,1010\n")
        question = "How many pages has each book?"
        res = self.session([
            ".import --csv %s books" % csv,
            "SELECT typeof(pages) AS t FROM books LIMIT 1",
            "SELECT ask_prompt('%s') AS p" % question,
            "SELECT row FROM ask('%s')" % question,
            "SELECT agent_chart(1) AS spec",
        ], {"rules": [{"match": question, "replies": [sql_reply("SELECT title, pages FROM books")]}]})
        self.assertEqual(res[1], [{"t": "text"}])
        system = json.loads(res[2][0]["p"])[0]["content"]
        self.assertIn("  pages TEXT -- numbers stored as text ('474'): CAST(pages AS INTEGER) to compare or sort\n",
                      system)
        self.assertIn("  title TEXT,\n", system)
        self.assertEqual(res[3][0], {"row": '{"title":"Emma","pages":"474"}'})
        spec = json.loads(res[4][0]["spec"])
        self.assertEqual(spec["mark"], "bar")
        self.assertEqual(spec["encoding"]["y"]["field"], "pages")
        self.assertEqual([v["pages"] for v in spec["data"]["values"]], [474, 412, 1010])
        self.assertIn("numbers read from text: pages", spec["description"])


class ChartShapesTest(ChartTestCase):
    def test_a_category_and_a_number_are_bars_sorted_by_the_number(self):
        sql = "SELECT category, SUM(price) AS revenue FROM products GROUP BY category"
        spec, drawn = self.render(sql, "bars", "What is the revenue per category?")
        self.assertEqual(spec["mark"], "bar")
        self.assertEqual(spec["encoding"]["x"]["sort"], "-y")
        self.assertEqual(drawn["bars"], len(self.rows(sql)))
        self.assertEqual(sorted(drawn["axis_titles"]), ["category", "revenue"])
        self.assertIn("What is the revenue per category?", drawn["title"])

    def test_a_date_with_a_number_is_a_line_with_a_point_per_row(self):
        sql = ("SELECT substr(ordered_at, 1, 7) AS month, COUNT(*) AS orders FROM orders "
               "GROUP BY month ORDER BY month")
        spec, drawn = self.render(sql, "line")
        self.assertEqual(spec["mark"]["type"], "line")
        self.assertEqual(spec["encoding"]["x"]["type"], "temporal")
        self.assertEqual(drawn["lines"], 1)
        self.assertEqual(drawn["points"], len(self.rows(sql)))
        self.assertEqual(sorted(drawn["axis_titles"]), ["month", "orders"])

    def test_two_numbers_are_a_scatter_plot(self):
        sql = "SELECT unit_price, quantity FROM order_items"
        spec, drawn = self.render(sql, "scatter")
        self.assertEqual(spec["mark"], "point")
        self.assertEqual(drawn["points"], len(self.rows(sql)))
        self.assertEqual(sorted(drawn["axis_titles"]), ["quantity", "unit_price"])

    def test_a_category_and_several_numbers_are_grouped_bars(self):
        sql = ("SELECT category, MIN(price) AS cheapest, MAX(price) AS dearest FROM products "
               "GROUP BY category")
        spec, drawn = self.render(sql, "grouped")
        self.assertIn("xOffset", spec["encoding"])
        self.assertEqual(drawn["bars"], 2 * len(self.rows(sql)))
        self.assertEqual(sorted(drawn["axis_titles"]), ["category", "cheapest, dearest"])

    def test_julian_days_in_a_date_column_are_dates(self):
        # SQLite says the column is declared DATETIME; its values are REAL.
        question = "Readings over time"
        res = self.session([
            "SELECT agent_config('chart_scripts', '%s')" % self.modules,
            "CREATE TABLE readings (taken DATETIME, level REAL)",
            "INSERT INTO readings VALUES (julianday('2024-01-01'), 3), (julianday('2024-01-02'), 5), "
            "(julianday('2024-01-03'), 4)",
            "SELECT COUNT(*) AS n FROM ask('%s')" % question,
            "SELECT agent_chart(1) AS spec",
        ], {"rules": [{"match": question, "replies": [sql_reply("SELECT taken, level FROM readings")]}]})
        spec = json.loads(res[4][0]["spec"])
        self.assertEqual(spec["encoding"]["x"]["type"], "temporal")
        # 2024-01-01 00:00 UTC in milliseconds.
        self.assertEqual(spec["data"]["values"][0]["taken"], 1704067200000)


class ChartOfAnAnswerTableTest(ChartTestCase):
    def test_an_answer_tables_run_is_charted_like_any_other(self):
        question = "What is the revenue per category?"
        res = self.session([
            "CREATE VIRTUAL TABLE temp.revenue USING ask('%s')" % question,
            "SELECT COUNT(*) AS n FROM revenue",
            "SELECT id, question FROM agent_runs",
            "SELECT agent_chart(1) ->> '$.mark' AS mark, json_array_length(agent_chart(1), '$.data.values') AS n",
        ], {"rules": [{"match": question, "replies": [sql_reply(
            "SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]}]})
        self.assertEqual(res[1], [{"n": 4}])
        self.assertEqual(res[2], [{"id": 1, "question": question}])
        self.assertEqual(res[3], [{"mark": "bar", "n": 4}])


class ChartBadInputTest(ChartTestCase):
    def test_each_bad_input_is_a_clear_error(self):
        res = self.session([
            "SELECT COUNT(*) FROM ask('No rows')",
            "SELECT agent_chart(1)",
            "SELECT COUNT(*) FROM ask('One value')",
            "SELECT agent_chart(2)",
            "SELECT COUNT(*) FROM ask('Only NULLs')",
            "SELECT agent_chart(3)",
            "SELECT agent_chart(99)",
            "SELECT agent_chart('one')",
            "SELECT COUNT(*) FROM ask('Two categories')",
            "SELECT agent_chart(4)",
            "SELECT COUNT(*) FROM ask('Names and categories')",
            "SELECT agent_chart(5)",
        ], {"rules": [
            {"match": "No rows", "replies": [sql_reply("SELECT category, price FROM products WHERE 0")]},
            {"match": "One value", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]},
            {"match": "Only NULLs", "replies": [sql_reply(
                "SELECT category, NULL AS revenue FROM products GROUP BY category")]},
            {"match": "Two categories", "replies": [sql_reply("SELECT name, category, price FROM products")]},
            {"match": "Names and categories", "replies": [sql_reply("SELECT name, category FROM products")]},
        ]})
        self.assertIn("agent_chart(): run 1: the answer has no rows", res[1])
        self.assertIn("the answer is a single value (n (number))", res[3])
        self.assertIn("no column of numbers to draw (its columns: category (category), "
                      "revenue (NULL in every row))", res[5])
        self.assertIn("there is no run 99 in agent_runs", res[6])
        self.assertIn("the first argument is a run id", res[7])
        self.assertIn("no chart fits the answer's columns (name (category), category (category), "
                      "price (number))", res[9])
        self.assertIn("no column of numbers to draw (its columns: name (category), category (category))",
                      res[11])

    def test_a_failed_run_has_no_chart(self):
        res = self.session([
            "SELECT agent_config('max_attempts', 1)",
            "SELECT COUNT(*) FROM ask('Nonsense')",
            "SELECT status FROM agent_runs",
            "SELECT agent_chart(1)",
            "SELECT agent_chart_html(1)",
        ], {"rules": [{"match": "Nonsense", "replies": [sql_reply("SELECT nope FROM nowhere")]}]})
        self.assertIsInstance(res[1], ShellError)
        self.assertNotEqual(res[2], [{"status": "ok"}])
        self.assertIn("run 1 has no answer to draw", res[3])
        self.assertIsInstance(res[4], ShellError)

    def test_a_million_rows_are_capped_and_the_title_says_so(self):
        sql = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000) "
               "SELECT i AS x, i % 97 AS y FROM n")
        res = self.ask_then(sql, [
            "SELECT json_array_length(agent_chart(1), '$.data.values') AS n, "
            "agent_chart(1) ->> '$.title' AS title",
            "SELECT agent_config('chart_max_rows', 10)",
            "SELECT json_array_length(agent_chart(1), '$.data.values') AS n",
        ])
        self.assertEqual(res[0], [{"n": 5000, "title": "Chart it (the first 5000 rows only)"}])
        self.assertEqual(res[2], [{"n": 10}])

    def test_a_null_column_is_left_out_of_the_chart(self):
        sql = "SELECT category, NULL AS discount, SUM(price) AS revenue FROM products GROUP BY category"
        spec, drawn = self.render(sql, "null-column")
        self.assertIn("left out: discount", spec["description"])
        self.assertEqual(drawn["bars"], len(self.rows(sql)))

    def test_without_the_scripts_the_page_says_what_to_install(self):
        res = self.ask_then("SELECT category, SUM(price) AS revenue FROM products GROUP BY category", [
            "SELECT agent_config('chart_scripts', '%s')" % os.path.join(self.tmp, "nowhere"),
            "SELECT agent_chart_html(1)",
            "SELECT agent_chart(1) IS NOT NULL AS spec",
        ])
        self.assertIn("npm install vega@5 vega-lite@5 vega-embed@6", res[1])
        self.assertIn(os.path.join(self.tmp, "nowhere"), res[1])
        self.assertEqual(res[2], [{"spec": 1}])


class ChartModelTest(ChartTestCase):
    """chart_model: where the shape gives no chart, the model proposes one,
    checked against Vega-Lite's own schema and the answer's columns."""
    SQL = "SELECT name, category, price FROM products"

    def test_off_the_shape_decides_as_before(self):
        res = self.ask_then(self.SQL, ["SELECT agent_chart(1)", "SELECT llm_calls FROM agent_runs"],
                            rules=[self.chart_rule({"mark": "bar"})])
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("no chart fits the answer's columns", res[0])
        self.assertEqual(res[1], [{"llm_calls": 2}])  # a generation and its review

    def test_on_the_models_chart_is_returned_with_the_rows_and_drawn(self):
        proposed = {"mark": "point", "data": {"url": "http://127.0.0.1:9/steal.csv"},
                    "encoding": {"x": {"field": "category", "type": "nominal"},
                                 "y": {"field": "price", "type": "quantitative"},
                                 "tooltip": {"field": "name", "type": "nominal"}}}
        spec, drawn = self.render(self.SQL, "model-chart",
                                  before=["SELECT agent_config('chart_model', 1)"],
                                  rules=[self.chart_rule(proposed)])
        rows = self.rows(self.SQL)
        self.assertEqual(spec["mark"], "point")
        self.assertEqual(spec["data"], {"values": [
            {"name": n, "category": c, "price": p} for n, c, p in rows]})
        self.assertEqual(drawn["points"], len(rows))
        # The run this session asked: the database's history holds the one
        # drawn above too.
        res = self.ask_then(self.SQL, ["SELECT agent_config('chart_model', 1)",
                                       "SELECT agent_chart((SELECT max(id) FROM agent_runs))",
                                       "SELECT llm_calls, prompt_tokens > 0 AS counted FROM agent_runs "
                                       "ORDER BY id DESC LIMIT 1"],
                            rules=[self.chart_rule(proposed)])
        self.assertEqual(res[2], [{"llm_calls": 3, "counted": 1}])  # generation, review, chart

    def test_on_an_invalid_chart_and_an_unknown_field_are_refused_with_the_reason(self):
        res = self.ask_then(self.SQL, ["SELECT agent_config('chart_model', 1)", "SELECT agent_chart(1)"],
                            rules=[self.chart_rule({"mark": "banana",
                                                    "encoding": {"x": {"field": "name", "type": "nominal"}}})])
        self.assertIsInstance(res[1], ShellError)
        self.assertIn("the model's chart was refused: it is not valid Vega-Lite at /mark", res[1])
        self.assertIn("banana", res[1])
        res = self.ask_then(self.SQL, ["SELECT agent_config('chart_model', 1)", "SELECT agent_chart(1)"],
                            rules=[self.chart_rule({"mark": "bar",
                                                    "encoding": {"x": {"field": "colour", "type": "nominal"}}})])
        self.assertIn("/encoding/x/field names 'colour', not a column of the answer", res[1])

    def test_on_without_vega_lite_the_error_says_what_to_install(self):
        res = self.ask_then(self.SQL, [
            "SELECT agent_config('chart_model', 1)",
            "SELECT agent_config('chart_scripts', '%s')" % os.path.join(self.tmp, "nowhere"),
            "SELECT agent_chart(1)"], rules=[self.chart_rule({"mark": "bar"})])
        self.assertIn("npm install vega-lite@5", res[2])


def fetching_specs(url):
    """Charts that would make a page fetch from `url` (a FetchLog's) when
    viewed: (name, what the spec adds to a chart of `category` and `price`,
    what agent_chart's refusal says, with the path, or None where the chart
    is drawn without what would fetch)."""
    return [
        ("usermeta-config", {"usermeta": {"embedOptions": {"config": url + "/config.json"}}}, None),
        ("usermeta-patch", {"usermeta": {"embedOptions": {"patch": url + "/patch.json"}}}, None),
        ("usermeta-base-url", {"usermeta": {"embedOptions": {"loader": {"baseURL": url + "/"},
                                                             "patch": "patch.json"}}}, None),
        ("fill-url", {"mark": {"type": "bar", "fill": "url(%s/fill.svg#paint)" % url}},
         "/mark/fill names a URL ('url(%s/fill.svg#paint)')" % url),
        # A URL an expression builds passes the check: the page's policy
        # stops it.
        ("fill-expression", {"mark": {"type": "bar", "fill": {
            "expr": "'ur' + 'l(ht' + 'tp:' + '/' + '/%s/expression.svg#paint)'" % url[len("http://"):]}}},
         None),
        ("background-url", {"background": "url(%s/background.png)" % url}, "/background names a URL"),
        ("image-mark", {"mark": {"type": "image", "url": url + "/image.png", "width": 20, "height": 20}},
         "/mark/url would be fetched"),
        ("image-encoding", {"mark": {"type": "image", "width": 20, "height": 20},
                            "encoding": {"url": {"value": url + "/image.png"}}},
         "/encoding/url would be fetched"),
        ("href", {"mark": {"type": "bar", "href": url + "/href"}},
         "/mark/href would make the chart's marks links"),
        ("data-url", {"data": {"url": url + "/data.json"}}, None),
    ]


class ChartFetchTest(ChartTestCase):
    """Nothing a chart says makes the page agent_chart_html() wrote fetch:
    a model's chart (chart_model) keeps nothing vega-embed reads as options
    and names no URL, and the page itself forbids every request
    (Content-Security-Policy) and loads nothing (a loader that refuses).
    Each page is opened in Chromium, its first mark clicked, beside a
    logging server on 127.0.0.1 that must see no request."""
    SQL = "SELECT name, category, price FROM products"

    def setUp(self):
        super().setUp()
        self.server = FetchLog()
        self.addCleanup(self.server.close)

    @staticmethod
    def with_encoding(extra):
        """Bars of price per category, with `extra`'s members (its
        `encoding`'s channels added to theirs)."""
        spec = {"mark": "bar", "encoding": {"x": {"field": "category", "type": "nominal"},
                                           "y": {"field": "price", "type": "quantitative"}}}
        for key, value in extra.items():
            if key == "encoding":
                spec["encoding"].update(value)
            else:
                spec[key] = value
        return spec

    def test_a_models_chart_that_would_fetch_is_refused_or_drawn_without_it(self):
        rows = self.rows(self.SQL)
        for name, extra, refusal in fetching_specs(self.server.url):
            with self.subTest(name):
                del self.server.paths[:]
                proposed = self.with_encoding(extra)
                spec, page = self.write_page(self.SQL, "model-fetch-" + name, before=[
                    "SELECT agent_config('chart_model', 1)"], rules=[self.chart_rule(proposed)])
                drawn = None
                if os.path.exists(page) and os.path.getsize(page) > 0:
                    drawn = self.open_page(page, "model-fetch-" + name, click=True)
                    self.assertEqual(drawn["requests"], [], "the page fetched")
                self.assertEqual(self.server.paths, [], "the page fetched")
                if refusal:
                    self.assertIsInstance(spec, ShellError, "the chart was not refused: %s" % spec)
                    self.assertIn("the model's chart was refused: " + refusal, spec)
                    self.assertIsNone(drawn)
                else:
                    self.assertNotIsInstance(spec, ShellError, spec)
                    self.assertNotIn("usermeta", spec)
                    self.assertNotIn("url", spec["data"])
                    self.assertEqual(len(spec["data"]["values"]), len(rows))
                    self.assertEqual(drawn["rendered"], "yes", drawn)
                    self.assertEqual(drawn["bars"], len(rows))

    def test_the_page_fetches_nothing_whatever_spec_it_holds(self):
        # A page agent_chart_html() wrote, its spec replaced by one no check
        # has seen: the page's own policy and loader hold.
        spec, page = self.write_page(
            "SELECT category, SUM(price) AS revenue FROM products GROUP BY category", "page-fetch")
        self.assertNotIsInstance(spec, ShellError, spec)
        with open(page) as f:
            text = f.read()
        start = text.index("var spec = ")
        end = text.index(";\n", start)
        values = [{"category": c, "price": p} for c, p in self.rows(
            "SELECT category, SUM(price) FROM products GROUP BY category")]
        for name, extra, _ in fetching_specs(self.server.url):
            with self.subTest(name):
                del self.server.paths[:]
                hostile = dict({"data": {"values": values}}, **self.with_encoding(extra))
                path = os.path.join(self.tmp, "page-fetch-%s.html" % name)
                with open(path, "w") as f:
                    f.write(text[:start] + "var spec = " + json.dumps(hostile).replace("<", "\\u003c")
                            + text[end:])
                drawn = self.open_page(path, "page-fetch-" + name, click=True)
                self.assertEqual(drawn["requests"], [], "the page fetched")
                self.assertEqual(self.server.paths, [], "the page fetched")


class ChartClientsTest(ChartTestCase):
    @unittest.skipIf(SANITIZED, "Node.js clients run in the Release suite: under a sanitizer build node "
                                "itself would run with the sanitizer runtime preloaded")
    def test_node_gets_the_spec_and_an_svg_rendered_by_vega(self):
        clients = harness.install_node_clients()  # better-sqlite3
        self.llm.load({"rules": [
            {"match": "revenue", "replies": [sql_reply(
                "SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]},
            {"match": "price of each product", "replies": [sql_reply("SELECT name, price FROM products")]}]})
        script = r"""
const Database = require('better-sqlite3');
const querypilot = require(process.argv[2]);
(async () => {
  const db = new Database(process.argv[3]);
  db.loadExtension(process.argv[4]);
  const n = db.prepare("SELECT COUNT(*) AS n FROM ask('What is the revenue per category?')").get().n;
  const spec = querypilot.chart(db, 1);
  const svg = await querypilot.chartSvg(db, 1);
  db.prepare("SELECT COUNT(*) AS n FROM ask('What is the price of each product?')").get();
  const [long, again] = await Promise.all([querypilot.chartSvg(db, 2), querypilot.chartSvg(db, 2)]);
  let typeError = '';
  try { querypilot.chart(db, 'one'); } catch (e) { typeError = e.message; }
  let missing = '';
  try { querypilot.chart(db, 7); } catch (e) { missing = e.message; }
  console.log(JSON.stringify({ n, mark: spec.mark, svg, long, again, typeError, missing }));
})().catch((e) => { console.error(e); process.exit(1); });
"""
        env = self.llm.env()
        env["NODE_PATH"] = os.pathsep.join([clients, self.modules])
        path = os.path.join(self.tmp, "chart.js")
        with open(path, "w") as f:
            f.write(script)
        p = subprocess.run(["node", path, os.path.join(harness.SOURCE_DIR, "packaging", "npm", "index.js"),
                            self.db, harness.EXTENSION], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout)
        self.assertEqual(got["mark"], "bar")
        self.assertTrue(got["svg"].startswith("<svg"), got["svg"][:200])
        # One bar per row, and the column names as axis titles.
        self.assertEqual(len(re.findall(r'<path[^>]*aria-roledescription="bar"', got["svg"])), got["n"])
        self.assertIn(">category</text>", got["svg"])
        self.assertIn(">revenue</text>", got["svg"])
        # The x axis's title sits just below its labels: four categories lie
        # flat, the title's top within 12 px of their bottom, not over them.
        gap = x_title_gap(got["svg"])
        self.assertGreaterEqual(gap, 0, got["svg"])
        self.assertLessEqual(gap, 12, got["svg"])
        # Twelve products' long names are angled, the title no further below
        # them (however long a sans-serif font draws them); two drawn at once
        # are the same drawing.
        self.assertIn('rotate(315)', got["long"])
        self.assertLessEqual(x_title_gap(got["long"]), 12, got["long"])
        self.assertEqual(got["again"], got["long"])
        self.assertIn("runId is an integer", got["typeError"])
        self.assertIn("there is no run 7", got["missing"])

    def test_python_chart_is_an_altair_chart_or_the_spec(self):
        harness.install_debian("python3-altair", lambda: subprocess.run(
            ["/usr/bin/python3", "-c", "import altair"], capture_output=True).returncode == 0)
        self.llm.load({"rules": [{"match": "revenue", "replies": [sql_reply(
            "SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]}]})
        script = r"""
import json, sqlite3, sys
sys.path[0:0] = sys.argv[1].split(":")
import querypilot
con = sqlite3.connect(sys.argv[2])
con.enable_load_extension(True)
con.load_extension(sys.argv[3])
n = con.execute("SELECT COUNT(*) FROM ask('What is the revenue per category?')").fetchone()[0]
run = con.execute("SELECT max(id) FROM agent_runs").fetchone()[0]
chart = querypilot.chart(con, run)
spec = chart if isinstance(chart, dict) else chart.to_dict()
print(json.dumps({"rows": n, "type": type(chart).__module__ + "." + type(chart).__name__,
                  "values": len(spec["data"]["values"]) if "values" in spec["data"] else
                            len(spec["datasets"][spec["data"]["name"]]),
                  "x": spec["encoding"]["x"]["title"]}))
"""
        package = os.path.join(harness.SOURCE_DIR, "packaging", "python")

        def run(*path):
            p = subprocess.run(["/usr/bin/python3", "-c", script, os.pathsep.join(path), self.db, harness.EXTENSION],
                               capture_output=True, text=True, timeout=120, env=self.llm.env())
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)
        got = run(package)
        self.assertTrue(got["type"].startswith("altair"), got)
        self.assertEqual(got["values"], got["rows"])
        self.assertEqual(got["x"], "category")
        # Without Altair: the specification, as a dict.
        no_altair = os.path.join(self.tmp, "no-altair")
        os.makedirs(no_altair)
        with open(os.path.join(no_altair, "altair.py"), "w") as f:
            f.write("raise ImportError('no Altair here')\n")
        got = run(package, no_altair)
        self.assertEqual(got["type"], "builtins.dict")
        self.assertEqual(got["values"], got["rows"])
        self.assertEqual(got["x"], "category")


if __name__ == "__main__":
    unittest.main()
