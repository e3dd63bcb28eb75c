"""What one experience file becomes in the index: its row, its short terms, its symbols.

A file that does not parse is still indexed, as text; a rejected or forgotten one
keeps a row with no text, so it stays known but is never found.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import MemoryError_
from .experience import clamp_text, parse_experience
from .frontmatter import body_after_front_matter
from .query import short_grams

__all__ = ["HIDDEN", "SEARCHED", "fill_aux", "ids_of", "record_of", "write_aux"]

SEARCHED = ("title", "tags", "symbols", "summary", "body", "search_terms")
#: Review states whose files are kept out of search (their rows hold no text).
HIDDEN = frozenset({"rejected", "forgotten"})
_DATE_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})--(.*)$")


def ids_of(conn: sqlite3.Connection, paths: list[str]) -> dict[str, int]:
    """The row id of each of PATHS that the index holds."""
    out: dict[str, int] = {}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT path, id FROM experiences WHERE path IN ({marks})"  # noqa: S608
        out.update((p, i) for p, i in conn.execute(sql, chunk))
    return out


def write_aux(conn: sqlite3.Connection, rows: list[tuple[int, dict[str, Any]]]) -> None:
    """(Re)write the short-term tokens and the symbols of these experiences."""
    if not rows:
        return
    ids = [(rid,) for rid, _ in rows]
    conn.executemany("DELETE FROM experiences_short WHERE rowid = ?", ids)
    conn.executemany("DELETE FROM experience_symbols WHERE experience_id = ?", ids)
    conn.executemany(
        "INSERT INTO experiences_short (rowid, grams) VALUES (?, ?)",
        [(rid, short_grams("\n".join(str(r[c]) for c in SEARCHED))) for rid, r in rows],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO experience_symbols (symbol, experience_id) VALUES (?, ?)",
        [
            (sym, rid)
            for rid, r in rows
            for sym in {s.strip().casefold() for s in str(r["symbols"]).split("\n")}
            if sym
        ],
    )


def fill_aux(conn: sqlite3.Connection) -> None:
    """Fill the short-term and symbol tables for every row (after migrating to them)."""
    cols = ", ".join(("id", *SEARCHED))
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = [
            (row[0], dict(zip(SEARCHED, row[1:], strict=True)))
            for row in conn.execute(f"SELECT {cols} FROM experiences")  # noqa: S608
        ]
        write_aux(conn, rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def record_of(path: Path, data: bytes, root: str, project: str) -> dict[str, Any]:
    """The index row for one file; a file that does not parse is still indexed as text."""
    text = data.decode("utf-8", errors="replace")
    stem = path.name.removesuffix(".md")
    m = _DATE_PREFIX.match(stem)
    file_date, file_title = (m.group(1), m.group(2)) if m else ("", stem)
    try:
        exp = parse_experience(text)
    except MemoryError_ as exc:
        body = body_after_front_matter(text.replace("\r\n", "\n"))
        return {
            "path": str(path),
            "root": root,
            "project": project,
            "title": file_title,
            "date": file_date,
            "task_type": "",
            "tags": "",
            "symbols": "",
            "trigger_reason": "",
            "summary": clamp_text(body, 300),
            "body": body,
            "search_terms": "",
            "status": "",
            "parse_error": exc.message,
        }
    body = body_after_front_matter(text.removeprefix("\ufeff").replace("\r\n", "\n"))
    if exp.status in HIDDEN:
        return {
            "path": str(path),
            "root": root,
            "project": project,
            "title": exp.title,
            "date": exp.date or file_date,
            "task_type": exp.task_type,
            "tags": "",
            "symbols": "",
            "trigger_reason": "",
            "summary": "",
            "body": "",
            "search_terms": "",
            "status": exp.status,
            "parse_error": None,
        }
    return {
        "path": str(path),
        "root": root,
        "project": project,
        "title": exp.title,
        "date": exp.date or file_date,
        "task_type": exp.task_type,
        "tags": "\n".join(exp.tags),
        "symbols": "\n".join(exp.symbols),
        "trigger_reason": exp.trigger,
        "summary": exp.summary,
        "body": body,
        "search_terms": "\n".join(exp.search_terms),
        "status": exp.status,
        "parse_error": None,
    }
