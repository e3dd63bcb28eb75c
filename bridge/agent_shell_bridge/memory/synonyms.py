"""Words for the same thing: stems and a small table of common developer synonyms.

A task is often worded differently from the lesson that would help it ("the page
is sluggish" for a lesson about a slow query).  The query's words are expanded here
with their stems and with the other members of each group below that contains
them; expansions count for less than the query's own words (ranking.py), so they
can find a lesson but never push an exact match down.

The groups are general vocabulary of software work, in English and Chinese; a
project's own vocabulary is learnt from its experience files (vocabulary.py).
"""

from __future__ import annotations

import functools
import re

__all__ = ["GROUPS", "STOPWORDS", "cjk_words", "expand_word", "phrase_expansions", "stem"]

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "from",
        "by",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "i",
        "we",
        "you",
        "he",
        "she",
        "they",
        "me",
        "my",
        "our",
        "your",
        "their",
        "us",
        "them",
        "do",
        "does",
        "did",
        "done",
        "doing",
        "not",
        "no",
        "so",
        "than",
        "then",
        "too",
        "very",
        "just",
        "only",
        "also",
        "even",
        "still",
        "again",
        "all",
        "any",
        "some",
        "every",
        "each",
        "more",
        "most",
        "much",
        "many",
        "can",
        "could",
        "will",
        "would",
        "should",
        "may",
        "might",
        "must",
        "when",
        "where",
        "why",
        "how",
        "what",
        "which",
        "who",
        "there",
        "here",
        "up",
        "out",
        "off",
        "into",
        "about",
        "after",
        "before",
        "since",
        "until",
        "while",
        "get",
        "gets",
        "got",
        "getting",
        "keep",
        "keeps",
        "kept",
        "make",
        "makes",
        "made",
        "say",
        "says",
        "said",
        "see",
        "sees",
        "saw",
        "seen",
        "show",
        "shows",
        "look",
        "looks",
        "like",
        "now",
        "really",
        "way",
        "thing",
        "things",
        "something",
        "anything",
        "nothing",
        "ever",
        "always",
        "sometimes",
        "same",
        "other",
        "another",
        "because",
        "though",
        "one",
        "yet",
        "its",
        "it's",
        "i'm",
        "don't",
        "doesn't",
        "won't",
        "can't",
        "isn't",
    ]
)

# Each line is one group of words used for the same thing (an indented line goes on
# with the group above).  A phrase (several
# words) expands when the query contains it; a word expands by itself or its stem.
_GROUPS_TEXT = """\
slow, sluggish, latency, laggy, lag, performance, speed, seconds, timeout, takes ages,
    takes forever
fail, failing, failure, broken, breaks, complains, complaining, error, errors, red, rejected
crash, crashes, crashed, panic, fatal, dies, died, killed, segfault, blows up, blew up,
    blowing up, internal error, traceback
hang, hangs, stuck, stall, stalls, freeze, freezes, blocks, deadlock, deadline
flaky, intermittent, sometimes, random, randomly, nondeterministic
lint, linter, linting, style, style check, checker, checks, static analysis,
    ruff, flake8, eslint, pylint
long lines, line too long, line length, line-length, e501, max line
page, pages, view, screen, listing, list, admin, dashboard, ui
home, homepage, home page, landing page, front page, first page, start page, index page
mobile, phone, phones, smartphone, smartphones, android, ios, tablet, small screens
frontend, front end, front-end, web client, client side, client-side, javascript, js,
    typescript, browser
silently, silent, ignored, ignores, no output, no effect, does nothing, stopped reporting,
    not applied, no rules, skipped
article, articles, post, posts, pages, docs, content
date, dates, timestamp, timestamps, datetime, time, calendar, month, day, locale
locale, language, languages, translation, translations, i18n, l10n, localization,
    german, french, spanish, japanese, arabic, chinese
timezone, time zone, tz, utc, midnight, dst, daylight saving, clock
database, db, sql, postgres, postgresql, mysql, sqlite, query, queries, index, indexes
connection, connections, pool, pooling, clients, too many connections
cache, cached, caching, stale, invalidate, invalidation
ci, pipeline, build, builds, workflow, github actions, runner, job
test, tests, testing, spec, specs, suite, pytest, unit test, e2e, end-to-end
browser, headless, playwright, selenium, e2e
memory, ram, oom, out of memory, heap, leak, rss
disk, storage, space, disk full, no space left
deploy, deploys, deployment, release, releases, rollout, roll out, ship, redeploy, upgrade
email, emails, mail, mails, smtp, spam, junk, inbox, deliverability
encoding, charset, utf-8, utf8, unicode, garbled, mojibake, weird characters, bom, gbk
container, containers, docker, dockerfile, image, pod, pods, kubernetes, k8s
upload, uploads, uploading, file size, too large, 413
login, logged out, signed out, sign in, session, sessions, auth
lock, locked, locking, busy, contention, concurrent
throttle, throttled, throttling, rate limit, rate limited, 429, too many requests, slowdown
search, searching, find, finding, lookup, results, index
image, images, picture, pictures, photo, photos, screenshot, screenshots
link, links, url, urls, anchor, anchors, href
seo, search engine, search engines, google, crawler, crawl, indexed, sitemap, search console,
    web results, web search, google results
payment, payments, checkout, billing, stripe, webhook
money, cent, cents, rounding, decimal, total, totals, price, tax, vat
order, orders, purchase, purchases, sale, sales
customer, customers, user, users, client, clients
product, products, catalogue, catalog, item, items
dependencies, dependency, packages, package, libraries, library, modules, deps, requirements
upgrade, upgrading, upgraded, bump, bumped, bumping, update, updated, new version
install, installing, installed, reinstall, reinstalling
type check, type checker, mypy, typing, types, static types, static checker, type errors
format, formatter, formatting, prettier, black, gofmt, wrap, rewrap
worker, workers, background, queue, queued, task, tasks, jobs, celery
restart, restarts, restarting, killed, exit code, evicted
font, fonts, glyph, glyphs, tofu, boxes, squares
pdf, export, exported, download, downloading
csv, spreadsheet, excel, export
monitoring, metrics, prometheus, grafana, dashboard
log, logs, logging, log files
api, endpoint, endpoints, rest, route
number, numbers, precision, float, rounded, int64, ids
schema, migration, migrations, compatible, incompatible
搜索, 检索, 查找, 找不到, 没有结果
中文, 汉字, 中文字符
慢, 太慢, 耗时, 性能, 卡顿
部署, 上线, 发布, 构建
乱码, 编码, 字符集
日期, 时间, 月份, 格式, 本地化
排序, 顺序, 拼音
字体, 方块, 豆腐块, 方框
链接, 跳转, 锚点, 目录
检查, 报错, 误报, lint
文件名, 压缩包, 解压
阅读时间, 字数, 分钟
"""

GROUPS: tuple[tuple[str, ...], ...] = tuple(
    tuple(w.strip().casefold() for w in group.split(",") if w.strip())
    for group in _GROUPS_TEXT.replace(",\n    ", ", ").splitlines()
    if group.strip()
)

_WORDS_ONLY = re.compile(r"^[a-z]+$")
_PHRASE_WORD = re.compile(r"[\w-]+")


def stem(word: str) -> str:
    """A light English stem ("complaining" → "complain", "swapped" → "swap", "lines"
    → "line"); other words (Chinese, identifiers, short ones) are returned as they are.

    Matching is by substring, so a stem only needs to be a prefix of its forms.
    """
    if len(word) < 4 or not _WORDS_ONLY.match(word):
        return word
    w = word
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif (
        w.endswith("sses") or (w.endswith("es") and w[-3] in "sxz") or w.endswith(("ches", "shes"))
    ):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed", "ly"):
        base = w[: -len(suffix)]
        if w.endswith(suffix) and len(base) >= 3 and re.search("[aeiouy]", base):
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "aeiouls":
                base = base[:-1]  # swapped → swap, but keep "install", "pass"
            w = base
            break
    return w


@functools.cache
def _by_word() -> dict[str, tuple[str, ...]]:
    """Every single word of the table (and its stem) → the members of its groups."""
    out: dict[str, list[str]] = {}
    for group in GROUPS:
        for member in group:
            if " " in member:
                continue
            for key in {member, stem(member)}:
                bucket = out.setdefault(key, [])
                bucket.extend(m for m in group if m != member and m not in bucket)
    return {k: tuple(v) for k, v in out.items()}


@functools.cache
def _phrases() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(
        (member, tuple(m for m in group if m != member))
        for group in GROUPS
        for member in group
        if " " in member
    )


@functools.cache
def cjk_words() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The table's Chinese words, each with its synonyms (Chinese has no spaces: they
    are looked for inside the query's runs of characters)."""
    table = _by_word()
    return tuple((k, v) for k, v in table.items() if k and "\u4e00" <= k[0] <= "\u9fff")


def expand_word(word: str) -> tuple[str, ...]:
    """The synonyms of ``word`` (case-folded), from the table; empty when none."""
    table = _by_word()
    return table.get(word) or table.get(stem(word)) or ()


def phrase_expansions(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The table's phrases found in ``text`` (case-folded), each with its synonyms."""
    padded = " " + " ".join(_PHRASE_WORD.findall(text)) + " "
    return tuple((p, syns) for p, syns in _phrases() if f" {p} " in padded)
