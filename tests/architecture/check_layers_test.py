"""check_layers.py fails where it should: on a copy of the tree (agent/,
ext/ and CMakeLists.txt), each case makes one change and expects the
checker to exit non-zero naming it; the unchanged copy passes.

Usage: check_layers_test.py SOURCE_DIR"""
import os, shutil, subprocess, sys, tempfile, unittest
ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")

def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, "%s holds no %r" % (path, old)
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))

class CheckLayersFails(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        for d in ("agent", "ext"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(self.dir, d))
        shutil.copy(os.path.join(ROOT, "CMakeLists.txt"), self.dir)
    def tearDown(self):
        shutil.rmtree(self.dir)
    def check(self):
        p = subprocess.run([sys.executable, CHECK, self.dir], capture_output=True, text=True)
        return p.returncode, p.stdout
    def test_the_tree_as_it_is_passes(self):
        rc, out = self.check()
        self.assertEqual(rc, 0, out)
    def test_an_include_of_a_folder_the_library_does_not_link(self):
        # sql/ links base/ alone: knowledge/ is above it.
        edit(os.path.join(self.dir, "agent/sql/sqltokens.cpp"), '#include "agent/sql/sqltokens.h"',
             '#include "agent/sql/sqltokens.h"\n#include "agent/knowledge/linking.h"')
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("agent/sql/sqltokens.cpp (sql) includes agent/knowledge/linking.h (knowledge), "
                      "which its library does not link", out)
    def test_a_link_the_folder_rule_does_not_allow(self):
        edit(os.path.join(self.dir, "CMakeLists.txt"), "target_link_libraries(qp_sql PUBLIC qp_base)",
             "target_link_libraries(qp_sql PUBLIC qp_memory qp_base)")
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("qp_sql (sql) links qp_memory (memory), which the folder's rule does not allow", out)
    def test_links_that_fall_short_of_the_folder_rule(self):
        edit(os.path.join(self.dir, "CMakeLists.txt"), "target_link_libraries(qp_knowledge PUBLIC qp_sql qp_base)",
             "target_link_libraries(qp_knowledge PUBLIC qp_base)")
        edit(os.path.join(self.dir, "CMakeLists.txt"), "target_link_libraries(qp_knowledge_sqlite PUBLIC qp_knowledge qp_sql qp_sql_sqlite",
             "target_link_libraries(qp_knowledge_sqlite PUBLIC qp_knowledge")
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("CMakeLists.txt links knowledge to base; its rule says base, sql", out)
        # ... and its includes of sql/ are held to what it links.
        self.assertIn("(knowledge) includes agent/sql/", out)
    def test_pure_code_linking_code_that_calls_sqlite(self):
        edit(os.path.join(self.dir, "CMakeLists.txt"), "target_link_libraries(qp_sql PUBLIC qp_base)",
             "target_link_libraries(qp_sql PUBLIC qp_base qp_base_sqlite)")
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("qp_sql never calls SQLite but links qp_base_sqlite, which does", out)
    def test_a_source_no_folder_library_compiles(self):
        with open(os.path.join(self.dir, "agent/sql/orphan.cpp"), "w") as f:
            f.write("// nothing\n")
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("agent/sql/orphan.cpp is compiled by no folder library", out)
    def test_a_source_in_the_library_of_another_folder(self):
        edit(os.path.join(self.dir, "CMakeLists.txt"), "  agent/sql/sqlrefs.cpp\n", "")
        edit(os.path.join(self.dir, "CMakeLists.txt"), "  agent/knowledge/linking.cpp\n",
             "  agent/knowledge/linking.cpp\n  agent/sql/sqlrefs.cpp\n")
        rc, out = self.check()
        self.assertEqual(rc, 1, out)
        self.assertIn("qp_knowledge compiles agent/sql/sqlrefs.cpp, which is not of its folder (knowledge)", out)

if __name__ == "__main__":
    unittest.main()
