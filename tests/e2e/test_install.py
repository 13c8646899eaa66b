"""Installed like other SQLite extensions: `cmake --install` and the .deb put
querypilot.so where the dynamic loader finds it, so `.load querypilot` and
Python's load_extension("querypilot") work from any folder, with no path.

Both are checked in a staging folder, never on this machine's own /usr:
LD_LIBRARY_PATH points the loader at the staged library folder, as the
system's library path does for a real install."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness import BUILD_DIR, SOURCE_DIR, SQLITE3, built_version

SANITIZED = bool(os.environ.get("QP_SANITIZE"))
LOAD_BY_NAME = ".load querypilot\nSELECT querypilot_version();\nSELECT count(*) FROM agent_runs;\n"
PY_LOAD_BY_NAME = ("import sqlite3; c = sqlite3.connect(':memory:'); c.enable_load_extension(True); "
                   "c.load_extension('querypilot'); print(c.execute('SELECT querypilot_version()').fetchone()[0])")


def links(path):
    """The relative links of a Markdown page (README.md, docs/...), without
    their #anchors."""
    with open(path) as f:
        return re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", f.read())


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qp-install-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.version = built_version()  # what querypilot_version() says

    def load_by_name(self, libdir):
        """The shell and Python, in a folder with no querypilot in it, load it by name."""
        env = dict(os.environ, LD_LIBRARY_PATH=libdir)
        cwd = tempfile.mkdtemp(dir=self.tmp)
        p = subprocess.run([SQLITE3, "-batch", ":memory:"], input=LOAD_BY_NAME, capture_output=True, text=True,
                           env=env, cwd=cwd, timeout=60)
        self.assertEqual((p.stdout, p.stderr), ("%s\n0\n" % self.version, ""))
        p = subprocess.run([sys.executable, "-c", PY_LOAD_BY_NAME], capture_output=True, text=True, env=env,
                           cwd=cwd, timeout=60)
        self.assertEqual((p.stdout, p.stderr), ("%s\n" % self.version, ""))
        # And without the staged folder it is not found: the loader really
        # found the installed copy.
        p = subprocess.run([SQLITE3, "-batch", ":memory:"], input=LOAD_BY_NAME, capture_output=True, text=True,
                           env=dict(os.environ, LD_LIBRARY_PATH=""), cwd=cwd, timeout=60)
        if not os.path.exists("/usr/lib/querypilot.so"):
            self.assertIn("querypilot", p.stderr)

    def test_cmake_install_loads_by_name(self):
        stage = os.path.join(self.tmp, "stage")
        subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", "/usr", "--component", "extension"],
                       check=True, capture_output=True, env=dict(os.environ, DESTDIR=stage), timeout=300)
        libdir = os.path.join(stage, "usr", "lib")
        self.assertTrue(os.path.exists(os.path.join(libdir, "querypilot.so")), os.listdir(stage))
        self.load_by_name(libdir)
        self.docs_are_installed(os.path.join(stage, "usr", "share", "doc", "querypilot"))

    def docs_are_installed(self, docdir):
        """The README and every page it leads to, beside it: each relative
        link of an installed page leads to an installed file."""
        readme = os.path.join(docdir, "README.md")
        self.assertTrue(os.path.exists(readme), docdir)
        pages = [readme] + sorted(glob.glob(os.path.join(docdir, "docs", "**", "*.md"), recursive=True))
        self.assertEqual(len(pages) - 1, len(glob.glob(os.path.join(SOURCE_DIR, "docs", "**", "*.md"),
                                                       recursive=True)))
        checked = 0
        for page in pages:
            for target in links(page):
                with self.subTest(page=os.path.relpath(page, docdir), link=target):
                    self.assertTrue(os.path.isfile(os.path.normpath(os.path.join(os.path.dirname(page), target))))
                    checked += 1
        self.assertGreater(checked, 30)
        self.assertIn("docs/install.md", links(readme))

    def test_the_system_build_is_the_extension_alone(self):
        # The README's system install: a build tree of its own, configured
        # for the extension alone (no querypilot-eval, tests or benchmarks),
        # installed as root with no word of sudo.
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            readme = f.read()
        with open(os.path.join(SOURCE_DIR, "docs", "install.md")) as f:
            install = f.read()
        for text in (readme, install):
            self.assertNotIn("sudo", text)
        m = re.search(r"^cmake -S \. -B (\S+) (-DCMAKE_BUILD_TYPE=Release -DQUERYPILOT_EXTENSION_ONLY=ON) "
                      r"&& cmake --build \1 -j$", readme, re.M)
        self.assertTrue(m, "README.md shows no system build of the extension alone")
        self.assertIn("cmake --install %s --prefix /usr --component extension --strip   # as root" % m.group(1),
                      readme)
        self.assertIn(m.group(0), install)
        build = os.path.join(self.tmp, "system-build")
        p = subprocess.run(["cmake", "-S", SOURCE_DIR, "-B", build, "-G", "Ninja", *m.group(2).split()],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], capture_output=True, text=True,
                           check=True, timeout=60)
        outputs = {line.split(":")[0] for line in p.stdout.splitlines()}
        self.assertIn("querypilot.so", outputs)
        self.assertEqual({"querypilot-eval", "querypilot-scripted-llm", "libqp_agent_linked.a"} & outputs, set())
        self.assertEqual([o for o in outputs if o.startswith(("tests/", "bench/", "eval/"))], [])

    @unittest.skipIf(SANITIZED, "the package is checked in the Release suite")
    @unittest.skipIf(not shutil.which("dpkg-deb"), "dpkg-deb is not installed")
    def test_the_deb_loads_by_name(self):
        out = os.path.join(self.tmp, "deb")
        p = subprocess.run(["cpack", "-G", "DEB", "-B", out, "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake")],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        debs = [f for f in os.listdir(out) if f.endswith(".deb")]
        self.assertEqual(len(debs), 1, os.listdir(out))
        deb = os.path.join(out, debs[0])
        info = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"], capture_output=True,
                              text=True, check=True).stdout
        self.assertIn("Package: querypilot", info)
        # Numbered as its library says it is (VERSION, or VERSION+dev.g<commit>
        # past the release: a build of work is never numbered as the release).
        self.assertIn("Version: %s\n" % self.version, info)
        self.assertTrue(debs[0].startswith("querypilot_%s_" % self.version), debs[0])
        self.assertIn("libcurl4", info)
        root = os.path.join(self.tmp, "root")
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        self.load_by_name(os.path.join(root, "usr", "lib"))
        self.docs_are_installed(os.path.join(root, "usr", "share", "doc", "querypilot"))


if __name__ == "__main__":
    unittest.main()
