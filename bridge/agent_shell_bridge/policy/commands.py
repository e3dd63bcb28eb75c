"""Risk rules for single simple commands: the dispatch.

The rules live by family in :mod:`.rules` (git, text tools, build tools, system
tools, shells and interpreters, places and globs) and in :mod:`.builtins`. This
module normalises options (:mod:`.options`), picks the rule, and applies what holds
for every command: substitutions, network options and protected paths. Each rule
looks at a normalised argv (see :mod:`.shell_parse`) and returns a :class:`Finding`:
the risk class, whether the command may run without asking, and a reason a person
(or the model) can act on. Unknown programs are ``write`` risk and never
auto-allowed; read-only programs are auto-allowed only when none of their options
can write files or run other programs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from ..types import Risk
from .builtins import BUILTINS, variable_target
from .findings import Context, Finding, worst
from .options import SPECS, normalise, positional
from .rules import build, git, system, text
from .rules.common import MULTI_CALL, Rule, effective_name, operands, program_name
from .rules.places import (
    READS_FILES,
    locate,
    names_protected,
    reads_outside,
    reads_outside_file,
    writes_through_links,
)
from .rules.shells import (
    INTERPRETER_RE,
    SHELLS,
    WRAPPERS,
    consumes_code,
    eval_rule,
    interpreter_rule,
    shell_rule,
    wrapper_rule,
)
from .rules.system import DEVICE_TOOLS_RE, RM_NAMES, rm_rule
from .shell_words import SimpleCommand, Word

__all__ = [
    "DOWNLOADERS",
    "Context",
    "Finding",
    "classify",
    "consumes_code",
    "effective_name",
    "locate",
    "program_name",
    "reads_outside_file",
    "worst",
]


DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request"})
_DB_CLIENTS = frozenset(
    {"psql", "mysql", "mariadb", "sqlite3", "mongo", "mongosh", "sqlcmd", "duckdb"}
)
_SAFE_ASSIGN = re.compile(
    r"^(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CI|COLUMNS|LINES|TERM"
    r"|PYTHONDONTWRITEBYTECODE|PYTHONUNBUFFERED|PYTHONHASHSEED|PYTHONIOENCODING"
    r"|RUST_BACKTRACE|RUST_LOG|CGO_ENABLED|GOOS|GOARCH|VERBOSE|DEBUG)$"
)
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
    "wc": ("--files0-from",),
    "du": ("--files0-from",),
    "file": ("--compile", "--files-from"),
    "md5sum": ("--check",),
    "sha1sum": ("--check",),
    "sha256sum": ("--check",),
    "sha512sum": ("--check",),
}
# Read-only programs that do more with some operands (after "--" too): change the
# machine's name or clock, or read further arguments from a file (binutils' @FILE).
_OPERAND_WRITES: dict[str, tuple[Callable[[str], bool], str]] = {
    "hostname": (lambda text: True, "hostname NAME changes the machine's settings"),
    "date": (lambda text: not text.startswith("+"), "date MMDDhhmm sets the system clock"),
    "strings": (lambda text: text.startswith("@"), "strings @FILE reads more options from FILE"),
}


def classify(cmd: SimpleCommand, ctx: Context) -> Finding:
    """Judge one simple command (assignments and argv; redirections are judged apart)."""
    ctx.classify_argv = _classify_argv
    findings: list[Finding] = []
    if cmd.kind == "bind":
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


def _classify_argv(argv: Sequence[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    name, plain, words = program_name(argv)
    if name in MULTI_CALL:
        listing = [w.text for w in argv[1:]] in ([], ["--list"], ["--help"])
        return (
            Finding.read(f"{name} lists its applets")
            if listing
            else Finding.write(f"{name} {argv[1].text} is not an applet known to be read-only")
        )
    args = list(argv[words:])
    spec = SPECS.get(name)
    if spec is not None:
        canonical = normalise(spec, args)
        if isinstance(canonical, str):
            return Finding.write(f"{name}: {canonical}")
        args = canonical
    result = _by_name(name, args, ctx, cmd)
    if result.risk is Risk.READ:
        result = _substitutions(name, args) or result
    network = _network(name, args)
    if network is not None:
        result = worst([network, result])
    writes = result.risk is Risk.WRITE
    if result.risk is Risk.READ and name in READS_FILES:
        result = reads_outside(name, args, ctx) or result
    if writes and name != "git":
        for w in args:
            if names_protected(w, ctx):
                result = Finding.danger(
                    f"{name} names {w.text!r}: .git or the agent's own settings or records"
                )
                break
        else:
            through_link = writes_through_links(name, args, ctx)
            if through_link is not None:
                result = worst([result, through_link])
    if not plain:
        trick = Finding.write(
            f"the command name {' '.join(w.text for w in argv[:words])!r} is quoted, "
            "escaped, computed or a path"
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


def _by_name(name: str, args: list[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    texts = [w.text for w in args]
    if DEVICE_TOOLS_RE.match(name):
        return Finding.danger(f"{name} can destroy file systems or stop the machine")
    if texts == ["--version"] or (
        name in ("go", "cargo", "npm", "node", "python", "python3")
        and texts in (["version"], ["-V"])
    ):
        return Finding.read(f"{name} --version")
    if name in WRAPPERS:
        return wrapper_rule(name, args, ctx, cmd)
    if name in SHELLS:
        return shell_rule(name, args, ctx, cmd)
    if name in ("eval", "source", "."):
        return eval_rule(name, args, ctx)
    if INTERPRETER_RE.match(name):
        return interpreter_rule(name, args, ctx)
    builtin = BUILTINS.get(name)
    if builtin is not None:
        return builtin(name, args, ctx)
    if name in _SIMPLE_READ:
        return _simple_read(name, args)
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(name, args, ctx)
    if name in RM_NAMES:
        return rm_rule(name, args, ctx)
    if name in DOWNLOADERS:
        return Finding.write(f"{name} reaches the network")
    if name in _DB_CLIENTS:
        return Finding.write(f"{name} talks to a database")
    return Finding.write(f"{name} is not known to be read-only")


def _simple_read(name: str, args: list[Word]) -> Finding:
    special = _OPERAND_WRITES.get(name)
    if special is not None:
        does_more, reason = special
        words = positional(args) if name in SPECS else operands(args)
        if any(does_more(w.text) for w in words):
            return Finding.write(reason)
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


_HANDLERS: Mapping[str, Rule] = MappingProxyType(
    {**build.RULES, **git.RULES, **system.RULES, **text.RULES}
)
