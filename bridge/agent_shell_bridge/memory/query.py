"""Turn user text into safe search terms for the trigram FTS5 index.

User text never reaches ``MATCH`` as syntax: it is cut into word and CJK runs, and
each term is emitted as a double-quoted FTS5 string, so quotes, ``NEAR``, ``AND``,
``*``, ``-``, ``^`` and column filters are all plain text.  The trigram tokenizer
cannot match terms shorter than three characters (two-character Chinese words such as
解析 are common), so those become ``short`` terms, matched in a second FTS5 table
whose tokens :func:`short_grams` makes: every CJK character and character pair and
every word of one or two letters.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

from .synonyms import STOPWORDS, cjk_words, expand_word, phrase_expansions, stem

__all__ = [
    "CJK",
    "Expansion",
    "QueryPlan",
    "fts_string",
    "like_pattern",
    "plan_query",
    "short_grams",
]

CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_TOKEN = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>[^\W{CJK}]+)")
MAX_QUERY_CHARS = 2000
MAX_TERMS = 24


STEM_WEIGHT = 0.8
SYNONYM_WEIGHT = 0.5
MAX_EXPANSIONS = 40


class Expansion(NamedTuple):
    """Another word for one of the query's units, counting ``weight`` of it (< 1)."""

    unit: int  # index into QueryPlan.units
    term: str
    weight: float


class QueryPlan(NamedTuple):
    """What to look for: ``units`` score coverage; the rest select candidates.

    ``expansions`` (stems, synonyms, the project's vocabulary) select candidates of
    their own and stand in for a missing unit at less than its weight.
    """

    units: tuple[str, ...]  # lower-cased terms whose presence is scored
    fts_terms: tuple[str, ...]  # >= 3 characters, searched in the trigram index
    like_terms: tuple[str, ...]  # < 3 characters, searched in the short-term index
    expansions: tuple[Expansion, ...] = ()

    def expanded(self, more: list[Expansion]) -> QueryPlan:
        """This plan with ``more`` expansions (those of known terms dropped)."""
        known = set(self.units) | {e.term for e in self.expansions}
        fresh: list[Expansion] = []
        for e in more:
            if e.term not in known:
                known.add(e.term)
                fresh.append(e)
        return self._replace(expansions=(*self.expansions, *fresh)[:MAX_EXPANSIONS])

    def expansion_terms(self, per_unit: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The terms that choose candidates for the trigram index and for the
        short-term index: the first ``per_unit`` expansions of each unit (its stem,
        then its synonyms in the table's order). The others still count in the
        score; leaving them out here keeps the MATCH, and its BM25, small."""
        taken: dict[int, int] = {}
        fts: list[str] = []
        short: list[str] = []
        for e in self.expansions:
            if taken.get(e.unit, 0) >= per_unit:
                continue
            taken[e.unit] = taken.get(e.unit, 0) + 1
            if len(e.term) >= 3:
                fts.append(e.term)
            elif " " not in e.term:
                short.append(e.term)
        return tuple(dict.fromkeys(fts)), tuple(dict.fromkeys(short))

    @property
    def empty(self) -> bool:
        return not self.units


def _dedupe(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))[:MAX_TERMS]


def plan_query(text: str) -> QueryPlan:
    """Split ``text`` into terms; never raises, whatever the input."""
    norm = unicodedata.normalize("NFKC", text[:MAX_QUERY_CHARS]).casefold()
    units: list[str] = []
    fts: list[str] = []
    like: list[str] = []
    singles: list[str] = []
    for m in _TOKEN.finditer(norm):
        tok = m.group(0).strip("_")
        if not tok:
            continue
        if m.group("cjk"):
            if len(tok) == 1:
                singles.append(tok)
            elif len(tok) == 2:
                units.append(tok)
                like.append(tok)
            elif len(tok) == 3:
                units.append(tok)
                fts.append(tok)
            else:
                # A run of Chinese is usually several words with no spaces: match its
                # trigrams for ranking and its bigrams (two-character words) by LIKE.
                bigrams = [tok[i : i + 2] for i in range(len(tok) - 1)]
                units.extend(bigrams)
                like.extend(bigrams)
                fts.extend(tok[i : i + 3] for i in range(len(tok) - 2))
        elif len(tok) == 1:
            singles.append(tok)
        elif len(tok) == 2:
            units.append(tok)
            like.append(tok)
        else:
            units.append(tok)
            fts.append(tok)
    if not units and singles:
        units, like = singles[:MAX_TERMS], singles[:MAX_TERMS]
    meaningful = [u for u in units if u not in STOPWORDS]
    if meaningful and len(meaningful) < len(units):
        # "the", "keeps": they match nearly every file and only dilute the rest.
        units = meaningful
        fts = [t for t in fts if t not in STOPWORDS]
        like = [t for t in like if t not in STOPWORDS]
    plan = QueryPlan(_dedupe(units), _dedupe(fts), _dedupe(like))
    return plan.expanded(_expansions(plan.units, norm))


def _expansions(units: tuple[str, ...], norm: str) -> list[Expansion]:
    """Stems and table synonyms of ``units``; phrases of the table found in ``norm``.

    Each unit's list holds its stem, then the synonyms of a phrase it starts ("web
    client" → "frontend" before "client" → "customer"), then its own synonyms; the
    lists are taken in turns, so that the cap on expansions (MAX_EXPANSIONS) leaves
    every unit some of its stand-ins rather than all to the first units.
    """
    phrased: list[list[Expansion]] = [[] for _ in units]
    own: list[list[Expansion]] = [[] for _ in units]
    for i, unit in enumerate(units):
        base = stem(unit)
        if base != unit and len(base) >= 3:
            phrased[i].append(Expansion(i, base, STEM_WEIGHT))
        own[i].extend(Expansion(i, w, SYNONYM_WEIGHT) for w in expand_word(unit))
    for phrase, synonyms in phrase_expansions(norm):
        owners = [i for i, u in enumerate(units) if u in phrase.split()]
        for i in owners[:1]:
            phrased[i].extend(Expansion(i, w, SYNONYM_WEIGHT) for w in synonyms)
    for run in re.findall(rf"[{CJK}]+", norm):
        for key, synonyms in cjk_words():
            pos = run.find(key)
            if pos < 0:
                continue
            unit = key if key in units else run[pos : pos + 2]
            if unit in units:
                i = units.index(unit)
                own[i].extend(Expansion(i, w, SYNONYM_WEIGHT) for w in synonyms)
    queues = [p + o for p, o in zip(phrased, own, strict=True)]
    out: list[Expansion] = []
    for depth in range(max((len(q) for q in queues), default=0)):
        out.extend(q[depth] for q in queues if depth < len(q))
    return out


@functools.cache
def _indexing_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """CJK runs, short word parts, short ASCII word parts: compiled when first indexing.

    The big character classes take milliseconds to compile; a one-shot search,
    which never indexes, does not pay for them.
    """
    return (
        re.compile(rf"[{CJK}]+"),
        # Parts of words ("go" in "go_lang"): runs of word characters but "_" and CJK.
        re.compile(rf"(?<![^\W_{CJK}])[^\W_{CJK}]{{1,2}}(?![^\W_{CJK}])"),
        re.compile(r"(?<![a-z0-9])[a-z0-9]{1,2}(?![a-z0-9])"),
    )


def short_grams(text: str) -> str:
    """The short-term index tokens of ``text``, space-separated, each once.

    Normalised as :func:`plan_query` normalises queries, so a short query term is
    found exactly where it occurs: CJK characters and adjacent pairs within a run,
    words (and ``_``-separated parts of words) of one or two characters.
    """
    cjk_run, short_part, ascii_short_part = _indexing_patterns()
    if text.isascii():  # NFKC and casefold of ASCII are lower()
        return " ".join(dict.fromkeys(ascii_short_part.findall(text.lower())))
    norm = unicodedata.normalize("NFKC", text).casefold()
    grams: list[str] = short_part.findall(norm)
    for run in cjk_run.findall(norm):
        grams += run
        grams += [run[i : i + 2] for i in range(len(run) - 1)]
    return " ".join(dict.fromkeys(grams))


def fts_string(term: str) -> str:
    """Quote ``term`` as an FTS5 string literal (an embedded ``"`` is doubled)."""
    return '"' + term.replace('"', '""') + '"'


def like_pattern(term: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching ``term`` anywhere."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
