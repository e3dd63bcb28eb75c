"""Deterministic synthetic experiences with labelled queries, for recall benchmarks.

``generate(n, seed=…)`` makes ``n`` experiences spread over a few projects, mixing
Chinese and English, each with a unique identifier symbol and a distinctive pair of
topic words; every labelled query targets one experience (its relevant index) using
words a person would type: topic words in either language, sometimes a symbol.
``write_corpus`` puts them on disk as real experience files and ``recall_at_k`` scores
a :class:`MemoryIndex` against the labels.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .experience import Experience, render_experience, slugify
from .index import MemoryIndex

__all__ = ["LabelledQuery", "SyntheticCorpus", "generate", "recall_at_k", "write_corpus"]

# (English, Chinese) topic words; pairs of them make each experience distinctive.
_TOPICS: tuple[tuple[str, str], ...] = (
    ("parser", "解析"),
    ("cache", "缓存"),
    ("timeout", "超时"),
    ("encoding", "编码"),
    ("migration", "迁移"),
    ("deadlock", "死锁"),
    ("logging", "日志"),
    ("retry", "重试"),
    ("config", "配置"),
    ("permission", "权限"),
    ("memory leak", "内存泄漏"),
    ("serializer", "序列化"),
    ("scheduler", "调度"),
    ("pagination", "分页"),
    ("websocket", "长连接"),
    ("index", "索引"),
    ("transaction", "事务"),
    ("upload", "上传"),
    ("download", "下载"),
    ("compression", "压缩"),
    ("certificate", "证书"),
    ("proxy", "代理"),
    ("locale", "本地化"),
    ("thread pool", "线程池"),
    ("rate limit", "限流"),
    ("checksum", "校验和"),
    ("snapshot", "快照"),
    ("rollback", "回滚"),
    ("queue", "队列"),
    ("template", "模板"),
    ("font", "字体"),
    ("clipboard", "剪贴板"),
    ("signal", "信号"),
    ("benchmark", "基准测试"),
    ("dependency", "依赖"),
    ("packaging", "打包"),
    ("search", "搜索"),
    ("session", "会话"),
    ("token", "令牌"),
    ("keymap", "键位"),
)
_STACKS = ("go", "python", "rust", "typescript", "elisp", "java", "sql", "shell")
_TASKS = ("bugfix", "feature", "refactor", "build", "test", "config")
_VERBS = (("fix", "修复"), ("speed up", "加速"), ("add", "新增"), ("rewrite", "重写"))
_SYLLABLES = ("ka", "lo", "mi", "ru", "ze", "to", "pa", "vi", "xu", "ne", "qo", "sa")


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    """A query and the experience indices (into ``SyntheticCorpus.experiences``) it wants."""

    query: str
    project: str
    symbols: tuple[str, ...]
    relevant: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SyntheticCorpus:
    experiences: list[Experience]
    queries: list[LabelledQuery]
    projects: tuple[str, ...]


def _ident(rng: random.Random, i: int) -> str:
    word = "".join(rng.choice(_SYLLABLES) for _ in range(3))
    return f"{word}{i:05d}"


def generate(
    n: int, *, seed: int = 0, n_queries: int = 100, n_projects: int = 8
) -> SyntheticCorpus:
    """Make ``n`` experiences and up to ``n_queries`` labelled queries, reproducibly."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    projects = tuple(f"proj-{p:02d}" for p in range(max(1, n_projects)))
    exps: list[Experience] = []
    keys: list[tuple[int, int, str, str]] = []
    for i in range(n):
        a, b = rng.sample(range(len(_TOPICS)), 2)
        stack = rng.choice(_STACKS)
        project = projects[i % len(projects)]
        chinese = rng.random() < 0.5
        verb = rng.choice(_VERBS)
        ident = _ident(rng, i)
        ta, tb = _TOPICS[a], _TOPICS[b]
        func = f"{ta[0].replace(' ', '_')}_{ident}"
        if chinese:
            title = f"{verb[1]}{ta[1]}与{tb[1]}问题（{stack}）"
            summary = f"{ta[1]}在{tb[1]}场景下出错：{func} 需要先检查{tb[1]}状态再处理。"
            goal = f"{verb[1]} {project} 中 {func} 的{ta[1]}问题。"
            steps = f"1. 复现{ta[1]}错误\n2. 定位 {func}\n3. 修改后运行测试通过"
            decisions = f"- 在{tb[1]}之前处理{ta[1]}，避免重复调用"
            pitfalls = f"- {stack} 的{tb[1]}行为与文档不同"
        else:
            title = f"{verb[0].capitalize()} {ta[0]} with {tb[0]} ({stack})"
            summary = f"{ta[0]} broke under {tb[0]}: {func} must check the {tb[0]} state first."
            goal = f"{verb[0].capitalize()} the {ta[0]} problem in {func} of {project}."
            steps = f"1. Reproduce the {ta[0]} failure\n2. Find {func}\n3. Fix it; tests pass"
            decisions = f"- Handle {ta[0]} before {tb[0]} to avoid double calls"
            pitfalls = f"- {stack} {tb[0]} behaves unlike its documentation"
        day = 1 + (i % 28)
        month = 1 + (i // 28) % 12
        exps.append(
            Experience(
                title=title,
                date=f"2025-{month:02d}-{day:02d}",
                project=project,
                task_type=rng.choice(_TASKS),
                tags=[stack, ta[0], tb[0]],
                symbols=[func, f"{ident}.{stack}"],
                trigger="synthetic",
                summary=summary,
                goal=goal,
                steps=steps,
                key_decisions=decisions,
                pitfalls=pitfalls,
                open_issues="None" if not chinese else "无",
            )
        )
        keys.append((a, b, stack, func))
    queries: list[LabelledQuery] = []
    if n:
        picks = rng.sample(range(n), min(n_queries, n))
        for q, i in enumerate(picks):
            a, b, stack, func = keys[i]
            ta, tb = _TOPICS[a], _TOPICS[b]
            # Chinese experiences carry English tags, so any language finds them;
            # English ones are only findable in English (no cross-lingual matching).
            chinese = "\u4e00" <= exps[i].title[0] <= "\u9fff"
            lang = q % 3 if chinese else 1  # 0: Chinese words, 1: English, 2: mixed
            words = (
                f"{ta[1]} {tb[1]}"
                if lang == 0
                else f"{ta[0]} {tb[0]}"
                if lang == 1
                else f"{ta[1]} {tb[0]}"
            )
            use_symbol = q % 2 == 0
            text = f"{words} {func}" if use_symbol else f"{words} {stack}"
            relevant = tuple(
                j
                for j, k in enumerate(keys)
                if k[3] == func or (not use_symbol and k[:3] == (a, b, stack))
            )
            queries.append(
                LabelledQuery(
                    query=text,
                    project=exps[i].project,
                    symbols=(func,) if use_symbol else (),
                    relevant=relevant,
                )
            )
    return SyntheticCorpus(experiences=exps, queries=queries, projects=projects)


def write_corpus(base: Path, corpus: SyntheticCorpus) -> list[Path]:
    """Write each experience under ``base/<project>/.agent-shell/memory/``.

    Returns the file paths, aligned with ``corpus.experiences``.
    """
    paths: list[Path] = []
    for i, exp in enumerate(corpus.experiences):
        directory = base / exp.project / ".agent-shell" / "memory"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{exp.date}--{slugify(exp.title)}-{i}.md"
        path.write_bytes(render_experience(exp).encode("utf-8"))  # no fsync: bench data
        paths.append(path)
    return paths


def recall_at_k(
    index: MemoryIndex,
    corpus: SyntheticCorpus,
    paths: Sequence[Path],
    *,
    k: int = 5,
) -> float:
    """Fraction of queries with at least one relevant file among the top ``k`` hits."""
    if not corpus.queries:
        return 0.0
    found = 0
    for lq in corpus.queries:
        want = {str(paths[i].resolve()) for i in lq.relevant}
        hits = index.search(lq.query, project=lq.project, symbols=lq.symbols, limit=k)
        if any(h.path in want for h in hits):
            found += 1
    return found / len(corpus.queries)
