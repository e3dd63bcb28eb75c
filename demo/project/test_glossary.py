"""Tests of the glossary: run them with `make test`."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

import glossary

HERE = Path(__file__).parent


class LoadTest(unittest.TestCase):
    def test_reads_terms_and_skips_comments(self) -> None:
        entries = glossary.load(HERE / "terms.txt")
        self.assertEqual(entries["agent"], "智能体")
        self.assertNotIn("# 注释", entries)


class ExportTest(unittest.TestCase):
    def test_round_trip(self) -> None:
        entries = {"memory": "记忆", "shell": "外壳"}
        self.assertEqual(json.loads(glossary.export_json(entries)), entries)

    def test_chinese_stays_readable(self) -> None:
        """Translators read this file: 智能体, not \\u667a\\u80fd\\u4f53."""
        text = glossary.export_json({"agent": "智能体"})
        self.assertIn('"agent": "智能体"', text)


if __name__ == "__main__":
    unittest.main()
