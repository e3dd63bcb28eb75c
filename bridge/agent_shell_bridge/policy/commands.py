"""Risk rules for single simple commands.

Each rule looks at a normalised argv (see :mod:`.shell_parse`) and returns a
:class:`Finding`: the risk class, whether the command may run without asking, and a
reason a person (or the model) can act on. Unknown programs are ``write`` risk and
never auto-allowed; read-only programs are auto-allowed only when none of their
options can write files or run other programs.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import PathNotAllowed
from ..secrets import is_secret_resolved, secret_paths
from ..types import Risk
from .builtins import BUILTINS, variable_target
from .findings import Context, Finding, worst
from .options import SPECS, normalise
from .paths import protected_reason_for_parts, resolve_physical
from .shell_parse import SimpleCommand, Word, normalise_name

__all__ = [
    "DOWNLOADERS",
    "Context",
    "Finding",
    "classify",
    "consumes_code",
    "locate",
    "reads_outside_file",
    "worst",
]


DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
_INTERPRETER_RE = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl[0-9.]*|ruby|php[0-9.]*|lua[0-9.]*"
    r"|luajit|rscript|tclsh|wish|pwsh|powershell|osascript|jshell|groovy|irb|ipython[0-9]*)$"
)
_DB_CLIENTS = frozenset(
    {"psql", "mysql", "mariadb", "sqlite3", "mongo", "mongosh", "sqlcmd", "duckdb"}
)
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+:-]*$")
_SAFE_ASSIGN = re.compile(
    r"^(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CI|COLUMNS|LINES|TERM"
    r"|PYTHONDONTWRITEBYTECODE|PYTHONUNBUFFERED|PYTHONHASHSEED|PYTHONIOENCODING"
    r"|RUST_BACKTRACE|RUST_LOG|CGO_ENABLED|GOOS|GOARCH|VERBOSE|DEBUG)$"
)
_WRAPPERS = frozenset(
    {
        "env",
        "sudo",
        "doas",
        "su",
        "xargs",
        "timeout",
        "nice",
        "nohup",
        "command",
        "builtin",
        "time",
        "stdbuf",
        "ionice",
        "chroot",
        "setsid",
        "taskset",
        "strace",
        "ltrace",
        "watch",
        "flock",
        "unbuffer",
        "parallel",
        "exec",
        "chrt",
        "cgexec",
        "firejail",
        "runuser",
        "systemd-run",
        "prlimit",
        "unshare",
        "nsenter",
        "script",
        "faketime",
        "proot",
        "catchsegv",
        "valgrind",
        "busybox",
    }
)
# Options of wrappers that consume the next word.
_WRAPPER_VALUE_OPTS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}),
    "xargs": frozenset({"-I", "-n", "-P", "-d", "-L", "-a", "-E", "-s", "--arg-file", "-i"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "taskset": frozenset(),
    "flock": frozenset({"-w", "-E"}),
    "su": frozenset({"-c", "-s", "-g"}),
}
_SIMPLE_READ = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "pwd",
        "echo",
        "which",
        "whereis",
        "stat",
        "du",
        "df",
        "file",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "true",
        "false",
        ":",
        "whoami",
        "id",
        "uname",
        "type",
        "nl",
        "cut",
        "tr",
        "cmp",
        "comm",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "cksum",
        "printenv",
        "grep",
        "egrep",
        "fgrep",
        "diff",
        "column",
        "od",
        "seq",
        "expand",
        "unexpand",
        "tac",
        "rev",
        "fold",
        "paste",
        "join",
        "jq",
        "hostname",
        "nproc",
        "uptime",
        "free",
        "ps",
        "lsof",
        "locale",
        "tty",
        "groups",
        "getconf",
        "fmt",
        "strings",
        "look",
        "numfmt",
        "ldd",
        "date",
        "tree",
        "base64",
        "expr",
        "break",
        "continue",
        "exit",
        "return",
    }
)
# Read-only programs whose options can still write a file or run a program.
_READ_BAD_OPTS: dict[str, tuple[str, ...]] = {
    "date": ("--set",),
    "tree": ("--output", "-R"),
    "hostname": ("-F", "--file", "-b", "--boot"),
    "ldd": ("",),  # ldd may execute the binary it inspects
    "jq": ("-f", "--from-file", "--rawfile", "--slurpfile", "-L"),
    "wc": ("--files0-from",),
    "du": ("--files0-from",),
    "file": ("--compile", "--files-from"),
    "md5sum": ("--check",),
    "sha1sum": ("--check",),
    "sha256sum": ("--check",),
    "sha512sum": ("--check",),
}
# Read-only programs that change the machine when given an operand.
_OPERAND_WRITES = frozenset({"hostname"})
_RM_NAMES = frozenset({"rm", "shred", "unlink", "rmdir", "srm"})
_DEVICE_TOOLS_RE = re.compile(
    r"^(mkfs(\..+)?|mke2fs|mkswap|wipefs|fdisk|sfdisk|cfdisk|parted|gdisk|sgdisk|mkdosfs|blkdiscard"
    r"|mdadm|cryptsetup|shutdown|reboot|halt|poweroff|init|telinit|systemctl|kexec)$"
)
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


def _is_option(word: Word) -> bool:
    return word.text.startswith("-") and word.text != "-"


def effective_name(word: Word) -> tuple[str, bool]:
    """Return the name rules should use and whether it was written plainly."""
    raw = word.text
    folded = normalise_name(raw)
    base = folded.rsplit("/", 1)[-1] if "/" in folded and not folded.endswith("/") else folded
    plain = (
        word.literal
        and not word.quoted
        and raw == folded
        and (_PLAIN_NAME.match(raw) is not None or raw in ("[", "[["))
    )
    return base.lower() if not plain else base, plain


def consumes_code(cmd: SimpleCommand) -> bool:
    """Whether ``cmd`` would execute code it reads from stdin or its arguments."""
    if not cmd.argv:
        return False
    name, _ = effective_name(cmd.argv[0])
    if name in SHELLS or name in ("eval", "source", ".", "xargs", "busybox"):
        return True
    if name in _WRAPPERS and len(cmd.argv) > 1:
        return consumes_code(SimpleCommand(argv=_wrapped_argv(name, cmd.argv[1:])))
    if _INTERPRETER_RE.match(name):
        rest = [w.text for w in cmd.argv[1:]]
        if not rest or rest[0] in ("-", "-c", "-e", "-E", "-r", "--eval", "-p", "--print"):
            return True
        positional = [t for t in rest if not t.startswith("-")]
        return not positional and "-m" not in rest
    return False


def _path_text(word: Word, ctx: Context) -> str | None:
    """The path a word names, absolute, as the kernel would be given it; ``None`` if unknown.

    ``..`` is kept: folding it lexically would be wrong after a symlink.
    """
    text = word.text
    if not word.literal:
        only_tilde = (
            word.expansion
            and not word.glob
            and not word.substitution
            and text.startswith("~")
            and "$" not in text
            and "{" not in text
            and (len(text) == 1 or text[1] == "/")
        )
        if not only_tilde:
            return None
        text = str(ctx.home) + text[1:]
    if ctx.cwd is None and not text.startswith("/"):
        return None
    base = ctx.cwd if ctx.cwd is not None else ctx.root
    return os.path.join(base, text)


def locate(word: Word, ctx: Context) -> tuple[str, Path | None]:
    """Classify a path word as inside/temp/outside/wide/protected/unknown (lexically)."""
    joined = _path_text(word, ctx)
    if joined is None:
        return "unknown", None
    path = Path(os.path.normpath(joined))
    roots = (ctx.root, *ctx.extra)
    if len(path.parts) <= 2 or path == ctx.home:
        return "wide", path
    for anchor in (*roots, ctx.home):
        if anchor == path or anchor.is_relative_to(path):
            return "wide", path
    for r in roots:
        if path.is_relative_to(r):
            if protected_reason_for_parts(path.relative_to(r).parts) is not None:
                return "protected", path
            return "inside", path
    if path.is_relative_to(ctx.temp) and path != ctx.temp:
        return "temp", path
    return "outside", path


def _physical(word: Word, ctx: Context) -> Path | None:
    """Where the kernel would really take a path word (symlinks and ``..`` followed)."""
    joined = _path_text(word, ctx)
    if joined is None:
        return None
    try:
        return resolve_physical(Path(joined), (ctx.root, *ctx.extra))
    except PathNotAllowed:
        return None


def _within_roots(real: Path, ctx: Context) -> Path | None:
    """The allowed root holding the already resolved ``real``, or ``None``."""
    for r in (ctx.root, *ctx.extra):
        if real == r or real.is_relative_to(r):
            return r
    return None


def _protected_physically(word: Word, ctx: Context) -> bool:
    """Whether ``word`` leads, through links, to .git or the agent's settings or records."""
    real = _physical(word, ctx)
    if real is None:
        return False
    root = _within_roots(real, ctx)
    return root is not None and protected_reason_for_parts(real.relative_to(root).parts) is not None


def _wrapped_argv(name: str, args: Sequence[Word]) -> list[Word]:
    """Skip a wrapper's own options and return the command it runs."""
    value_opts = _WRAPPER_VALUE_OPTS.get(name, frozenset())
    i = 0
    while i < len(args):
        text = args[i].text
        if text == "--":
            i += 1
            break
        if name == "env" and "=" in text and not text.startswith("-"):
            i += 1
            continue
        if text.startswith("-") and text != "-":
            i += 2 if text in value_opts else 1
            continue
        if name == "timeout" and re.match(r"^[0-9.]+[smhd]?$", text):
            i += 1
            break
        if name in ("nice", "ionice", "chrt", "taskset") and re.match(r"^[0-9a-fx,.-]+$", text):
            i += 1
            continue
        break
    return list(args[i:])


def classify(cmd: SimpleCommand, ctx: Context) -> Finding:
    """Judge one simple command (assignments and argv; redirections are judged apart)."""
    findings: list[Finding] = []
    if cmd.kind == "for":
        # for/select NAME in …, or NAME assigned inside $(( )): judged by the name.
        for name, _ in cmd.assignments:
            found = variable_target(Word(name), "a loop or arithmetic")
            findings.append(found or Finding.read(f"assigns the plain variable {name}"))
        return worst(findings) if findings else Finding.read("loop")
    for name, value in cmd.assignments:
        if not cmd.argv and _SAFE_ASSIGN.match(name) is None:
            findings.append(
                Finding.write(f"sets shell variable {name}, which can change later commands")
            )
        elif _SAFE_ASSIGN.match(name) is None:
            findings.append(Finding.write(f"sets {name}, which can change how the program runs"))
        elif not value.literal:
            findings.append(Finding.write(f"assigns a computed value to {name}"))
    if not cmd.argv:
        return worst(findings) if findings else Finding.read("variable assignment")
    findings.append(_classify_argv(cmd.argv, ctx, cmd))
    return worst(findings)


# Read-only commands whose operands name files they read: reading outside the
# allowed roots (~/.ssh, /etc, a symlink planted in the repo) would send those bytes
# to the model, so such reads ask first.
_READS_FILES = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "stat", "du", "file", "nl", "cut", "cmp",
        "comm", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "grep", "egrep",
        "fgrep", "diff", "column", "od", "expand", "unexpand", "tac", "rev", "fold",
        "paste", "join", "jq", "sort", "uniq", "less", "more", "strings", "xxd",
        "hexdump", "tree", "rg", "find", "awk", "sed", "realpath", "readlink", "look",
        "fmt", "date", "base64",
    }
)  # fmt: skip
_MAX_GLOB_MATCHES = 2000
# Directory entries a glob may make us look at before giving up (a pattern such as
# /*/*/*/*/* would otherwise walk the whole machine, /proc loops included).
_MAX_GLOB_SCAN = 5000
# Options whose value (joined with = or as the next word) names a file to read.
_FILE_OPTIONS = frozenset(
    {
        "--file", "--from-file", "--to-file", "--exclude-from", "--include-from",
        "--contents", "--ignore-file", "--files-from", "--files0-from", "--reference",
        "--random-source", "--gitfile", "--infofile", "--hintro", "--houtro",
        "--magic-file",
    }
)  # fmt: skip
# Long options (or any unambiguous abbreviation) that give the pattern or program,
# so that no operand is one.
_CODE_OPTIONS = ("--regexp", "--expression", "--source", "--file", "--from-file")
# Commands whose first operand is a pattern, a program or a string, not a file.
_FIRST_OPERAND_IS_CODE = frozenset(
    {"grep", "egrep", "fgrep", "rg", "jq", "awk", "gawk", "mawk", "nawk", "sed", "look"}
)
# Per command: short options whose value is code, and short options whose value is a file.
_SHORT_CODE: dict[str, str] = {
    "grep": "e", "egrep": "e", "fgrep": "e", "rg": "e", "sed": "e", "awk": "e",
    "gawk": "e", "mawk": "e", "nawk": "e",
}  # fmt: skip
_SHORT_FILE: dict[str, str] = {
    "grep": "f", "egrep": "f", "fgrep": "f", "rg": "f", "sed": "f", "awk": "f",
    "gawk": "f", "mawk": "f", "nawk": "f", "jq": "f", "date": "fr",
}  # fmt: skip
# Short options that take a value, so letters after them in a cluster are not options.
_SHORT_VALUES: dict[str, str] = {
    "grep": "efmABCdD", "egrep": "efmABCdD", "fgrep": "efmABCdD",
    "rg": "ABCEMTdefgjmrt", "du": "BdtX", "tree": "LPIoHT", "ls": "ITw",
    "diff": "CDFILSUWxX",
}  # fmt: skip


def _long_is(option: str, full: str) -> bool:
    """Whether ``option`` is ``full`` or an abbreviation getopt would accept for it."""
    return len(option) > 3 and full.startswith(option)


def _short_letters(name: str, text: str) -> str:
    """The option letters of a short cluster such as ``-rnL``, up to a value option."""
    values = _SHORT_VALUES.get(name, "") + _SHORT_CODE.get(name, "") + _SHORT_FILE.get(name, "")
    out = []
    for ch in text[1:]:
        out.append(ch)
        if ch in values:
            break
    return "".join(out)


def _file_words(name: str, args: Sequence[Word]) -> list[Word]:
    """The words of a read-only command that name files it will read."""
    operands: list[Word] = []
    files: list[Word] = []
    # rg --files lists the files it would search: every operand is a path.
    code_by_option = name == "rg" and any(w.text == "--files" for w in args)
    code_letters = _SHORT_CODE.get(name, "")
    file_letters = _SHORT_FILE.get(name, "")
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        following = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if t == "--":
            operands.extend(x for x in args[i:] if x.text != "-" and not x.pipe)
            break
        if w.pipe:
            continue  # <(...) is a pipe, not a file
        if t == "-" or not t.startswith("-"):
            operands.append(w)
            continue
        if t.startswith("--"):
            option, eq, value = t.partition("=")
            names_code = any(_long_is(option, c) for c in _CODE_OPTIONS)
            # Abbreviations only of --file: --include is an option of its own, not
            # --include-from cut short.
            names_file = option in _FILE_OPTIONS or _long_is(option, "--file")
            code_by_option = code_by_option or names_code
            if eq:
                if names_file or (
                    not names_code and ("/" in value or value.startswith(("~", ".")))
                ):
                    files.append(Word(value, literal=w.literal, glob=w.glob, expansion=w.expansion))
            elif (names_code or names_file) and following is not None:
                if names_file:
                    files.append(following)
                i += 1  # the value, not an operand
            continue
        for pos, ch in enumerate(t[1:], start=1):
            if ch in code_letters or ch in file_letters:
                code_by_option = code_by_option or name in _FIRST_OPERAND_IS_CODE
                value = t[pos + 1 :]
                if value:
                    if ch in file_letters:
                        files.append(Word(value, literal=w.literal, expansion=w.expansion))
                elif following is not None:
                    if ch in file_letters:
                        files.append(following)
                    i += 1
                break
            if ch in _SHORT_VALUES.get(name, ""):
                break
    if name in _FIRST_OPERAND_IS_CODE and not code_by_option:
        operands = operands[1:]
    return operands + files


def _reads_outside(name: str, args: Sequence[Word], ctx: Context) -> Finding | None:
    base = name.split()[0]
    files = _file_words(base, args)
    for w in files:
        finding = _outside_operand(name, w, ctx)
        if finding is not None:
            return finding
    return _follows_links(base, args) or _searches_secrets(base, args, files, ctx)


_RECURSIVE_READERS = frozenset({"grep", "egrep", "fgrep", "diff", "rg"})


def _searches_secrets(
    name: str, args: Sequence[Word], files: Sequence[Word], ctx: Context
) -> Finding | None:
    """A recursive search of a folder holding ``~/.ssh`` and the like reads them too."""
    if name not in _RECURSIVE_READERS:
        return None
    if name != "rg" and not any(w.text in ("--recursive", "--dereference-recursive") for w in args):
        return None
    for w in files or [Word(".")]:
        real = _physical(w, ctx)
        if real is None or not (ctx.home == real or ctx.home.is_relative_to(real)):
            continue
        for secret in secret_paths(ctx.home):
            if os.path.lexists(secret):
                return Finding.write(
                    f"{name} searches {w.text!r}, which holds {secret} (the user's secrets)"
                )
    return None


def _secret_finding(
    name: str, w: Word, path: Path | None, real: Path | None, ctx: Context
) -> Finding | None:
    """Reading a key, token or credential file of the user always asks first."""
    for p in (path, real):
        if p is not None and is_secret_resolved(p, ctx.home):
            return Finding.write(f"{name} reads {w.text!r}: one of the user's secrets ({p})")
    return None


def _follows_links(name: str, args: Sequence[Word]) -> Finding | None:
    """A recursive read told to follow symlinks may be led out of the project by one."""
    follow: str | None = None
    recursive = False
    no_deref = False
    for w in args:
        t = w.text
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        option = t.partition("=")[0]
        letters = "" if t.startswith("--") else _short_letters(name, t)
        if name in ("grep", "egrep", "fgrep"):
            if "R" in letters or _long_is(option, "--dereference-recursive"):
                follow = t
        elif name == "rg":
            if "L" in letters or _long_is(option, "--follow"):
                follow = t
        elif name == "find":
            if t in ("-L", "-follow"):
                follow = t
        elif name == "du":
            if "L" in letters or option == "--dereference":
                follow = t
        elif name == "tree":
            if "l" in letters:
                follow = t
        elif name in ("ls", "diff"):
            if (name == "ls" and "L" in letters) or option == "--dereference":
                follow = follow or t
            if (name == "diff" and "r" in letters) or (name == "ls" and "R" in letters):
                recursive = True
            if _long_is(option, "--recursive"):
                recursive = True
            if _long_is(option, "--no-dereference"):
                no_deref = True
    if name == "diff" and recursive and not no_deref:
        return Finding.write(
            "diff -r follows symlinks, which may lead out of the project (add --no-dereference)"
        )
    if name == "ls" and not recursive:
        follow = None
    if follow is None:
        return None
    return Finding.write(f"{name} {follow} follows symlinks, which may lead out of the project")


def _outside_operand(name: str, w: Word, ctx: Context) -> Finding | None:
    if w.glob and not w.expansion and not w.substitution:
        return _glob_outside(name, w, ctx)
    if w.pipe:
        return None
    where, path = locate(w, ctx)
    if where == "unknown" or path is None:
        return Finding.write(f"{name} reads {w.text!r}, which cannot be located in advance")
    if path == Path("/dev/null"):
        return None
    real = _physical(w, ctx)
    secret = _secret_finding(name, w, path, real, ctx)
    if secret is not None:
        return secret
    if real is not None and _within_roots(real, ctx) is not None:
        return None  # e.g. "." is the project root itself
    if where in ("inside", "protected"):
        return Finding.write(f"{name} reads {w.text!r}, a link leading out of the project")
    return Finding.write(f"{name} reads {w.text!r}, outside the project ({real or path})")


def reads_outside_file(what: str, word: Word, ctx: Context) -> Finding | None:
    """A confirm finding when ``word`` (an input redirection target) reads outside."""
    return _outside_operand(what, word, ctx)


def _inside_roots(path: Path, ctx: Context) -> bool:
    try:
        real = resolve_physical(path)
    except PathNotAllowed:
        return False
    # Not the temp directory: other programs' tickets and secrets live there too.
    return _within_roots(real, ctx) is not None


_GLOB_CHAR_RE = re.compile(r"[*?\[]")
# Bash syntax Python's fnmatch reads differently: [^…], POSIX classes, equivalence
# classes, extglob and globstar. Such patterns cannot be expanded faithfully here.
_UNSUPPORTED_GLOB_RE = re.compile(r"\[\^|\[\[[:=.]|[?*+@!]\(|\*\*")


class _GlobRefused(Exception):
    """A glob that cannot be checked in advance; the message says why."""


def _glob_matches(word: Word, ctx: Context) -> list[Path]:
    """Expand a glob word now, as bash would, within a bounded amount of looking.

    Directories are only listed when they lie physically inside the allowed roots, so
    a pattern can never make the bridge walk the rest of the machine.
    """
    text = word.text
    if text.startswith("~/") or text == "~":
        text = str(ctx.home) + text[1:]
    if ctx.cwd is None and not text.startswith("/"):
        raise _GlobRefused("is relative to a directory not known in advance")
    if _UNSUPPORTED_GLOB_RE.search(text):
        raise _GlobRefused("uses glob syntax that cannot be checked in advance")
    full = text if text.startswith("/") else os.path.join(ctx.cwd or ctx.root, text)
    parts = full.split("/")
    first = next(i for i, p in enumerate(parts) if _GLOB_CHAR_RE.search(p))
    prefix = Path("/".join(parts[:first]) or "/")
    try:
        real_prefix = resolve_physical(prefix)
    except PathNotAllowed as exc:
        raise _GlobRefused(f"goes through {prefix}, which cannot be resolved") from exc
    if _within_roots(real_prefix, ctx) is None:
        raise _GlobRefused(f"looks in {prefix}, outside the project")
    frontier = [prefix]
    budget = _MAX_GLOB_SCAN
    for pattern in parts[first:]:
        if pattern in ("", "."):
            continue
        if not _GLOB_CHAR_RE.search(pattern):
            frontier = [d / pattern for d in frontier]  # pathlib keeps "..": resolved later
            continue
        found: list[Path] = []
        for d in frontier:
            try:
                real = resolve_physical(d)
            except PathNotAllowed as exc:
                raise _GlobRefused(f"goes through {d}, which cannot be resolved") from exc
            if _within_roots(real, ctx) is None:
                raise _GlobRefused(f"looks in {d}, outside the project")
            names: list[str] = []
            if pattern.startswith("."):
                names.extend((".", ".."))  # bash before 5.2 lets .* match them
            try:
                with os.scandir(real) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget < 0:
                            raise _GlobRefused("would look at too many files to check")
                        names.append(entry.name)
            except OSError:
                continue  # not a directory or unreadable: bash matches nothing there
            for n in names:
                if (n.startswith(".") and not pattern.startswith(".")) or not fnmatch.fnmatchcase(
                    n, pattern
                ):
                    continue
                found.append(d / n)
                if len(found) > _MAX_GLOB_MATCHES:
                    raise _GlobRefused("matches too many files to check")
        frontier = found
    matches = [m for m in frontier if os.path.lexists(m)]
    if not matches and "[" in full:
        # Bracket expressions are where bash and fnmatch can disagree: a pattern
        # that seems to match nothing may match something for bash.
        raise _GlobRefused("matches nothing here, so what it would name is unknown")
    return matches


def _glob_outside(name: str, word: Word, ctx: Context) -> Finding | None:
    """Expand a glob operand and check where each match really leads."""
    try:
        matches = _glob_matches(word, ctx)
    except _GlobRefused as exc:
        return Finding.write(f"{name} {word.text!r} {exc}")
    if not matches:
        # Bash passes a pattern that matches nothing on as it is: check that name.
        return _outside_operand(name, Word(word.text), ctx)
    for match in matches:
        if match.name.startswith("-"):
            return Finding.write(f"{name} {word.text!r} matches {match.name!r}, read as an option")
        if not _inside_roots(match, ctx):
            return Finding.write(f"{name} {word.text!r} reads {match}, outside the project")
        lexical = Path(os.path.normpath(match))
        secret = _secret_finding(
            name, Word(str(match)), lexical, _physical(Word(str(match)), ctx), ctx
        )
        if secret is not None:
            return secret
    return None


def _classify_argv(argv: Sequence[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    name, plain = effective_name(argv[0])
    args = list(argv[1:])
    spec = SPECS.get(name)
    if spec is not None:
        canonical = normalise(spec, args)
        if isinstance(canonical, str):
            return Finding.write(f"{name}: {canonical}")
        args = canonical
    result = _by_name(name, args, ctx, cmd)
    if result.risk is Risk.READ:
        result = _substitutions(name, args) or _network(name, args) or result
    writes = result.risk is Risk.WRITE
    if result.risk is Risk.READ and name in _READS_FILES:
        result = _reads_outside(name, args, ctx) or result
    if writes and name != "git":
        for w in args:
            if _names_protected(w, ctx):
                result = Finding.danger(
                    f"{name} names {w.text!r}: .git or the agent's own settings or records"
                )
                break
    if not plain:
        trick = Finding.write(
            f"the command name {argv[0].text!r} is quoted, escaped, computed or a path"
        )
        return worst([result, trick])
    return result


def _substitutions(name: str, args: Sequence[Word]) -> Finding | None:
    """Command output as arguments: only where no value could change what runs.

    The commands inside a substitution are judged on their own; here the question is
    whether their output, whatever it is, may reach this command as words. ``echo``
    prints them; ``printf`` with a literal format prints them; ``test``/``[`` compare
    them when quoted (``-v`` is handled by their rule). Anything else could be handed
    an option such as ``--output=.git/config`` by a file the agent does not control.
    """
    subs = [i for i, w in enumerate(args) if w.substitution and not w.pipe]
    if not subs:
        return None
    if name == "echo":
        return None
    if name == "printf" and args[0].literal and not args[0].text.startswith("-") and 0 not in subs:
        return None
    if name in ("test", "[") and all(args[i].quoted for i in subs):
        return None
    return Finding.write(
        f"{name} is given the output of a command substitution, which could add options"
    )


_NETWORK_OPTIONS = ("--registry", "--index-url", "--extra-index-url", "--proxy", "--server")


def _network(name: str, args: Sequence[Word]) -> Finding | None:
    for w in args:
        if w.text.startswith(_NETWORK_OPTIONS):
            return Finding.write(f"{name} {w.text.split('=', 1)[0]} reaches the network")
    return None


def _names_protected(w: Word, ctx: Context) -> bool:
    """Whether a word of a writing command names .git or the agent's settings or records.

    Checked as written, through symlinks, and for globs against what they match now.
    """
    if w.glob and not w.expansion and not w.substitution:
        try:
            matches = _glob_matches(w, ctx)
        except _GlobRefused:
            return False
        return any(_protected_physically(Word(str(m)), ctx) for m in matches) or any(
            locate(Word(str(m)), ctx)[0] == "protected" for m in matches
        )
    text = w.text
    if text.startswith("-"):
        # An option's value: --output=F, -oF after normalisation, --file=F.
        if "=" not in text:
            return False
        text = text.split("=", 1)[1]
    if not w.literal or not text:
        return False
    target = Word(text.split("=", 1)[-1] if not w.text.startswith("-") else text)
    return locate(target, ctx)[0] == "protected" or _protected_physically(target, ctx)


def _by_name(name: str, args: list[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    texts = [w.text for w in args]
    if _DEVICE_TOOLS_RE.match(name):
        return Finding.danger(f"{name} can destroy file systems or stop the machine")
    if texts == ["--version"] or (
        name in ("go", "cargo", "npm", "node", "python", "python3")
        and texts in (["version"], ["-V"])
    ):
        return Finding.read(f"{name} --version")
    if name in _WRAPPERS:
        return _wrapper(name, args, ctx, cmd)
    if name in SHELLS:
        return _shell(name, args, ctx, cmd)
    if name in ("eval", "source", "."):
        return _eval(name, args, ctx)
    if _INTERPRETER_RE.match(name):
        return _interpreter(name, args, ctx)
    builtin = BUILTINS.get(name)
    if builtin is not None:
        return builtin(name, args, ctx)
    if name in _SIMPLE_READ:
        return _simple_read(name, args)
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(name, args, ctx)
    if name in _RM_NAMES:
        return _rm(name, args, ctx)
    if name in DOWNLOADERS:
        return Finding.write(f"{name} reaches the network")
    if name in _DB_CLIENTS:
        return Finding.write(f"{name} talks to a database")
    return Finding.write(f"{name} is not known to be read-only")


def _simple_read(name: str, args: list[Word]) -> Finding:
    if name in _OPERAND_WRITES and any(not w.text.startswith("-") for w in args):
        return Finding.write(f"{name} NAME changes the machine's settings")
    bad = _READ_BAD_OPTS.get(name, ())
    for w in args:
        for opt in bad:
            if (
                opt == ""
                or w.text == opt
                or (opt.startswith("--") and w.text.startswith(opt + "="))
            ):
                return Finding.write(
                    f"{name} {w.text or ''} can write files or run programs".strip()
                )
    if bad and name not in SPECS and any(not w.literal for w in args):
        return Finding.write(f"{name} with computed arguments could gain unsafe options")
    return Finding.read(f"{name} is read-only")


def _wrapper(name: str, args: list[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    if name == "command" and args and args[0].text in ("-v", "-V"):
        return Finding.read("command -v looks a program up")
    if name == "env" and not args:
        return Finding.read("env prints the environment")
    findings = [Finding.write(f"{name} runs another command, which is never auto-allowed")]
    if name == "env":
        for i, w in enumerate(args):
            if w.text in ("-S", "--split-string") and i + 1 < len(args):
                findings.append(_nested_text(args[i + 1], ctx))
            elif w.text.startswith(("-S", "--split-string=")) and len(w.text) > 2:
                body = w.text.split("=", 1)[1] if w.text.startswith("--") else w.text[2:]
                findings.append(_nested_text(Word(body, literal=w.literal), ctx))
    if name in ("sudo", "doas", "su", "chroot", "nsenter", "unshare", "runuser"):
        findings.append(Finding.write(f"{name} changes privileges or isolation"))
        if name == "su":
            for i, w in enumerate(args):
                if w.text == "-c" and i + 1 < len(args):
                    findings.append(_nested_text(args[i + 1], ctx))
    inner = _wrapped_argv(name, args)
    if name == "xargs":
        inner = (
            [*inner, Word("<stdin items>", literal=False, expansion=True)]
            if inner
            else [Word("echo")]
        )
    if inner:
        findings.append(_classify_argv(inner, ctx, cmd))
    return worst(findings)


def _nested_text(word: Word, ctx: Context) -> Finding:
    if not word.literal:
        return Finding.write("runs computed shell code")
    inner = ctx.nested(word.text)
    return worst([inner, Finding.write("runs shell code given as a string")])


def _shell(name: str, args: list[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    texts = [w.text for w in args]
    findings = [Finding.write(f"{name} runs shell code, which is never auto-allowed")]
    for i, text in enumerate(texts):
        if text.startswith("-") and not text.startswith("--") and "c" in text[1:]:
            if i + 1 < len(args):
                findings.append(_nested_text(args[i + 1], ctx))
            break
        if not text.startswith("-"):
            break
    if not [t for t in texts if not t.startswith("-")]:
        if cmd.heredoc is not None:
            findings.append(_nested_text(Word(cmd.heredoc), ctx))
        for red in cmd.redirects:
            if red.op == "<<<" and red.target is not None:
                findings.append(_nested_text(red.target, ctx))
    return worst(findings)


def _eval(name: str, args: list[Word], ctx: Context) -> Finding:
    findings = [Finding.write(f"{name} runs code that is not visible here")]
    if name == "eval" and args:
        if all(w.literal for w in args):
            findings.append(ctx.nested(" ".join(w.text for w in args)))
        else:
            findings.append(Finding.write("eval of computed text"))
    return worst(findings)


def _interpreter(name: str, args: list[Word], ctx: Context) -> Finding:
    texts = [w.text for w in args]
    if name.startswith("python") and len(texts) >= 2 and texts[0] == "-m" and texts[1] == "pytest":
        return _pytest("pytest", args[2:], ctx)
    if name.startswith("python") and texts[:1] in (["-V"], ["--version"]):
        return Finding.read("python --version")
    if any(
        t in ("-c", "-e", "-E", "-r", "--eval", "-p", "--print") or re.match(r"^-[a-zA-Z]*[ce]$", t)
        for t in texts
    ):
        return Finding.write(f"{name} is given code to run")
    return Finding.write(f"{name} runs a program")


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


def _git(name: str, args: list[Word], ctx: Context) -> Finding:
    i = 0
    findings: list[Finding] = []
    while i < len(args) and _is_option(args[i]):
        t = args[i].text
        if t in (
            "--no-pager",
            "-P",
            "--no-optional-locks",
            "--literal-pathspecs",
            "--no-replace-objects",
        ):
            i += 1
        elif t == "-C" and i + 1 < len(args):
            real = _physical(args[i + 1], ctx)
            if real is None or _within_roots(real, ctx) is None:
                findings.append(Finding.write("git -C into a directory outside the project"))
            i += 2
        else:
            return Finding.write(f"git {t} can change configuration or run programs")
    if i >= len(args):
        return Finding.read("git help")
    sub = args[i].text
    rest = args[i + 1 :]
    texts = [w.text for w in rest]
    for w in rest:
        t = w.text
        if not w.literal and _is_option(w):
            return Finding.write("git with computed options")
        option = t.split("=", 1)[0]
        risky = next(
            (
                r
                for r in _GIT_RISKY_OPTIONS
                if t.startswith(r) or (len(option) >= 4 and r.startswith(option))
            ),
            None,
        )
        if risky is not None:
            if risky == "--output" and _names_protected(w, ctx):
                return Finding.danger(f"git {sub} {t} writes into .git or the agent's records")
            return Finding.write(f"git {sub} {option} can write files or run programs")
    if sub == "push":
        return _git_push(texts)
    read_subs = {
        "status", "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "blame",
        "describe", "shortlog", "reflog", "cat-file", "rev-list", "name-rev", "merge-base",
        "for-each-ref", "show-ref", "count-objects", "check-ignore", "version", "whatchanged",
        "grep", "annotate", "show-branch", "var", "cherry",
    }  # fmt: skip
    if sub == "grep" and any(t.startswith("-O") for t in texts):
        return Finding.write("git grep -O opens a pager program")
    if sub == "reflog" and texts[:1] and texts[0] in ("expire", "delete"):
        return Finding.write("git reflog expire/delete rewrites history")
    if sub in read_subs:
        findings.append(Finding.read(f"git {sub} is read-only"))
        if (sub == "diff" and "--no-index" in texts) or (
            sub in ("blame", "annotate") and any(t.startswith(("--contents", "-S")) for t in texts)
        ):
            outside = _reads_outside(f"git {sub}", rest, ctx)
            if outside is not None:
                findings.append(outside)
    elif sub in ("branch", "tag"):
        listing = {
            "-l",
            "--list",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--points-at",
            "--show-current",
            "-v",
            "-vv",
            "--verbose",
        }
        writes = {
            "-d",
            "-D",
            "--delete",
            "-m",
            "-M",
            "--move",
            "-c",
            "-C",
            "--copy",
            "-u",
            "--set-upstream-to",
            "--unset-upstream",
            "--edit-description",
            "-f",
            "--force",
            "-a",
            "-s",
            "-F",
            "--annotate",
            "--sign",
        }
        if sub == "branch":
            writes -= {"-a"}
        if any(t in writes or t.startswith("--set-upstream-to=") for t in texts):
            return Finding.write(f"git {sub} changes refs")
        if any(not t.startswith("-") for t in texts) and not any(
            t in listing or t.startswith("--format") or t.startswith("--sort") for t in texts
        ):
            return Finding.write(f"git {sub} NAME creates a ref")
        findings.append(Finding.read(f"git {sub} lists refs"))
    elif sub == "remote" and (
        not texts
        or texts in (["-v"], ["--verbose"], ["show"])
        or texts[:1] == ["get-url"]
        or texts[:2] == ["show", "-n"]
    ):
        findings.append(Finding.read("git remote lists remotes"))
    elif sub == "remote" and texts[:1] == ["show"]:
        return Finding.write("git remote show NAME contacts the remote (network)")
    elif sub == "stash" and texts[:1] in (["list"], ["show"]):
        findings.append(Finding.read("git stash list/show"))
    elif sub == "worktree" and texts[:1] == ["list"]:
        findings.append(Finding.read("git worktree list"))
    elif sub == "config":
        findings.append(_git_config(rest, ctx))
    else:
        findings.append(Finding.write(f"git {sub} changes the repository or its remotes"))
    return worst(findings)


_GIT_RISKY_OPTIONS = (
    "--output",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--ext-diff",
    "--open-files-in-pager",
    "--config-env",
    "--textconv",
)
_GIT_CONFIG_QUERIES = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l"})
_GIT_CONFIG_HARMLESS = frozenset(
    {
        "--local", "--worktree", "--show-origin", "--show-scope", "--null", "-z",
        "--name-only", "--bool", "--int", "--path", "--bool-or-int", "--no-includes",
    }
)  # fmt: skip


def _git_config(rest: Sequence[Word], ctx: Context) -> Finding:
    """``git config`` queries of the project's own configuration are read-only.

    Another file (``--file``, ``--blob``), the user's or the system's (``--global``,
    ``--system``, which may hold tokens) and every form that sets something ask.
    """
    texts = [w.text for w in rest]
    if not any(t in _GIT_CONFIG_QUERIES for t in texts):
        return Finding.write("git config changes settings")
    operands = 0
    i = 0
    while i < len(rest):
        w = rest[i]
        t = w.text
        i += 1
        if t in _GIT_CONFIG_QUERIES or t in _GIT_CONFIG_HARMLESS:
            continue
        if t.startswith(("--type=", "--default=")):
            continue
        if t in ("-f", "--file") or t.startswith("--file="):
            target = Word(t.split("=", 1)[1], literal=w.literal) if "=" in t else None
            if target is None:
                if i >= len(rest):
                    return Finding.write("git config --file without a file")
                target = rest[i]
                i += 1
            outside = _outside_operand("git config --file", target, ctx)
            if outside is not None:
                return outside
            continue
        if t.startswith("-"):
            return Finding.write(f"git config {t} reads or changes other configuration")
        operands += 1
    if operands > 2:
        return Finding.write("git config with these operands may set a value")
    return Finding.read("git config query of the project's settings")


def _git_push(texts: list[str]) -> Finding:
    for t in texts:
        if t in (
            "--force",
            "--force-with-lease",
            "--force-if-includes",
            "--mirror",
            "--delete",
            "--prune",
        ) or t.startswith(("--force-with-lease=", "--force-if-includes=")):
            return Finding.danger(f"git push {t} rewrites or deletes remote history")
        if re.match(r"^-[a-zA-Z]*[fd][a-zA-Z]*$", t):
            return Finding.danger(f"git push {t} forces or deletes remote refs")
        if not t.startswith("-") and (
            t.startswith("+")
            or (":" in t and t.split(":", 1)[0] == "" and not t.startswith(("http", "git@", "ssh")))
        ):
            return Finding.danger(f"git push {t} forces or deletes a remote ref")
        if ":+" in t or t.startswith(":"):
            return Finding.danger(f"git push {t} forces or deletes a remote ref")
    return Finding.write("git push publishes commits")


def _rg(name: str, args: list[Word], ctx: Context) -> Finding:
    for w in args:
        if w.text.startswith(("--pre", "--hostname-bin")):
            return Finding.write(f"rg {w.text.split('=')[0]} runs a program on each file")
        if not w.literal:
            return Finding.write("rg with computed or globbed arguments could gain --pre")
    return Finding.read("rg is read-only")


def _find(name: str, args: list[Word], ctx: Context) -> Finding:
    starts: list[Word] = []
    i = 0
    while i < len(args) and not args[i].text.startswith(("-", "(", "!")):
        starts.append(args[i])
        i += 1
    wide = False
    for s in starts or [Word(".")]:
        where, path = locate(s, ctx)
        if where in ("wide", "outside", "unknown", "protected") and path not in (
            ctx.root,
            *ctx.extra,
        ):
            wide = True
    findings: list[Finding] = []
    exprs = args[i:]
    j = 0
    while j < len(exprs):
        w = exprs[j]
        t = w.text
        if not w.literal and not w.quoted:
            findings.append(Finding.write("find with unquoted computed arguments"))
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            k = j + 1
            inner: list[Word] = []
            while k < len(exprs) and exprs[k].text not in (";", "+"):
                inner.append(exprs[k])
                k += 1
            findings.append(Finding.write(f"find {t} runs a command on each match"))
            if inner:
                inner = [
                    Word(w.text, literal=False, expansion=True) if w.text == "{}" else w
                    for w in inner
                ]
                sub = _classify_argv(inner, ctx, SimpleCommand(argv=inner))
                findings.append(sub)
                if wide and sub.risk is not Risk.READ:
                    findings.append(
                        Finding.danger(
                            f"find {t} over a wide tree with a command that changes files"
                        )
                    )
            j = k + 1
            continue
        if t == "-delete":
            findings.append(
                Finding.danger("find -delete over a wide or outside tree")
                if wide
                else Finding.write("find -delete removes files")
            )
        elif t in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            findings.append(Finding.write(f"find {t} writes a file"))
        j += 1
    return worst(findings) if findings else Finding.read("find without actions is read-only")


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
    positional = [w for w in args if not _is_option(w)]
    if len(positional) >= 2:
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


def _cd(name: str, args: list[Word], ctx: Context) -> Finding:
    targets = [w for w in args if not _is_option(w)]
    if not targets:
        ctx.cwd = None
        return Finding.write(f"{name} leaves the project")
    if targets[0].text == "-":
        ctx.cwd = None
        return Finding.write(f"{name} - goes to $OLDPWD, which is not known in advance")
    where, path = locate(targets[0], ctx)
    if name in ("pushd", "popd") or path is None:
        ctx.cwd = None
        return Finding.write(f"{name} to an unknown directory")
    real = _physical(targets[0], ctx)
    ctx.cwd = path
    if where in ("inside", "protected", "wide") and real is not None and _within_roots(real, ctx):
        return Finding.read(f"{name} within the project")
    return Finding.write(f"{name} leaves the project")


def _rm(name: str, args: list[Word], ctx: Context) -> Finding:
    recursive = False
    targets: list[Word] = []
    options_done = False
    for w in args:
        t = w.text
        if not options_done and t == "--":
            options_done = True
            continue
        if not options_done and _is_option(w):
            if t == "--no-preserve-root":
                return Finding.danger(f"{name} --no-preserve-root")
            if t in ("--recursive", "-R", "-r") or (
                not t.startswith("--") and set(t[1:]) & {"r", "R"}
            ):
                recursive = True
            continue
        targets.append(w)
    if name == "shred":
        recursive = True
    findings = [Finding.write(f"{name} removes files")]
    for w in targets:
        if w.glob and w.literal is False and not w.expansion and not w.substitution:
            head, _, base = w.text.rpartition("/")
            dir_word = Word(head or ("/" if w.text.startswith("/") else "."))
            where, dir_path = locate(dir_word, ctx)
            at_root = dir_path in (ctx.root, *ctx.extra)
            starts_wild = re.match(r"^\.?[*?\[]", base) is not None
            if (where not in ("inside", "temp") and not at_root) or (
                recursive and starts_wild and at_root
            ):
                findings.append(Finding.danger(f"{name} {w.text} matches a wide set of files"))
            continue
        where, path = locate(w, ctx)
        if where == "unknown" and recursive:
            findings.append(Finding.danger(f"{name} -r on a computed target {w.text!r}"))
        elif where == "unknown":
            findings.append(Finding.write(f"{name} of a computed target"))
        elif where == "wide":
            findings.append(
                Finding.danger(f"{name} of {w.text!r} would remove a wide tree ({path})")
            )
        elif where == "protected":
            findings.append(
                Finding.danger(f"{name} of {w.text!r} touches .git or the agent's own settings")
            )
        elif where == "outside":
            findings.append(Finding.danger(f"{name} of {w.text!r} reaches outside the project"))
    return worst(findings)


def _chmod(name: str, args: list[Word], ctx: Context) -> Finding:
    recursive = any(
        w.text in ("-R", "--recursive")
        or (w.text.startswith("-") and not w.text.startswith("--") and "R" in w.text)
        for w in args
    )
    positional = [w for w in args if not _is_option(w) or re.match(r"^-[rwxXst]+$", w.text)]
    targets = (
        positional[1:] if not any(w.text.startswith("--reference") for w in args) else positional
    )
    findings = [Finding.write(f"{name} changes permissions or ownership")]
    for w in targets:
        where, _ = locate(w, ctx)
        if where in ("wide", "outside") or (where == "unknown" and recursive):
            findings.append(
                Finding.danger(
                    f"{name} {'-R ' if recursive else ''}on {w.text!r} reaches beyond the project"
                )
            )
    return worst(findings)


def _dd(name: str, args: list[Word], ctx: Context) -> Finding:
    for w in args:
        if w.text.startswith("of="):
            target = w.text[3:]
            if target.startswith("/dev/") and target not in (
                "/dev/null",
                "/dev/stdout",
                "/dev/stderr",
            ):
                return Finding.danger("dd onto a device")
            if not w.literal:
                return Finding.danger("dd onto a computed target")
            reason = ctx.write_check(target, ctx.cwd or ctx.root)
            if reason is not None:
                return Finding.danger(f"dd writes {target}: {reason}")
    return Finding.write("dd copies raw data")


def _kill(name: str, args: list[Word], ctx: Context) -> Finding:
    if args and args[-1].text in ("-1", "1"):
        return Finding.danger(f"{name} {args[-1].text} signals every process")
    return Finding.write(f"{name} signals processes")


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


_Handler = Callable[[str, list[Word], Context], Finding]
_HANDLERS: dict[str, _Handler] = {
    "git": _git,
    "rg": _rg,
    "find": _find,
    "sort": _sort,
    "uniq": _uniq,
    "sed": _sed,
    "gsed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
    "cd": _cd,
    "pushd": _cd,
    "popd": _cd,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "dd": _dd,
    "kill": _kill,
    "pkill": _kill,
    "killall": _kill,
    "go": _go,
    "cargo": _cargo,
    "npm": _npm,
    "pnpm": _npm,
    "yarn": _npm,
    "make": _make,
    "pytest": _pytest,
    "py.test": _pytest,
    "tee": _tee,
}
