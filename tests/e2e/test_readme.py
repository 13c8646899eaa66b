"""README.md's settings table says what the code does: every setting of
agent_config() is in it, with its default and its range, and nothing else;
and it lists agent_runs' and agent_attempts' columns as they are, in order."""
import json
import os
import re
import subprocess
import unittest

from harness import EXTENSION, SOURCE_DIR, SQLITE3, isolated_env


def readme_settings(path=os.path.join(SOURCE_DIR, "README.md")):
    """The rows of the settings table of a Markdown file (README.md, or
    docs/settings.md, which tests/e2e/test_docs.py checks the same way)."""
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


class ReadmeSettingsTest(unittest.TestCase):
    def test_every_setting_with_its_default_and_range(self):
        self.check_settings_table(readme_settings())

    def check_settings_table(self, rows):
        out, err = shell("SELECT agent_config();")
        config = json.loads(out)
        for key in ("host", "in_use", "problems"):
            config.pop(key)  # read-only, described above the table
        self.assertEqual(list(rows), list(config))
        for key, value in config.items():
            default, allowed = rows[key]
            with self.subTest(setting=key):
                if key == "api_key":
                    self.assertEqual(default, value)
                elif isinstance(value, str):
                    self.assertEqual(default, '""' if value == "" else value)
                else:
                    self.assertEqual(float(default), float(value))
                m = re.fullmatch(r"(\d+) to (\d+)", allowed)
                if m and isinstance(value, int):
                    lo, hi = int(m.group(1)), int(m.group(2))
                    out, err = shell("SELECT agent_config('%s', %d);" % (key, lo),
                                     "SELECT agent_config('%s', %d);" % (key, hi))
                    self.assertEqual(err, "")
                    for bad in (lo - 1, hi + 1):
                        out, err = shell("SELECT agent_config('%s', %d);" % (key, bad))
                        self.assertIn("must be a whole number from %d to %d" % (lo, hi), err)


class ReadmeRecordColumnsTest(unittest.TestCase):
    def test_agent_runs_and_agent_attempts_are_listed_as_they_are(self):
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            text = " ".join(f.read().split())
        for table, lead in (("agent_runs", "one row per ask"), ("agent_attempts", "one row per attempt")):
            with self.subTest(table=table):
                m = re.search(r"- `%s`: %s \(`([^`]*)`\)" % (table, lead), text)
                self.assertTrue(m, "README.md lists no columns of %s" % table)
                out, err = shell("SELECT name FROM pragma_table_info('%s');" % table)
                self.assertEqual(err, "")
                self.assertEqual(m.group(1).split(", "), out.split())


class ReadmeConfidenceTest(unittest.TestCase):
    """README's "How sure an answer is" restates the confidence table: every
    rule with its effect, number, count and reason, its bands and its low
    threshold, as agent_config('confidence') gives them."""

    def test_the_confidence_table_is_the_one_the_code_uses(self):
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            text = f.read()
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
