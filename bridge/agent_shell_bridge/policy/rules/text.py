"""Rules for text tools: rg, sort, uniq, sed, awk, jq, tee."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from ..findings import Context, Finding
from ..options import _fixed_prefix, positional
from ..shell_words import Word
from .common import Rule, _is_option
from .places import _long_is, _outside_operand


def _rg(name: str, args: list[Word], ctx: Context) -> Finding:
    for w in args:
        if w.text.startswith(("--pre", "--hostname-bin")):
            return Finding.write(f"rg {w.text.split('=')[0]} runs a program on each file")
        if not w.literal:
            return Finding.write("rg with computed or globbed arguments could gain --pre")
    return Finding.read("rg is read-only")


def _sort(name: str, args: list[Word], ctx: Context) -> Finding:
    """``args`` are normalised (see :mod:`.options`): long names, values after ``=``."""
    for w in args:
        option = w.text.split("=", 1)[0]
        if option == "--compress-program":
            return Finding.write("sort --compress-program runs a program")
        if option == "--output":
            return Finding.write("sort --output writes a file")
        if option == "--files0-from":
            return Finding.write("sort --files0-from reads file names from data, unseen here")
        if option == "--temporary-directory":
            return Finding.write("sort --temporary-directory writes files there")
        if option == "--":
            break
    return Finding.read("sort is read-only")


def _uniq(name: str, args: list[Word], ctx: Context) -> Finding:
    """``args`` are normalised: every operand follows the first ``--``, so ``uniq --
    IN -c`` writes a file named ``-c`` and ``uniq -- -x .git/config`` writes .git."""
    if len(positional(args)) >= 2:
        return Finding.write("uniq INPUT OUTPUT writes a file")
    if any(not w.literal for w in args):
        return Finding.write("uniq with computed arguments could name an output file")
    return Finding.read("uniq is read-only")


def _sed_script_safe(script: str) -> bool:
    """Accept only sed scripts made of printing/deleting/substituting commands."""
    i, n = 0, len(script)

    def skip_regex(pos: int, delim: str) -> int:
        while pos < n and script[pos] != delim:
            pos += 2 if script[pos] == "\\" else 1
        return pos + 1

    while i < n:
        c = script[i]
        if c in " \t\n;{}!":
            i += 1
            continue
        if c.isdigit() or c in "$,~+":
            i += 1
            continue
        if c == "/":
            i = skip_regex(i + 1, "/")
            continue
        if c == "\\" and i + 1 < n:
            i = skip_regex(i + 2, script[i + 1])
            continue
        if c in "pdDnNgGhHxlq=QzFP":
            i += 1
            continue
        if c == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        if c in "sy" and i + 1 < n:
            delim = script[i + 1]
            if delim in "\\\n":
                return False
            i = skip_regex(i + 2, delim)
            i = skip_regex(i, delim)
            if c == "s":
                while i < n and script[i] not in ";}\n":
                    if script[i] not in "gpiImM0123456789 \t":
                        return False
                    i += 1
            continue
        if c in "bt:T" or c in "aic":
            while i < n and script[i] not in ";\n" if c in "bt:T" else i < n and script[i] != "\n":
                i += 1
            continue
        return False
    return True


def _sed(name: str, args: list[Word], ctx: Context) -> Finding:
    scripts: list[Word] = []
    files: list[Word] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if t in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if t.startswith("--expression="):
            scripts.append(Word(t.split("=", 1)[1], literal=w.literal))
        elif t.startswith("--in-place") or t in ("-f", "--file") or t.startswith("--file="):
            return Finding.write(f"sed {t} edits files or reads a script")
        elif t in (
            "-n",
            "--quiet",
            "--silent",
            "-E",
            "-r",
            "--regexp-extended",
            "-s",
            "--separate",
            "-z",
            "--null-data",
            "-u",
            "--unbuffered",
            "--posix",
            "--sandbox",
            "--debug",
        ):
            pass
        elif t.startswith("-") and not t.startswith("--") and len(t) > 1:
            if set(t[1:]) - set("nErszu"):
                return Finding.write(f"sed {t} may edit files in place")
        elif t.startswith("--"):
            return Finding.write(f"sed option {t} is not known to be harmless")
        else:
            files.append(w)
        i += 1
    if not scripts and files:
        scripts.append(files.pop(0))
    for s in scripts:
        if not s.literal or not _sed_script_safe(s.text):
            return Finding.write(
                "sed script may write files (w/W), run commands (e) or do more than print"
            )
    return Finding.read("sed prints transformed text")


_AWK_FLAGS = frozenset(
    {
        "-b", "--characters-as-bytes", "-c", "--traditional", "-P", "--posix", "-r",
        "--re-interval", "-S", "--sandbox", "-n", "--non-decimal-data", "-N",
        "--use-lc-numeric", "-s", "--no-optimize", "-O", "--optimize", "-t", "--lint-old",
        "-M", "--bignum",
    }
)  # fmt: skip


_AWK_VALUE = ("-F", "-v", "--assign", "--field-separator")


def _awk(name: str, args: list[Word], ctx: Context) -> Finding:
    programs: list[Word] = []
    operands: list[Word] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        option, eq, value = t.partition("=")
        if t == "--":
            operands.extend(args[i + 1 :])
            break
        if operands or t == "-" or not t.startswith("-"):
            operands.append(w)
        elif t in ("-e", "--source") or (_long_is(option, "--source") and not eq):
            if i + 1 < len(args):
                programs.append(args[i + 1])
            i += 1
        elif t.startswith("-e") and not t.startswith("--"):
            programs.append(Word(t[2:], literal=w.literal))
        elif _long_is(option, "--source"):
            programs.append(Word(value, literal=w.literal))
        elif t in _AWK_VALUE:
            i += 1
        elif t.startswith(("-F", "-v")) or option in _AWK_VALUE or t in _AWK_FLAGS:
            pass  # a separator, an assignment or a harmless switch
        elif t.startswith(("-f", "-E", "-l", "-i")) or any(
            _long_is(option, o) for o in ("--file", "--exec", "--load", "--include")
        ):
            return Finding.write(f"{name} {t} runs a program from a file")
        else:
            return Finding.write(f"{name} option {t} may write files or run programs")
        i += 1
    if not programs and operands:
        programs.append(operands[0])
    if not programs:
        return Finding.read(f"{name} with no program")
    for program in programs:
        if not program.literal:
            return Finding.write(f"{name} program is computed")
        if re.search(r"system|getline|[|>]|@|fflush|close|printf?\s*>", program.text):
            return Finding.write(f"{name} program may run commands or write files")
        if re.search(r"\bARG[VC]\b|\bENVIRON\b|\bPROCINFO\b", program.text):
            return Finding.write(
                f"{name} program changes which files it reads (ARGV/ARGC) or reads its environment"
            )
    return Finding.read(f"{name} program only prints")


# jq directives and builtins that load files from module search paths (which a
# program may extend: import "config" as $c {search: "~/.docker"}).
_JQ_MODULES_RE = re.compile(r"\b(import|include)\s*\"|\bmodulemeta\b")
_JQ_PAIRS = frozenset({"--arg", "--argjson", "--rawfile", "--slurpfile"})


def _jq(name: str, args: list[Word], ctx: Context) -> Finding:
    """jq reads its operands, and also files named by options and module directives."""
    if any(not w.literal and not w.pipe and not _fixed_prefix(w) for w in args):
        return Finding.write("jq with computed arguments could gain unsafe options")
    program: Word | None = None
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        i += 1
        if t == "--" or t == "-" or not t.startswith("-"):
            if t == "--":
                w = args[i] if i < len(args) else Word("")
                i = len(args)
            program = program or w
            continue
        if t in _JQ_PAIRS:
            if t in ("--rawfile", "--slurpfile") and i + 1 < len(args):
                found = _outside_operand(f"jq {t}", args[i + 1], ctx)
                if found is not None:
                    return found
            i += 2
        elif t == "--indent":
            i += 1
        elif t.split("=", 1)[0] in ("--from-file", "--library-path") or (
            not t.startswith("--") and ("f" in t or "L" in t)
        ):
            return Finding.write(
                f"jq {t} reads a program or modules from files or paths not seen here"
            )
    if program is not None and not program.literal:
        return Finding.write("jq program is computed")
    if program is not None and _JQ_MODULES_RE.search(program.text):
        return Finding.write("jq program loads modules or data from search paths (import/include)")
    return Finding.read("jq is read-only")


def _tee(name: str, args: list[Word], ctx: Context) -> Finding:
    if all(w.text in ("/dev/null", "-a", "--append") for w in args):
        return Finding.read("tee to /dev/null")
    for w in args:
        if _is_option(w):
            continue
        if not w.literal:
            return Finding.danger(f"tee writes a computed target {w.text!r}")
        reason = ctx.write_check(w.text, ctx.cwd or ctx.root)
        if reason is not None and w.text != "/dev/null":
            return Finding.danger(f"tee writes {w.text}: {reason}")
    return Finding.write("tee writes files")


# The programs this family judges, by name (the dispatcher merges the families).
RULES: Mapping[str, Rule] = MappingProxyType(
    {
        "rg": _rg,
        "sort": _sort,
        "uniq": _uniq,
        "sed": _sed,
        "awk": _awk,
        "jq": _jq,
        "tee": _tee,
    }
)
