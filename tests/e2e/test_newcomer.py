"""What a newcomer meets before the code: one version everywhere, a licence,
a changelog, scripts/try.sh running the scripted model on a database of
one's own, examples/ runnable on their own, and skipped tests that say so."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

import harness
from harness import EXTENSION, SOURCE_DIR, SQLITE3, file_digest, isolated_env, make_shop_db

E2E_DIR = os.path.dirname(os.path.abspath(__file__))


def read(*parts):
    with open(os.path.join(SOURCE_DIR, *parts)) as f:
        return f.read()


class VersionAndLicenceTest(unittest.TestCase):
    def test_the_version_lives_in_one_place(self):
        version = read("VERSION").strip()
        self.assertRegex(version, r"^\d+\.\d+\.\d+$")
        self.assertEqual(read("VERSION"), version + "\n")
        # Nobody else spells it: CMake and the packaging read VERSION.
        self.assertNotIn(version, read("CMakeLists.txt"))
        self.assertIn('file(STRINGS "${CMAKE_CURRENT_SOURCE_DIR}/VERSION"', read("CMakeLists.txt"))
        for path in ("scripts/package.sh", "packaging/npm/package.json", "packaging/python/pyproject.toml",
                     "packaging/python/querypilot/__init__.py", "cmake/cpack_version.cmake"):
            with self.subTest(path=path):
                self.assertNotIn(version, read(path))
        # The packages take what the built library says (VERSION, +dev past it):
        # package.sh and cpack read the header cmake/version.cmake writes.
        self.assertIn('header="$BUILD_DIR/generated/querypilot_version.h"', read("scripts", "package.sh"))
        self.assertIn('set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_CURRENT_SOURCE_DIR}/cmake/cpack_version.cmake")',
                      read("CMakeLists.txt"))
        p = subprocess.run([SQLITE3, "-batch", ":memory:"], input=".load %s\nSELECT querypilot_version();\n" % EXTENSION,
                           capture_output=True, text=True, env=isolated_env(), timeout=60)
        # The release itself, or a build of work past it that says so.
        self.assertEqual((p.stdout.strip(), p.stderr), (harness.built_version(), ""))
        self.assertRegex(p.stdout.strip(), r"^%s(\+dev(\.g[0-9a-f]{12})?)?$" % re.escape(version))
        # The changelog says what this version brought.
        changelog = read("CHANGELOG.md")
        self.assertRegex(changelog, r"\n## \[%s\] - \d{4}-\d\d-\d\d\n" % re.escape(version))
        self.assertIn("querypilot_version", read("docs", "functions", "querypilot_version.md"))

    def test_a_build_past_the_release_says_so(self):
        # cmake/version.cmake, run as the build runs it, on trees of its own:
        # a tarball (no git), a git repository at its release commit and one
        # commit past it, and a tarball unpacked inside another repository.
        version = read("VERSION").strip()
        changelog = read("CHANGELOG.md")
        self.assertIn("\n## [Unreleased]\n", changelog)
        released = re.sub(r"(\n## \[Unreleased\]\n)(.*?)(\n## )", r"\1\3", changelog, count=1, flags=re.S)
        tmp = tempfile.mkdtemp(prefix="qp-version-")
        self.addCleanup(shutil.rmtree, tmp, True)

        def tree(path, changelog_text):
            os.makedirs(path)
            with open(os.path.join(path, "VERSION"), "w") as f:
                f.write(version + "\n")
            with open(os.path.join(path, "CHANGELOG.md"), "w") as f:
                f.write(changelog_text)
            return path

        def named(path):
            header = os.path.join(path, "version.h")
            p = subprocess.run(["cmake", "-DSOURCE_DIR=" + path, "-DOUT=" + header, "-P",
                                os.path.join(SOURCE_DIR, "cmake", "version.cmake")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(header) as f:
                return re.search(r'#define QUERYPILOT_VERSION "([^"]*)"', f.read()).group(1)

        # Without git: the changelog tells (a change listed as Unreleased).
        self.assertEqual(named(tree(os.path.join(tmp, "work"), changelog)), version + "+dev")
        self.assertEqual(named(tree(os.path.join(tmp, "release"), released)), version)
        git = shutil.which("git")
        if not git:
            self.skipTest("no git here: the trees without it are checked above")
        env = dict(os.environ, GIT_AUTHOR_NAME="QueryPilot", GIT_AUTHOR_EMAIL="qp@example.invalid",
                   GIT_COMMITTER_NAME="QueryPilot", GIT_COMMITTER_EMAIL="qp@example.invalid")

        def run_git(path, *args):
            return subprocess.run([git, "-C", path, *args], capture_output=True, text=True, check=True, env=env,
                                  timeout=60).stdout.strip()

        repo = tree(os.path.join(tmp, "repo"), released)
        run_git(repo, "init", "-q")
        run_git(repo, "add", "VERSION", "CHANGELOG.md")
        run_git(repo, "commit", "-q", "-m", "release")
        self.assertEqual(named(repo), version)  # the commit that set VERSION
        with open(os.path.join(repo, "NEWS"), "w") as f:
            f.write("later work\n")
        run_git(repo, "add", "NEWS")
        run_git(repo, "commit", "-q", "-m", "work")
        self.assertEqual(named(repo), "%s+dev.g%s" % (version, run_git(repo, "rev-parse", "HEAD")[:12]))
        # A tarball unpacked inside another repository is not that repository.
        inner = tree(os.path.join(repo, "unpacked"), released)
        self.assertEqual(named(inner), version)
        with open(os.path.join(inner, "CHANGELOG.md"), "w") as f:
            f.write(changelog)
        self.assertEqual(named(inner), version + "+dev")

    def test_each_released_version_is_dated_as_git_says(self):
        # Keep a Changelog: "## [Unreleased]" first, then each release with the
        # day VERSION first held it.
        changelog = read("CHANGELOG.md")
        headings = re.findall(r"^## (.*)$", changelog, re.M)
        self.assertEqual(headings[0], "[Unreleased]")
        released = [re.fullmatch(r"\[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)", h) for h in headings[1:]]
        self.assertTrue(released and all(released), headings)
        git = shutil.which("git")
        if not git or not os.path.exists(os.path.join(SOURCE_DIR, ".git")):
            self.skipTest("no git history here: the dates' form is checked above")
        log = subprocess.run([git, "-C", SOURCE_DIR, "log", "--reverse", "--format=%H %ad", "--date=short",
                              "--", "VERSION"], capture_output=True, text=True, timeout=60)
        if log.returncode != 0 or not log.stdout.strip():
            self.skipTest("git cannot read VERSION's history here (a shallow clone?): %s" % log.stderr.strip())
        first_day = {}
        for line in log.stdout.splitlines():
            commit, day = line.split()
            held = subprocess.run([git, "-C", SOURCE_DIR, "show", "%s:VERSION" % commit], capture_output=True,
                                  text=True, timeout=60).stdout.strip()
            first_day.setdefault(held, day)
        for m in released:
            if m.group(1) not in first_day:
                self.skipTest("VERSION's history here does not reach %s (a shallow clone?)" % m.group(1))
            self.assertEqual(m.group(2), first_day[m.group(1)], m.group(1))

    def test_the_licence_is_named_everywhere(self):
        self.assertTrue(read("LICENSE").startswith("MIT License\n"))
        self.assertIn('license = {text = "MIT"}', read("packaging", "python", "pyproject.toml"))
        self.assertEqual(json.loads(read("packaging", "npm", "package.json"))["license"], "MIT")
        self.assertIn("LICENSE", json.loads(read("packaging", "npm", "package.json"))["files"])
        self.assertIn("MIT licence ([LICENSE](LICENSE))", read("README.md"))


def try_sh(*args, env=None, timeout=120):
    run_env = dict(env or isolated_env(), QP_SKIP_BUILD="1", BUILD_DIR=harness.BUILD_DIR)
    return subprocess.run([os.path.join(SOURCE_DIR, "scripts", "try.sh"), *args], capture_output=True, text=True,
                          env=run_env, timeout=timeout, stdin=subprocess.DEVNULL)


class TryYourDatabaseTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qp-try-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_the_scripted_model_answers_about_a_database_of_ones_own(self):
        db = os.path.join(self.tmp, "library.db")
        con = sqlite3.connect(db)
        con.executescript("""
            CREATE TABLE books(id INTEGER PRIMARY KEY, title TEXT, genre TEXT);
            CREATE TABLE "book loans"(id INTEGER PRIMARY KEY, book_id INTEGER REFERENCES books(id), member TEXT);
            INSERT INTO books(title, genre) VALUES ('Dune', 'sf'), ('Emma', 'novel'), ('Solaris', 'sf');
            INSERT INTO "book loans"(book_id, member) VALUES (1, 'ann'), (1, 'bob');
        """)
        con.close()
        before = file_digest(db)
        questions = self.write("q.sql", "\n".join([
            "-- a comment line is not shown",
            "SELECT * FROM ask('How many books are there?');",
            "SELECT * FROM ask('books by genre');",
            "SELECT * FROM ask('How many book loans are there?');",
            "SELECT count(*) FROM ask('show books');",
            "SELECT * FROM ask('Who wrote Dune?');",
            "SELECT run_id, attempt, error_type, error FROM agent_attempts WHERE run_id = 1;",
            "SELECT id, status, attempts FROM agent_runs;",
        ]) + "\n")
        # A real model configured in the environment is not used.
        env = isolated_env()
        env.update(QUERYPILOT_BASE_URL="http://127.0.0.1:9/v1", QUERYPILOT_MODEL="real-model", OPENAI_API_KEY="sk-x")
        p = try_sh(db, questions, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = p.stdout
        self.assertIn("SCRIPTED TEST MODEL", out)
        self.assertNotIn("a comment line", out)
        self.assertIn('{"number of books":3}', out)
        self.assertIn('{"genre":"sf","n":2}', out)
        self.assertIn('{"number of book loans":2}', out)
        self.assertIn("sqlite> SELECT count(*) FROM ask('show books');\n3\n", out)
        # The first reply named the table wrongly: the loop corrected it.
        self.assertIn("1|1|table_not_found|no such table: book", out)
        self.assertIn("1|ok|2", out)
        # Anything else: a reply without SQL that says what it answers.
        self.assertIn("the model's reply held no SQL", out)
        self.assertIn("how many <table>", out)
        self.assertEqual(file_digest(db), before)

    def test_bad_arguments_are_named(self):
        for args, message in ((["/nonexistent.db"], "no database file /nonexistent.db"),
                              ([], "Usage"), (["--script"], "Usage")):
            with self.subTest(args=args):
                p = try_sh(*args)
                self.assertEqual(p.returncode, 2)
                self.assertIn(message, p.stderr)


class ThePoliciesAnswersAreAsDocumentedTest(unittest.TestCase):
    def test_x_by_y_says_it_keeps_the_ten_commonest(self):
        tmp = tempfile.mkdtemp(prefix="qp-policy-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = make_shop_db(tmp)
        p = subprocess.run(["/usr/bin/python3", os.path.join(SOURCE_DIR, "scripts", "scripted_policy.py"), db],
                           capture_output=True, text=True, timeout=60, check=True)
        rules = {r["match"]: r["replies"] for r in json.loads(p.stdout)["rules"]}
        by = rules["Question: orders by status"][0]
        self.assertIn('GROUP BY "status" ORDER BY n DESC LIMIT 10;', by)
        # Each place a user reads about "X by Y" says what the SQL keeps.
        for text in (read("docs", "try-your-database.md"), read("scripts", "try.sh"),
                     read("scripts", "scripted_policy.py")):
            self.assertIn("ten commonest", text)
        self.assertIn("`SELECT <column>, COUNT(*) AS n ... GROUP BY <column> ORDER BY n DESC LIMIT 10`",
                      read("docs", "try-your-database.md"))


def demo_sh(env, timeout=300):
    return subprocess.run([os.path.join(SOURCE_DIR, "scripts", "demo.sh")], capture_output=True, text=True,
                          env=dict(env, QP_SKIP_BUILD="1", BUILD_DIR=harness.BUILD_DIR), timeout=timeout,
                          stdin=subprocess.DEVNULL)


class DemoTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qp-demo-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.llm = harness.ScriptedLLM()
        self.addCleanup(self.llm.close)
        with open(harness.DEMO_SCRIPT) as f:
            self.script = dict(json.load(f), require_key="the-right-key")

    def env(self, key):
        return dict(isolated_env(), QUERYPILOT_PROVIDER="openai", QUERYPILOT_BASE_URL=self.llm.base + "/v1",
                    QUERYPILOT_MODEL="scripted-model", QUERYPILOT_API_KEY=key,
                    DEMO_DB=os.path.join(self.tmp, "demo.db"))

    def test_a_rejected_key_stops_the_demo_at_the_first_question(self):
        self.llm.load(self.script)
        p = demo_sh(self.env("a-rejected-key"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("stopped at the first provider error", p.stderr)
        self.assertIn("HTTP 401: invalid api key", p.stderr)
        self.assertEqual(p.stdout.count("HTTP 401"), 1, p.stdout)   # the shell's error, once
        self.assertNotIn("qp-demo-guard", p.stdout + p.stderr)
        self.assertEqual(len(self.llm.log()), 1)                    # no second question asked

    def test_the_demo_runs_to_its_end_with_a_key_that_works(self):
        self.llm.load(self.script)
        p = demo_sh(self.env("the-right-key"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Grace Thompson", p.stdout)
        self.assertIn("the model's SQL was refused", p.stdout)    # the DELETE, refused on purpose
        self.assertIn("column_not_found", p.stdout)               # the record at the end
        self.assertNotIn("qp-demo-guard", p.stdout + p.stderr)
        self.assertEqual(p.stderr, "")
        # It ends with a chart of the revenue per category, in a file it names:
        # a page where npm's vega scripts are found, else the specification.
        chart = os.path.join(self.tmp, "demo-chart")
        if os.path.exists(chart + ".html"):
            self.assertIn(chart + ".html", p.stdout)
        else:
            self.assertIn(chart + ".vl.json", p.stdout)
            with open(chart + ".vl.json") as f:
                spec = json.load(f)
            self.assertEqual(spec["encoding"]["x"]["field"], "category")
            self.assertEqual(len(spec["data"]["values"]), 4)
        self.assertNotIn("Runtime error: agent_chart", p.stdout)


class ExamplesRunOnTheirOwnTest(unittest.TestCase):
    def test_each_command_of_examples_readme(self):
        readme = read("examples", "README.md")
        commands = re.findall(r"\| `(rm -f demo\.db && sqlite3 demo\.db < sql/shop\.sql && scripts/try\.sh [^`]*)` \|",
                              readme)
        self.assertEqual(len(commands), 2, readme)
        for command in commands:
            with self.subTest(command=command):
                tmp = tempfile.mkdtemp(prefix="qp-examples-")
                self.addCleanup(shutil.rmtree, tmp, True)
                make_shop_db(tmp, "demo.db")
                _, script_args = command.split(" && scripts/try.sh ")
                args = [a if a == "--script" or not a.startswith(("examples/",)) else os.path.join(SOURCE_DIR, a)
                        for a in script_args.split()]
                args = [os.path.join(tmp, a) if a == "demo.db" else a for a in args]
                p = try_sh(*args)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                if "demo.sql" in command:
                    self.assertIn("Grace Thompson", p.stdout)
                    self.assertIn("the model's SQL was refused", p.stdout)
                    self.assertIn("column_not_found", p.stdout)
                else:
                    self.assertIn('{"number of customers":15}', p.stdout)
                    self.assertIn("table_not_found", p.stdout)
                self.assertNotIn("Parse error", p.stdout)


class SkippedTestsAreVisibleTest(unittest.TestCase):
    def test_a_skip_is_recorded_and_a_suite_all_skipped_is_skipped_for_ctest(self):
        tmp = tempfile.mkdtemp(prefix="qp-skips-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "test_allskipped.py"), "w") as f:
            f.write("import unittest\n"
                    "@unittest.skip('../shared/datasets is not here')\n"
                    "class T(unittest.TestCase):\n"
                    "    def test_a(self): pass\n")
        with open(os.path.join(tmp, "test_someskipped.py"), "w") as f:
            f.write("import unittest\n"
                    "class T(unittest.TestCase):\n"
                    "    def test_runs(self): self.assertTrue(True)\n"
                    "    def test_needs_data(self): self.skipTest('no spider_train')\n")
        with open(os.path.join(tmp, "test_fails.py"), "w") as f:
            f.write("import unittest\n"
                    "class T(unittest.TestCase):\n"
                    "    def test_a(self): self.skipTest('x')\n"
                    "    def test_b(self): self.fail('no')\n")
        env = dict(isolated_env(), PYTHONPATH=tmp, QP_BUILD_DIR=tmp)
        codes = {}
        for suite in ("test_allskipped", "test_someskipped", "test_fails"):
            p = subprocess.run([sys.executable, os.path.join(E2E_DIR, "run_suite.py"), suite], capture_output=True,
                               text=True, env=env, timeout=60)
            codes[suite] = p.returncode
        self.assertEqual(codes, {"test_allskipped": 77, "test_someskipped": 0, "test_fails": 1})
        summary = subprocess.run([sys.executable, os.path.join(E2E_DIR, "skipped.py"), tmp], capture_output=True,
                                 text=True, timeout=60).stdout
        self.assertEqual(summary.splitlines(), [
            "Skipped: 3 tests (the rest ran):",
            "  e2e_allskipped T.test_a: ../shared/datasets is not here",
            "  e2e_fails T.test_a: x",
            "  e2e_someskipped T.test_needs_data: no spider_train",
        ])
        # ctest takes 77 as "skipped", and scripts/test.sh prints the summary.
        self.assertIn("SKIP_RETURN_CODE 77", read("tests", "CMakeLists.txt"))
        self.assertIn('skipped.py" .', read("scripts", "test.sh"))
        # A suite with nothing skipped leaves no record.
        with open(os.path.join(tmp, "test_someskipped.py"), "w") as f:
            f.write("import unittest\nclass T(unittest.TestCase):\n    def test_runs(self): pass\n")
        subprocess.run([sys.executable, os.path.join(E2E_DIR, "run_suite.py"), "test_someskipped"],
                       capture_output=True, env=env, timeout=60, check=True)
        self.assertFalse(os.path.exists(os.path.join(tmp, "skipped", "test_someskipped.txt")))


if __name__ == "__main__":
    unittest.main()
