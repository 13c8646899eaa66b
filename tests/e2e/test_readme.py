"""README.md starts with the answer and leads to the rest; the reference it
moved to docs/ says what the code does: every setting of agent_config() with
its default and its range (docs/settings.md, checked by test_docs.py with
check_settings_table below), agent_runs' and agent_attempts' columns as they
are, in order (docs/usage.md), and the confidence table (docs/confidence.md)."""
import json
import os
import re
import subprocess
import unittest

from harness import EXTENSION, SOURCE_DIR, SQLITE3, isolated_env


def read(*parts):
    with open(os.path.join(SOURCE_DIR, *parts)) as f:
        return f.read()


def readme_settings(path=os.path.join(SOURCE_DIR, "docs", "settings.md")):
    """The rows of the settings table of a Markdown file (docs/settings.md)."""
    with open(path) as f:
        text = f.read()
    table = text[text.index("| setting | default | range | meaning |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


def shell(*statements):
    p = subprocess.run([SQLITE3, "-batch", ":memory:"], input=".load %s\n%s\n" % (EXTENSION, "\n".join(statements)),
                       capture_output=True, text=True, env=isolated_env(), timeout=60)
    return p.stdout, p.stderr


def check_settings_table(test, rows):
    """Every setting of agent_config() in `rows`, in order, with its default
    and its range: each end of a range is taken, and one past it refused."""
    out, err = shell("SELECT agent_config();")
    config = json.loads(out)
    for key in ("host", "in_use", "problems"):
        config.pop(key)  # read-only, described above the table
    test.assertEqual(list(rows), list(config))
    for key, value in config.items():
        default, allowed = rows[key]
        with test.subTest(setting=key):
            if key == "api_key":
                test.assertEqual(default, value)
            elif isinstance(value, str):
                test.assertEqual(default, '""' if value == "" else value)
            else:
                test.assertEqual(float(default), float(value))
            m = re.fullmatch(r"(\d+) to (\d+)", allowed)
            if m and isinstance(value, int):
                lo, hi = int(m.group(1)), int(m.group(2))
                out, err = shell("SELECT agent_config('%s', %d);" % (key, lo),
                                 "SELECT agent_config('%s', %d);" % (key, hi))
                test.assertEqual(err, "")
                for bad in (lo - 1, hi + 1):
                    out, err = shell("SELECT agent_config('%s', %d);" % (key, bad))
                    test.assertIn("must be a whole number from %d to %d" % (lo, hi), err)


# The pages the reference moved to from the README, each linked from it and
# from docs/README.md.
GUIDES = ("install.md", "configure.md", "settings.md", "usage.md", "confidence.md", "safety.md", "what-leaves.md",
          "troubleshooting.md", "try-your-database.md", "measure.md", "development.md", "python.md")


class ReadmeStartsWithTheAnswerTest(unittest.TestCase):
    def test_the_first_screen_goes_from_nothing_to_an_answer(self):
        # What it is, the two commands, a model named in one line, the first
        # ask, within the first screen; the whole README short.
        text = read("README.md")
        lines = text.splitlines()
        self.assertLessEqual(len(lines), 150)
        first = "\n".join(lines[:70])
        self.assertTrue(first.startswith("# QueryPilot\n\nA self-correcting text-to-SQL agent inside SQLite."))
        self.assertIn("./scripts/demo.sh ", first)
        self.assertIn("./scripts/test.sh ", first)
        self.assertRegex(first, r"\nexport QUERYPILOT_BASE_URL=\S+ QUERYPILOT_MODEL=\S+ \w+_API_KEY=\S+\n")
        self.assertRegex(first, r"sqlite> SELECT .* FROM ask\('")
        # A newcomer learns from the first screen that its rows are the scripted
        # model's, that real answers need a model (a key or a local server), and
        # how long the two commands take.
        prose = " ".join(first.split())
        first_block_end = first.index("```", first.index("```text") + 3)
        self.assertRegex(" ".join(first[first_block_end:first_block_end + 400].split()), r"scripted test model")
        self.assertRegex(prose, r"Real answers need a real model: an API key .* Ollama")
        self.assertRegex(prose, r"the demo takes about \d+ minutes and the tests about \d+")
        # The Python and Node.js lines come before the documentation list.
        self.assertLess(text.index("\n# Python ("), text.index("\n## Documentation\n"))
        self.assertLess(text.index("\n# Node.js ("), text.index("\n## Documentation\n"))

    def test_the_documentation_list_links_every_guide(self):
        text = read("README.md")
        listed = text[text.index("\n## Documentation\n"):]
        index = read("docs", "README.md")
        for page in GUIDES:
            with self.subTest(page=page):
                self.assertIn("](docs/%s)" % page, listed)
                self.assertIn("](%s)" % page, index)
        self.assertIn("](docs/README.md)", listed)

    def test_ci_runs_the_readmes_test_command(self):
        # .ci/run's first step is the README's test command, as a new user
        # types it (its readme_test step).
        command = re.search(r"^\./(scripts/\S+)\s+# builds and runs every test", read("README.md"), re.M).group(1)
        ci = read(".ci", "run")
        step = re.search(r"\nreadme_test\(\) \{\n(.*?)\n\}", ci, re.S)
        self.assertTrue(step, ".ci/run has no readme_test step")
        self.assertRegex(step.group(1), r"(^|\s)%s( |$)" % re.escape(command))
        self.assertIn("\nstep readme_test\n", ci)


class ReadmeRecordColumnsTest(unittest.TestCase):
    def test_agent_runs_and_agent_attempts_are_listed_as_they_are(self):
        text = " ".join(read("docs", "usage.md").split())
        for table, lead in (("agent_runs", "one row per ask"), ("agent_attempts", "one row per attempt")):
            with self.subTest(table=table):
                m = re.search(r"- `%s`: %s \(`([^`]*)`\)" % (table, lead), text)
                self.assertTrue(m, "docs/usage.md lists no columns of %s" % table)
                out, err = shell("SELECT name FROM pragma_table_info('%s');" % table)
                self.assertEqual(err, "")
                self.assertEqual(m.group(1).split(", "), out.split())


class ReadmeConfidenceTest(unittest.TestCase):
    """docs/confidence.md restates the confidence table: every rule with its
    effect, number, count and reason, its bands and its low threshold, as
    agent_config('confidence') gives them."""

    def test_the_confidence_table_is_the_one_the_code_uses(self):
        text = read("docs", "confidence.md")
        header = "| confidence rule | effect | number | at most | reason |"
        self.assertIn(header, text)
        rows = []
        for line in text[text.index(header):].splitlines()[2:]:
            if not line.startswith("| `"):
                break
            name, effect, number, most, reason = [c.strip() for c in line.strip("|").split(" | ")]
            rows.append({"name": name.strip("`"), "effect": effect, "number": int(number), "most": int(most),
                         "reason": reason})
        out, err = shell("SELECT agent_config('confidence');")
        self.assertEqual(err, "")
        table = json.loads(out)
        self.assertEqual(rows, table["rows"])
        flat = " ".join(text.split())
        for band in table["bands"]:
            self.assertIn("`confidence:%s`" % band["name"], flat)
        self.assertIn("An answer below %d is low" % table["low_below"], flat)
        out, err = shell("SELECT agent_config('confidence', '{}');")
        self.assertIn("confidence is read-only", err)


if __name__ == "__main__":
    unittest.main()
