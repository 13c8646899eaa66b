"""docs/ says what the code does.

Every `sqlite>` transcript on every page is replayed in the real sqlite3 shell
on the demo's shop database against the scripted model (as README.md's and
tests/sql/'s are); every SQL function and table QueryPilot registers has its
page, linked from docs/README.md; the settings page lists every setting with
its default and range and every environment variable the code reads; each
provider recipe, pointed at the scripted model on loopback, makes the request
its page describes; and each error the troubleshooting page explains is one
the code can give."""
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

import test_readme
from harness import (DEMO_SCRIPT, EXTENSION, SOURCE_DIR, SQLITE3, ScriptedLLM, isolated_env, make_shop_db,
                     replay_transcript, session, sql_reply, transcripts_in_markdown)

DOCS = os.path.join(SOURCE_DIR, "docs")


def pages():
    return sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))


def read(path):
    with open(path) as f:
        return f.read()


def registered():
    """The functions and modules the extension registers: what the shell
    lists with it loaded and not without."""
    def names(load):
        lines = [".load %s" % EXTENSION] if load else []
        lines += ["SELECT 'f', name FROM pragma_function_list;", "SELECT 'm', name FROM pragma_module_list;"]
        p = subprocess.run([SQLITE3, "-batch", ":memory:"], input="\n".join(lines) + "\n", capture_output=True,
                           text=True, env=isolated_env(), timeout=60, check=True)
        return {tuple(line.split("|", 1)) for line in p.stdout.splitlines()}
    new = names(True) - names(False)
    return sorted(n for k, n in new if k == "f"), sorted(n for k, n in new if k == "m")


class DocsTranscriptsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DEMO_SCRIPT) as f:
            cls.script = json.load(f)
        cls.llm = ScriptedLLM()

    @classmethod
    def tearDownClass(cls):
        cls.llm.close()

    def test_every_example_runs_as_shown(self):
        replayed = 0
        for path in pages():
            for i, block in enumerate(transcripts_in_markdown(path)):
                with self.subTest(page=os.path.relpath(path, DOCS), block=i):
                    tmp = tempfile.mkdtemp(prefix="qp-docs-")
                    self.addCleanup(shutil.rmtree, tmp, True)
                    db = make_shop_db(tmp)
                    self.llm.load(self.script)
                    expected, actual = replay_transcript(db, block, self.llm.env())
                    self.maxDiff = None
                    self.assertEqual(actual, expected)
                    replayed += 1
        self.assertGreaterEqual(replayed, 16)


class DocsSetUpLineTest(unittest.TestCase):
    def test_the_shop_database_line_works_again_after_the_demo(self):
        line = re.search(r"without a model: `([^`]*sql/shop\.sql)`", read(os.path.join(DOCS, "README.md"))).group(1)
        self.assertIn("demo.db", line)
        tmp = tempfile.mkdtemp(prefix="qp-setup-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.symlink(os.path.join(SOURCE_DIR, "sql"), os.path.join(tmp, "sql"))
        make_shop_db(tmp, "demo.db")  # as scripts/demo.sh leaves it
        for _ in range(2):
            p = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp, timeout=60)
            self.assertEqual((p.returncode, p.stderr), (0, ""))
        con = sqlite3.connect(os.path.join(tmp, "demo.db"))
        self.addCleanup(con.close)
        self.assertEqual(con.execute("SELECT count(*) FROM customers").fetchone(), (15,))
        # Every other page that makes the shop database says it the same way.
        for path in ("docs/try-your-database.md", "examples/README.md", "examples/demo.sql",
                     "examples/own_database.sql"):
            text = read(os.path.join(SOURCE_DIR, path))
            self.assertNotRegex(text, r"(?<!&& )sqlite3 demo\.db < sql/shop\.sql", path)


class DocsCoverTheSurfaceTest(unittest.TestCase):
    def test_every_function_and_table_has_its_page(self):
        functions, modules = registered()
        self.assertIn("ask_sql", functions)
        self.assertIn("agent_runs", modules)
        index = read(os.path.join(DOCS, "README.md"))
        for name in functions + modules:
            with self.subTest(name=name):
                folder = "functions" if name in functions or name in ("ask", "ask_result") else "tables"
                page = os.path.join(DOCS, folder, name + ".md")
                self.assertTrue(os.path.exists(page), "no page %s" % os.path.relpath(page, SOURCE_DIR))
                text = read(page)
                self.assertTrue(text.startswith("# `%s" % name), text[:80])
                sections = ["## Arguments", "## Result", "## Errors", "## Example"] if folder == "functions" \
                    else ["## Columns", "## Example"]
                for section in sections:
                    self.assertIn("\n%s\n" % section, text)
                self.assertTrue(transcripts_in_markdown(page), "%s has no sqlite> example" % name)
                self.assertIn("(%s/%s.md)" % (folder, name), index)

    def test_the_agent_runs_page_lists_its_columns_in_order(self):
        # The table's columns are kRunFields' (agent/memory/history.h): a
        # column added there and not here fails, and the other way round.
        p = subprocess.run([SQLITE3, "-batch", ":memory:"],
                           input=".load %s\nSELECT name FROM pragma_table_info('agent_runs');\n" % EXTENSION,
                           capture_output=True, text=True, env=isolated_env(), timeout=60, check=True)
        table = p.stdout.split()
        self.assertIn("confidence_reason", table)
        text = read(os.path.join(DOCS, "tables", "agent_runs.md"))
        listed = re.search(r"\n## Columns\n\n`([^`]+)`", text)
        self.assertIsNotNone(listed, "docs/tables/agent_runs.md lists no columns")
        self.assertEqual([c.strip() for c in listed.group(1).split(",")], table)

    def test_every_link_between_pages_leads_somewhere(self):
        checked = 0
        for path in pages() + [os.path.join(SOURCE_DIR, "README.md")]:
            for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", read(path)):
                with self.subTest(page=os.path.relpath(path, SOURCE_DIR), link=target):
                    self.assertTrue(os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), target))))
                    checked += 1
        self.assertGreater(checked, 20)

    def test_the_readme_links_the_docs(self):
        readme = read(os.path.join(SOURCE_DIR, "README.md"))
        for target in ("docs/README.md", "docs/settings.md", "docs/troubleshooting.md", "docs/try-your-database.md",
                       "docs/providers/ollama.md", "docs/install.md", "docs/configure.md", "docs/usage.md",
                       "docs/confidence.md", "docs/safety.md", "docs/measure.md", "docs/development.md", "LICENSE",
                       "CHANGELOG.md"):
            with self.subTest(target=target):
                self.assertIn("](%s)" % target, readme)


class DocsSettingsTest(unittest.TestCase):
    def test_every_setting_with_its_default_and_range(self):
        test_readme.check_settings_table(self, test_readme.readme_settings(os.path.join(DOCS, "settings.md")))

    def test_every_environment_variable_the_code_reads(self):
        # Each setting's variable (QUERYPILOT_ and its name in capitals) set
        # to a value the setting takes that is not its default: those the
        # table lists are read (agent_config() shows the value), and every
        # other is refused at the first ask, by its name.
        path = os.path.join(DOCS, "settings.md")
        text = read(path)
        table = text[text.index("| variable | setting |"):]
        listed = {}
        for line in table.splitlines()[2:]:
            if not line.startswith("| `"):
                break
            m = re.match(r"\| `(QUERYPILOT_[A-Z_]+)` \| `([a-z_]+)`", line)
            if m:
                listed[m.group(2)] = m.group(1)
        self.assertGreaterEqual(len(listed), 10)
        tmp = tempfile.mkdtemp(prefix="qp-docs-env-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env, values = isolated_env(), {}
        for key, (default, allowed) in test_readme.readme_settings(path).items():
            var = "QUERYPILOT_" + key.upper()
            if key in listed:
                self.assertEqual(listed[key], var)
            m = re.fullmatch(r"(\d+) to (\d+)", allowed)
            if m:
                value = m.group(2) if m.group(2) != default else m.group(1)
            else:
                value = {"provider": "anthropic", "base_url": "http://127.0.0.1:9",
                         "api_key": "sk-docs-0a0a0a", "allow_functions": "regexp",
                         "empty_doubtful": "rows"}.get(key, os.path.join(tmp, key))
            env[var] = values[key] = value
        self.assertEqual(set(listed) - set(values), set())
        config, answer = session(os.path.join(tmp, "empty.db"), ["SELECT agent_config() AS c", "SELECT * FROM ask('x')"],
                                 env)
        config = json.loads(config[0]["c"])
        self.assertIn("nothing was asked", answer)
        for key, value in values.items():
            with self.subTest(setting=key):
                var = "QUERYPILOT_" + key.upper()
                if key not in listed:
                    self.assertIn("%s is not read from the environment" % var, answer)
                    continue
                self.assertNotIn(var, answer)
                if key == "api_key":
                    self.assertEqual(config[key], "set (environment: %s)" % var)
                elif isinstance(config[key], str):
                    self.assertEqual(config[key], value)
                else:
                    self.assertEqual(float(config[key]), float(value))


# Each provider page's recipe, and what its request must look like: the path
# under the base URL, the query kept, where the key goes.
PROVIDERS = {
    "openai.md": {"path": "/v1/chat/completions", "auth": "authorization", "model": "gpt-4o-mini"},
    "anthropic.md": {"path": "/v1/messages", "auth": "x_api_key", "model": "claude-sonnet-4-5"},
    "ollama.md": {"path": "/v1/chat/completions", "auth": None, "model": "qwen2.5-coder:7b"},
    "llama-cpp.md": {"path": "/v1/chat/completions", "auth": None, "model": "local"},
    "vllm.md": {"path": "/v1/chat/completions", "auth": None, "model": "Qwen/Qwen2.5-Coder-7B-Instruct"},
    "lm-studio.md": {"path": "/v1/chat/completions", "auth": None, "model": "qwen2.5-coder-7b-instruct"},
    # Two recipes: the v1 API with a key, then a deployment's URL with a token.
    "azure-openai.md": [{"path": "/openai/v1/chat/completions", "auth": "authorization", "model": "my-gpt-4o-mini"},
                        {"path": "/openai/deployments/my-gpt-4o-mini/chat/completions", "auth": "authorization",
                         "model": "my-gpt-4o-mini", "query": {"api-version": "2024-06-01"}}],
}
FAKE_KEY = "sk-recipe-test-key-0123456789"


def recipe(page, n=0):
    """The `export NAME=value` lines of a page's n-th ```sh block, with the
    placeholders a reader fills in (sk-..., $(az ...), $A_KEY) given a test
    value."""
    block = re.findall(r"```sh\n(.*?)```", read(page), re.S)[n]
    env = {}
    for line in block.splitlines():
        m = re.match(r"export (\w+)=(\"[^\"]*(?:\$\([^)]*\)[^\"]*)*\"|\S+)", line)
        if not m:
            continue
        value = m.group(2)
        if value.startswith('"'):
            value = value[1:-1]
        if "$" in value or value.endswith("..."):
            value = FAKE_KEY
        env[m.group(1)] = value
    return env


class ProviderRecipesTest(unittest.TestCase):
    def test_each_page_is_listed(self):
        self.assertEqual(sorted(os.path.basename(p) for p in glob.glob(os.path.join(DOCS, "providers", "*.md"))),
                         sorted(PROVIDERS))

    def test_each_recipe_makes_the_request_its_page_describes(self):
        llm = ScriptedLLM()
        self.addCleanup(llm.close)
        tmp = tempfile.mkdtemp(prefix="qp-recipes-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = make_shop_db(tmp)
        recipes = [(page, n, w) for page, want in sorted(PROVIDERS.items())
                   for n, w in enumerate(want if isinstance(want, list) else [want])]
        for page, n, want in recipes:
            with self.subTest(page=page, recipe=n):
                env = recipe(os.path.join(DOCS, "providers", page), n)
                self.assertIn("QUERYPILOT_BASE_URL", env)
                self.assertEqual(env.get("QUERYPILOT_MODEL"), want["model"])
                # The recipe as written, but the server is the scripted model.
                env["QUERYPILOT_BASE_URL"] = re.sub(r"^https?://[^/?]+", llm.base, env["QUERYPILOT_BASE_URL"])
                run_env = isolated_env()
                run_env.update(env)
                llm.load({"rules": [{"match": "How many orders", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]}]})
                res = session(db, ["SELECT * FROM ask('How many orders are there?')"], run_env)
                self.assertEqual(res[0], [{"row": '{"n":100}'}])
                (request,) = llm.log()
                self.assertEqual(request["path"], want["path"])
                self.assertEqual(request["query"], want.get("query", {}))
                self.assertEqual(request["body"]["model"], want["model"])
                if want["auth"] == "authorization":
                    self.assertEqual(request["authorization"], "Bearer " + FAKE_KEY)
                elif want["auth"] == "x_api_key":
                    self.assertEqual(request["x_api_key"], FAKE_KEY)
                    self.assertEqual(request["anthropic_version"], "2023-06-01")
                else:
                    self.assertEqual(request["authorization"], "")
                    self.assertEqual(request["x_api_key"], "")


class TroubleshootingTest(unittest.TestCase):
    def test_each_error_it_explains_is_one_the_code_gives(self):
        text = read(os.path.join(DOCS, "troubleshooting.md"))
        headings = []
        for line in re.findall(r"^### (`.*)$", text, re.M):
            headings += re.findall(r"`([^`]+)`", line)
        self.assertGreaterEqual(len(headings), 10)
        sources = ""
        for pattern in ("agent/**/*.cpp", "agent/**/*.h", "ext/*.cpp", "packaging/python/querypilot/*.py"):
            for path in glob.glob(os.path.join(SOURCE_DIR, pattern), recursive=True):
                sources += read(path)
        for heading in headings:
            with self.subTest(error=heading):
                # The fixed words of the message: the parts between its "..."
                # and {placeholders}.
                parts = [p.strip() for p in re.split(r"\.\.\.|<[^>]+>", heading) if p.strip()]
                self.assertTrue(parts)
                for part in parts:
                    self.assertTrue(part in sources, "no %r in agent/, ext/ or packaging/" % part)


if __name__ == "__main__":
    unittest.main()
