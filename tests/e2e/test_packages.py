"""QueryPilot as Python and Node.js users install SQLite extensions: the wheel
and the npm tarball that scripts/package.sh builds from this tree, installed
offline into a fresh virtual environment and a fresh folder, each asking a
question through the scripted model: rows from ask() and from an answer
table."""
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import unittest
import zipfile

import harness
from harness import LLMTestCase, install_apsw, install_node_clients, sql_reply

SCRIPT = {"rules": [{"match": "How many orders", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]}]}
SANITIZED = bool(os.environ.get("QP_SANITIZE"))

PYTHON_ASK = r"""
import json, os, sqlite3, sys
from importlib import metadata
import querypilot
con = sqlite3.connect(sys.argv[1])
querypilot.load(con)
out = {"path": querypilot.loadable_path(), "version": querypilot.__version__,
       "installed_version": metadata.version("querypilot"),
       "sql_version": con.execute("SELECT querypilot_version()").fetchone()[0]}
out["ask"] = [r[0] for r in con.execute("SELECT row FROM ask('How many orders are there?')")]
table = querypilot.answer_table(con, "t", "How many orders are there? (it's a table)")
cur = con.execute("SELECT * FROM " + table)
out["table"] = {"columns": [d[0] for d in cur.description], "rows": cur.fetchall()}
out["path_exists"] = os.path.isfile(querypilot.loadable_path())
try:
    con.load_extension(querypilot.loadable_path())
    out["still_enabled"] = True
except sqlite3.Error as e:
    out["still_enabled"] = False
try:
    querypilot.load("not a connection")
except TypeError as e:
    out["type_error"] = str(e)
print(json.dumps(out))
"""

# The library that can always load extensions (a pyenv or macOS Python's way
# through): Debian's python3-apsw, seen from a venv made with
# --system-site-packages.
APSW_ASK = r"""
import json, os, sys
import apsw, querypilot
con = apsw.Connection(sys.argv[1])
querypilot.load(con)
out = {"path": querypilot.loadable_path(), "path_exists": os.path.isfile(querypilot.loadable_path())}
out["ask"] = [r[0] for r in con.execute("SELECT row FROM ask('How many orders are there?')")]
table = querypilot.answer_table(con, "t", "How many orders are there? (it's a table)")
cur = con.cursor().execute("SELECT * FROM " + table)
columns = [d[0] for d in cur.getdescription()]  # APSW's, read before the rows end
out["table"] = {"columns": columns, "rows": [list(r) for r in cur]}
try:
    con.loadextension(querypilot.loadable_path())
    out["still_enabled"] = True
except apsw.Error:
    out["still_enabled"] = False
print(json.dumps(out))
"""

NODE_ASK = r"""
const querypilot = require('querypilot');
const Database = require(process.argv[2]);
const db = new Database(process.argv[3]);
querypilot.load(db);
const out = {path: querypilot.getLoadablePath(), version: require('querypilot/package.json').version,
             sqlVersion: db.prepare('SELECT querypilot_version() AS v').get().v};
out.ask = db.prepare("SELECT row FROM ask('How many orders are there?')").all().map((r) => r.row);
db.exec("CREATE VIRTUAL TABLE temp.t USING ask('How many orders are there? (table)')");
const stmt = db.prepare('SELECT * FROM t');
out.table = {columns: stmt.columns().map((c) => c.name), rows: stmt.raw(true).all()};
try { querypilot.load({}); } catch (e) { out.type_error = e.message; }
console.log(JSON.stringify(out));
"""


def clean_env(env):
    env = dict(env)
    env.pop("LD_PRELOAD", None)
    return env


@unittest.skipIf(SANITIZED, "the packages carry the build they are made from; they are tested with the README's")
class PackagesTest(LLMTestCase):
    @classmethod
    def setUpClass(cls):
        env = dict(os.environ, QP_SKIP_BUILD="1", BUILD_DIR=harness.BUILD_DIR)
        p = subprocess.run([os.path.join(harness.SOURCE_DIR, "scripts", "package.sh")], capture_output=True,
                           text=True, env=env, timeout=600)
        if p.returncode != 0:
            raise AssertionError("scripts/package.sh failed:\n" + p.stdout + p.stderr)
        packages = os.path.join(harness.BUILD_DIR, "packages")
        cls.wheel = glob.glob(os.path.join(packages, "querypilot-*.whl"))[0]
        cls.tarball = glob.glob(os.path.join(packages, "querypilot-*.tgz"))[0]
        cls.work = tempfile.mkdtemp(prefix="qp-packages-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def check_answers(self, out):
        self.assertEqual(out["ask"], ['{"n":100}'])
        self.assertEqual(out["table"], {"columns": ["n"], "rows": [[100]]})

    def ask_in_venv(self, name, script, *venv_options):
        """A fresh venv of Debian's Python with the wheel installed offline,
        running `script` on the shop database: the venv and what it printed."""
        venv = os.path.join(self.work, name)
        subprocess.run(["/usr/bin/python3", "-m", "venv", *venv_options, venv], check=True, timeout=300)
        pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", self.wheel],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        self.llm.load(SCRIPT)
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-c", script, self.db], capture_output=True,
                           text=True, env=self.llm.env(), timeout=120, cwd=self.work)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return venv, json.loads(p.stdout)

    def test_the_wheel_installs_offline_and_asks(self):
        venv, out = self.ask_in_venv("venv", PYTHON_ASK)
        self.check_answers(out)
        self.assertTrue(out["path"].startswith(os.path.join(venv, "lib")), out["path"])
        self.assertTrue(out["path"].endswith("/querypilot.so") and out["path_exists"], out["path"])
        # The package is numbered as its library says it is (VERSION, or
        # VERSION+dev.g<commit> past the release: PEP 440's local version).
        self.assertEqual(out["sql_version"], harness.built_version())
        self.assertEqual(out["version"], out["sql_version"])
        self.assertEqual(out["installed_version"], out["sql_version"])
        self.assertFalse(out["still_enabled"])  # load() turned extension loading off again
        self.assertIn("takes a sqlite3.Connection", out["type_error"])

    def test_the_wheel_loads_into_apsw(self):
        install_apsw()  # Debian's python3-apsw, or a skip saying why
        venv, out = self.ask_in_venv("venv-apsw", APSW_ASK, "--system-site-packages")
        self.check_answers(out)
        self.assertTrue(out["path"].startswith(os.path.join(venv, "lib")) and out["path_exists"], out["path"])
        self.assertFalse(out["still_enabled"])  # load() turned extension loading off again

    def test_the_readmes_python_lines_load_in_a_fresh_folder(self):
        # As a user types them, from a clone's root (build/packages/ holds the
        # wheel, demo.db the shop): a venv of Debian's Python, the wheel, a load.
        with open(os.path.join(harness.SOURCE_DIR, "README.md")) as f:
            readme = f.read()
        block = readme[readme.index("\n# Python ("):]
        block = block[:block.index("\n\n")]
        lines = [line for line in block.splitlines() if line and not line.startswith("#")]
        self.assertEqual(len(lines), 2, block)
        with open(os.path.join(harness.SOURCE_DIR, "docs", "python.md")) as f:
            self.assertIn("```sh\n%s\n```" % "\n".join(lines), f.read())  # the page shows the same two
        clone = os.path.join(self.work, "clone")
        os.makedirs(os.path.join(clone, "build"))
        os.symlink(os.path.dirname(self.wheel), os.path.join(clone, "build", "packages"))
        harness.make_shop_db(clone, "demo.db")
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(lines)], capture_output=True, text=True,
                           cwd=clone, timeout=600, env=clean_env(harness.isolated_env()))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(p.stdout.endswith("('%s',)\n" % harness.built_version()), p.stdout)

    def test_the_wheel_is_for_any_python3_and_says_what_it_needs(self):
        # querypilot.so is a SQLite extension, not a CPython module: one wheel
        # for every Python 3 on this platform.
        version = harness.built_version()  # the library's, +dev.g<commit> past the release
        name = os.path.basename(self.wheel)
        self.assertRegex(name, r"^querypilot-%s-py3-none-linux_[a-z0-9_]+\.whl$" % re.escape(version))
        with zipfile.ZipFile(self.wheel) as z:
            info = "querypilot-%s.dist-info/" % version
            metadata = z.read(info + "METADATA").decode()
            wheel_file = z.read(info + "WHEEL").decode()
            names = z.namelist()
        self.assertIn("Tag: py3-none-linux_", wheel_file)
        self.assertIn("Root-Is-Purelib: false", wheel_file)
        self.assertIn("License: MIT\n", metadata)
        self.assertIn("Classifier: License :: OSI Approved :: MIT License", metadata)
        self.assertIn("libcurl4 libfmt9", metadata)
        self.assertTrue(any(n.startswith(info) and n.endswith("LICENSE") for n in names), names)
        self.assertIn("querypilot/querypilot.so", names)

    def test_the_wheel_installs_into_another_python(self):
        # A Python other than Debian's 3.11 (pyenv's, if this machine has
        # them): pip takes the py3-none wheel. Their sqlite3 modules cannot
        # load extensions, so load() must say so and name the fix.
        others = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[02-9]*/bin/python3")) +
                        [p for p in glob.glob("/usr/bin/python3.[0-9]*") if re.search(r"python3\.\d+$", p)
                         and not p.endswith("python3.11")])
        if not others:
            self.skipTest("no Python 3 but 3.11 here: the tag is checked by "
                          "test_the_wheel_is_for_any_python3_and_says_what_it_needs")
        python = others[-1]
        venv = os.path.join(self.work, "venv-other")
        subprocess.run([python, "-m", "venv", venv], check=True, timeout=300, capture_output=True)
        pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", self.wheel],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import json, os, sqlite3, sys, querypilot\n"
                            "out = {'python': list(sys.version_info[:2]), 'version': querypilot.__version__,\n"
                            "       'so': os.path.isfile(querypilot.loadable_path())}\n"
                            "try:\n"
                            "    con = sqlite3.connect(':memory:')\n"
                            "    querypilot.load(con)\n"
                            "    out['sql_version'] = con.execute('SELECT querypilot_version()').fetchone()[0]\n"
                            "except RuntimeError as e:\n"
                            "    out['error'] = str(e)\n"
                            "print(json.dumps(out))"],
                           capture_output=True, text=True, timeout=60, cwd=self.work)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = json.loads(p.stdout)
        self.assertNotEqual(out["python"], [3, 11])
        self.assertTrue(out["so"])
        self.assertEqual(out["version"], harness.built_version())
        if "error" in out:
            self.assertIn("--enable-loadable-sqlite-extensions", out["error"])
        else:
            # The library says which build it is (VERSION, +dev past it), as the package does.
            self.assertEqual(out["sql_version"], out["version"])

    def test_a_python_that_cannot_load_extensions_is_told_the_fix(self):
        # pyenv's default builds, for one, lack enable_load_extension.
        candidates = [shutil.which("python3"), os.path.expanduser("~/.pyenv/shims/python3")]
        for python in filter(None, candidates):
            probe = subprocess.run([python, "-c", "import sqlite3; print(hasattr(sqlite3.Connection, "
                                    "'enable_load_extension'))"], capture_output=True, text=True, timeout=60)
            if probe.stdout.strip() == "False":
                break
        else:
            self.skipTest("every python3 here can load extensions")
        site = os.path.join(self.work, "site")
        subprocess.run(["/usr/bin/python3", "-m", "zipfile", "-e", self.wheel, site], check=True, timeout=60)
        p = subprocess.run([python, "-c", "import sqlite3, sys; sys.path.insert(0, %r); import querypilot; "
                            "querypilot.load(sqlite3.connect(':memory:'))" % site],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot load extensions", p.stderr)
        self.assertIn("--enable-loadable-sqlite-extensions", p.stderr)
        self.assertIn("Use APSW", p.stderr)  # the way through that needs no other Python
        self.assertIn("/usr/bin/python3 -m venv", p.stderr)

    def test_the_npm_tarball_installs_offline_and_asks(self):
        modules = install_node_clients()  # better-sqlite3 and libsql, or a skip saying why
        app = os.path.join(self.work, "app")
        os.makedirs(app, exist_ok=True)
        with open(os.path.join(app, "package.json"), "w") as f:
            json.dump({"name": "qp-app", "private": True}, f)
        npm = subprocess.run([shutil.which("npm"), "install", "--offline", "--no-audit", "--no-fund", self.tarball],
                             capture_output=True, text=True, timeout=300, cwd=app, env=clean_env(os.environ))
        self.assertEqual(npm.returncode, 0, npm.stdout + npm.stderr)
        self.assertTrue(os.path.exists(os.path.join(app, "node_modules", "querypilot", "index.d.ts")))
        self.assertTrue(os.path.exists(os.path.join(app, "node_modules", "querypilot", "LICENSE")))
        with open(os.path.join(app, "node_modules", "querypilot", "package.json")) as f:
            meta = json.load(f)
        # Numbered as its library says it is: semver's build metadata past the release.
        self.assertEqual(meta["version"], harness.built_version())
        self.assertEqual(meta["license"], "MIT")
        # The library is built for one architecture, and loads into either client, which the
        # app installs itself: optional peers, so npm installs neither (offline, above).
        self.assertEqual(meta["cpu"], [{"x86_64": "x64", "aarch64": "arm64"}[platform.machine()]])
        # The versions declared are the ones these tests install (better-sqlite3@12, libsql@0.5).
        self.assertEqual(meta["peerDependencies"],
                         {name: ">=" + version for name, version in (p.rsplit("@", 1) for p in harness.NODE_PACKAGES)})
        self.assertEqual(meta["peerDependenciesMeta"],
                         {"better-sqlite3": {"optional": True}, "libsql": {"optional": True}})
        self.assertFalse(os.path.exists(os.path.join(app, "node_modules", "better-sqlite3")))
        for module in ("better-sqlite3", "libsql"):
            with self.subTest(client=module):
                self.llm.load(SCRIPT)
                env = clean_env(self.llm.env())
                env["NODE_PATH"] = modules  # the clients; querypilot comes from the app's own folder
                script = os.path.join(app, "ask.js")
                with open(script, "w") as f:
                    f.write(NODE_ASK)
                p = subprocess.run([shutil.which("node"), script, module, self.db], capture_output=True,
                                   text=True, env=env, timeout=120, cwd=app)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                out = json.loads(p.stdout)
                self.check_answers(out)
                self.assertEqual((out["version"], out["sqlVersion"]), (meta["version"], meta["version"]))
                self.assertTrue(out["path"].startswith(os.path.join(app, "node_modules", "querypilot")), out["path"])
                self.assertIn("has no loadExtension method", out["type_error"])

    def test_the_npm_tarball_brings_the_chart_scripts_beside_the_library(self):
        # vega, vega-lite and vega-embed are optional dependencies: npm installs
        # them from its cache (filled by the chart tests' install), and
        # agent_chart_html finds them beside the library with no setting.
        harness.install_chart_clients()
        app = os.path.join(self.work, "chart-app")
        os.makedirs(app, exist_ok=True)
        with open(os.path.join(app, "package.json"), "w") as f:
            json.dump({"name": "qp-chart-app", "private": True}, f)
        npm = subprocess.run([shutil.which("npm"), "install", "--offline", "--no-audit", "--no-fund", self.tarball],
                             capture_output=True, text=True, timeout=300, cwd=app, env=clean_env(os.environ))
        self.assertEqual(npm.returncode, 0, npm.stdout + npm.stderr)
        for script in ("vega/build/vega.min.js", "vega-lite/build/vega-lite.min.js",
                       "vega-embed/build/vega-embed.min.js"):
            self.assertTrue(os.path.exists(os.path.join(app, "node_modules", script)), script)
        self.llm.load({"rules": [{"match": "revenue", "replies": [sql_reply(
            "SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]}]})
        library = os.path.join(app, "node_modules", "querypilot", "lib", "querypilot")
        p = subprocess.run([harness.SQLITE3, "-batch", self.db],
                           input=".load %s\nSELECT COUNT(*) FROM ask('What is the revenue per category?');\n"
                                 "SELECT substr(agent_chart_html(1), 1, 15);\n" % library,
                           capture_output=True, text=True, timeout=120, cwd=self.work,
                           env=clean_env(self.llm.env()))
        self.assertEqual((p.stdout, p.stderr), ("4\n<!DOCTYPE html>\n", ""))


if __name__ == "__main__":
    unittest.main()
