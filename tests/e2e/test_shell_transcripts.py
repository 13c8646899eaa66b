"""`sqlite>` transcripts replayed through the real interactive sqlite3 shell:
every transcript in README.md, and every tests/sql/*.transcript file. Each runs
against a fresh shop database and the demo's scripted model."""
import glob
import json
import os
import shutil
import tempfile
import unittest

from harness import DEMO_SCRIPT, SOURCE_DIR, ScriptedLLM, make_shop_db, replay_transcript, transcripts_in_markdown


class TranscriptTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DEMO_SCRIPT) as f:
            cls.script = json.load(f)
        cls.llm = ScriptedLLM()

    @classmethod
    def tearDownClass(cls):
        cls.llm.close()

    def replay(self, transcript):
        tmp = tempfile.mkdtemp(prefix="qp-transcript-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = make_shop_db(tmp)
        self.llm.load(self.script)
        expected, actual = replay_transcript(db, transcript, self.llm.env())
        self.maxDiff = None
        self.assertEqual(actual, expected)

    def test_readme_transcripts(self):
        blocks = transcripts_in_markdown(os.path.join(SOURCE_DIR, "README.md"))
        self.assertGreaterEqual(len(blocks), 2, "README.md should show sqlite> transcripts")
        for i, block in enumerate(blocks):
            with self.subTest(block=i):
                self.replay(block)

    def test_sql_transcripts(self):
        files = sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "sql", "*.transcript")))
        self.assertTrue(files)
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                with open(path) as f:
                    self.replay(f.read())


if __name__ == "__main__":
    unittest.main()
