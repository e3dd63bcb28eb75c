"""A tiny bilingual glossary (术语表) for the docs site.

`load` reads `term = 翻译` lines; `export_json` writes the JSON the site
serves.  Translators edit that JSON by hand, so it must stay readable.
"""

from __future__ import annotations

import json
from pathlib import Path


def load(path: Path) -> dict[str, str]:
    """Read `term = translation` lines, skipping blank lines and # comments."""
    entries: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        term, _, translation = line.partition("=")
        entries[term.strip()] = translation.strip()
    return entries


def export_json(entries: dict[str, str]) -> str:
    """The glossary as pretty JSON, sorted by term."""
    return json.dumps(entries, indent=2, sort_keys=True)
