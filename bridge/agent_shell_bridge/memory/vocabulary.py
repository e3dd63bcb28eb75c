"""A project's own vocabulary, learnt from its experience files.

Words that the same experiences use together in their search terms and tags (say
"checkout" with "stripe", or "导出" with "excel") are likely to describe the same
problems in this project. A query word that is such a word is expanded with its most
frequent companions, at a lower weight than the built-in synonyms (ranking.py
never lets an expansion outweigh the word itself).

Built from the project's newest experiences when first needed and kept by the
index until it changes.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .query import Expansion, QueryPlan
from .synonyms import STOPWORDS, stem

__all__ = ["PROJECT_WEIGHT", "Vocabulary", "build_vocabulary"]

PROJECT_WEIGHT = 0.35
MAX_EXPERIENCES = 2000  # the newest: older vocabulary matters less and costs more
MIN_TOGETHER = 2  # two words met together in fewer experiences tell nothing
PER_WORD = 4

_WORD = re.compile(r"[a-z][a-z0-9+#.-]{2,}|[\u4e00-\u9fff]{2,}")


def _words(text: str) -> set[str]:
    return {stem(w.strip(".-")) for w in _WORD.findall(text.casefold())} - STOPWORDS


@dataclass
class Vocabulary:
    """For each word, its most frequent companions in the project's experiences."""

    companions: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def expansions(self, plan: QueryPlan) -> list[Expansion]:
        out: list[Expansion] = []
        for i, unit in enumerate(plan.units):
            for word in self.companions.get(stem(unit), ()):
                out.append(Expansion(i, word, PROJECT_WEIGHT))
        return out


def build_vocabulary(conn: sqlite3.Connection, project: str) -> Vocabulary:
    """Count which words the project's experiences use together (search terms, tags)."""
    rows = conn.execute(
        "SELECT search_terms, tags FROM experiences WHERE project = ? "
        "AND status NOT IN ('rejected', 'forgotten') ORDER BY date DESC LIMIT ?",
        (project, MAX_EXPERIENCES),
    ).fetchall()
    together: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for terms, tags in rows:
        words = sorted(_words(f"{terms}\n{tags}"))[:40]
        for a in words:
            for b in words:
                if a != b:
                    together[a][b] += 1
    companions = {
        word: tuple(w for w, n in counts.most_common(PER_WORD) if n >= MIN_TOGETHER)
        for word, counts in together.items()
    }
    return Vocabulary({w: c for w, c in companions.items() if c})
