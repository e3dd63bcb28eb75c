"""Rules for build and test tools: pytest, go, cargo, npm, make."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from ..findings import Context, Finding
from ..shell_words import Word
from .common import Rule, _is_option

_PYTEST_FLAGS = frozenset(
    {
        "-q",
        "-qq",
        "-v",
        "-vv",
        "-vvv",
        "-x",
        "-s",
        "-l",
        "--lf",
        "--ff",
        "--nf",
        "--sw",
        "--co",
        "--collect-only",
        "--no-header",
        "--exitfirst",
        "--quiet",
        "--verbose",
        "--showlocals",
        "--strict-markers",
        "--runxfail",
        "--last-failed",
        "--failed-first",
        "--new-first",
        "--stepwise",
        "--no-cov",
        "--setup-show",
        "--version",
        "-h",
        "--help",
        "--markers",
        "--fixtures",
    }
)


_PYTEST_VALUE = frozenset({"-k", "-m", "-n", "-W", "--deselect", "--ignore", "--count", "-p"})


_PYTEST_EQ_PREFIX = (
    "--tb=",
    "--maxfail=",
    "--durations=",
    "--capture=",
    "--color=",
    "-r",
    "--deselect=",
    "--ignore=",
    "-n",
    "-W",
    "--timeout=",
)


_GO_TEST_VALUE = frozenset(
    {
        "-run",
        "-count",
        "-timeout",
        "-bench",
        "-p",
        "-tags",
        "-skip",
        "-parallel",
        "-cpu",
        "-list",
        "-benchtime",
        "-shuffle",
    }
)


_GO_TEST_FLAGS = frozenset(
    {
        "-v",
        "-race",
        "-short",
        "-cover",
        "-benchmem",
        "-failfast",
        "-json",
        "-trimpath",
        "-x",
        "-n",
        "-a",
    }
)


_CARGO_FLAGS = frozenset(
    {
        "--release",
        "-q",
        "--quiet",
        "-v",
        "-vv",
        "--verbose",
        "--lib",
        "--bins",
        "--tests",
        "--all-targets",
        "--workspace",
        "--all",
        "--all-features",
        "--no-default-features",
        "--no-fail-fast",
        "--no-run",
        "--doc",
        "--locked",
        "--offline",
        "--frozen",
    }
)


_CARGO_VALUE = frozenset(
    {
        "--features",
        "-F",
        "-p",
        "--package",
        "--test",
        "--bin",
        "-j",
        "--jobs",
        "--example",
        "--bench",
    }
)


_CARGO_TEST_BIN_OK = re.compile(
    r"^(--nocapture|--test-threads(=\d+)?|\d+|--ignored|--include-ignored|--exact|-q|--quiet|--show-output|--skip|[^-].*)$"
)


def _pytest(name: str, args: list[Word], ctx: Context) -> Finding:
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if not w.literal and _is_option(w):
            return Finding.write("pytest with computed options")
        if not _is_option(w):
            if not w.literal and not w.glob:
                return Finding.write("pytest with computed arguments")
            i += 1
            continue
        if t in _PYTEST_FLAGS:
            i += 1
        elif t in _PYTEST_VALUE:
            if t == "-p" and not (i + 1 < len(args) and args[i + 1].text.startswith("no:")):
                return Finding.write("pytest -p loads a plugin, which runs code")
            i += 2
        elif t.startswith(_PYTEST_EQ_PREFIX) and not t.startswith("-p"):
            i += 1
        else:
            return Finding.write(f"pytest option {t} is not known to be harmless")
    return Finding.read(f"{name} runs the project's tests")


def _go(name: str, args: list[Word], ctx: Context) -> Finding:
    if not args:
        return Finding.read("go help")
    sub = args[0].text
    rest = args[1:]
    if sub in ("version",):
        return Finding.read("go version")
    if sub == "env":
        if any(w.text in ("-w", "-u") for w in rest):
            return Finding.write("go env -w changes settings")
        return Finding.read("go env")
    if sub in ("test", "build", "vet", "list"):
        i = 0
        while i < len(rest):
            w = rest[i]
            t = w.text
            if not w.literal:
                return Finding.write(f"go {sub} with computed arguments")
            if not t.startswith("-"):
                if sub == "list" and ("@" in t or t == "all"):
                    return Finding.write(f"go list {t} may download modules (network)")
                i += 1
                continue
            key = t.split("=", 1)[0]
            if key.startswith("--"):
                key = key[1:]
            if sub == "list" and key in ("-u", "-versions", "-retracted", "-reuse"):
                return Finding.write(f"go list {key} queries module proxies (network)")
            if key in _GO_TEST_FLAGS or (sub == "list" and key in ("-m", "-json", "-f", "-deps")):
                i += 1
            elif key in _GO_TEST_VALUE:
                i += 1 if "=" in t else 2
            else:
                return Finding.write(f"go {sub} {key} can write files or run programs")
        return Finding.read(f"go {sub} builds or tests the project")
    return Finding.write(f"go {sub} changes files or modules")


def _cargo(name: str, args: list[Word], ctx: Context) -> Finding:
    if not args:
        return Finding.read("cargo help")
    sub = args[0].text
    if sub not in ("test", "build", "check", "t", "b", "c"):
        return Finding.write(f"cargo {sub} is not known to be harmless")
    rest = args[1:]
    i = 0
    while i < len(rest):
        w = rest[i]
        t = w.text
        if not w.literal:
            return Finding.write("cargo with computed arguments")
        if t == "--":
            if all(_CARGO_TEST_BIN_OK.match(x.text) and x.literal for x in rest[i + 1 :]):
                break
            return Finding.write("cargo test binary options not known to be harmless")
        if t in _CARGO_FLAGS or not t.startswith("-"):
            i += 1
        elif t in _CARGO_VALUE:
            i += 2
        elif t.split("=", 1)[0] in _CARGO_VALUE:
            i += 1
        else:
            return Finding.write(f"cargo option {t} is not known to be harmless")
    return Finding.read(f"cargo {sub} builds or tests the project")


def _npm(name: str, args: list[Word], ctx: Context) -> Finding:
    texts = [w.text for w in args]
    if any(not w.literal for w in args):
        return Finding.write(f"{name} with computed arguments")
    if texts[:1] in (["test"], ["t"], ["tst"]) or texts[:2] == ["run", "test"]:
        start = 1 if texts[0] != "run" else 2
        extra = texts[start:]
        if not extra or extra[0] == "--" or extra in (["--silent"], ["-s"]):
            return Finding.read(f"{name} test runs the project's tests")
        return Finding.write(f"{name} test with options that are not known to be harmless")
    if texts[:1] in (
        ["view"], ["v"], ["info"], ["show"], ["search"], ["s"], ["find"], ["outdated"],
        ["ping"], ["audit"], ["dist-tag"], ["access"], ["whoami"], ["owner"], ["repo"],
        ["docs"], ["bugs"],
    ):  # fmt: skip
        return Finding.write(f"{name} {texts[0]} asks the package registry (network)")
    if texts[:1] in (["ls"], ["list"], ["why"], ["explain"]) or not texts:
        return Finding.read(f"{name} {' '.join(texts[:1])} is read-only")
    return Finding.write(f"{name} {' '.join(texts[:1])} changes packages or runs scripts")


def _make(name: str, args: list[Word], ctx: Context) -> Finding:
    texts = [w.text for w in args]
    if (
        all(w.literal for w in args)
        and texts
        and texts[-1] in ("test", "check", "build", "lint")
        and all(
            t in ("-k", "-s", "--silent", "--keep-going") or re.match(r"^-j[0-9]*$", t)
            for t in texts[:-1]
        )
    ):
        return Finding.read(f"make {texts[-1]} runs the project's own target")
    return Finding.write("make runs recipes that are not known to be read-only")


# The programs this family judges, by name (the dispatcher merges the families).
RULES: Mapping[str, Rule] = MappingProxyType(
    {
        "go": _go,
        "cargo": _cargo,
        "npm": _npm,
        "pnpm": _npm,
        "yarn": _npm,
        "make": _make,
        "pytest": _pytest,
        "py.test": _pytest,
    }
)
