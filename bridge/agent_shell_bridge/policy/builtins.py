"""Shell builtins that assign variables, rebind names or evaluate text as code.

Bash assigns variables in many more ways than ``VAR=value``: ``for VAR in``,
``select``, ``read``, ``printf -v``, ``mapfile``, ``$((VAR=1))``, ``declare``,
``export``, ``local``, ``typeset``, ``readonly``, ``let``. Each is judged like a
``VAR=`` prefix: assigning a variable that steers programs (``PATH``, ``HOME``,
``IFS``, ``GIT_*``, ``LD_*`` …) needs the user's yes, and a name with an array
subscript is refused outright as automatic, since bash evaluates the subscript as
arithmetic and ``a[$(cmd)]`` runs ``cmd``. The same evaluation happens in
``[[ X -eq Y ]]``, ``test -v`` and ``(( ))``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .findings import Context, Finding, worst
from .shell_words import Word

__all__ = ["BUILTINS", "SENSITIVE_VAR", "variable_target"]

SENSITIVE_VAR = re.compile(
    r"^(PATH|HOME|CDPATH|OLDPWD|PWD|IFS|BASH_ENV|ENV|SHELL|SHELLOPTS|BASHOPTS|GLOBIGNORE"
    r"|PS[0-4]|PROMPT_COMMAND|TMPDIR|TMP|TEMP|EDITOR|VISUAL|PAGER|MANPAGER|LESSOPEN"
    r"|LESSCLOSE|BROWSER|HISTFILE|INPUTRC|TERMINFO|FPATH|MAKEFLAGS|MFLAGS|FUNCNEST|MAIL.*"
    r"|NODE_OPTIONS|NODE_PATH|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|JAVA_TOOL_OPTIONS"
    r"|_JAVA_OPTIONS|GCONV_PATH|LOCPATH|NLSPATH|HOSTALIASES|RESOLV_.*|XDG_.*|GIT_.*|LD_.*"
    r"|DYLD_.*|PYTHON.*|BASH.*|SSH_.*|GNUPG.*|GPG_.*|NPM_CONFIG_.*|npm_config_.*|CARGO_.*"
    r"|RUSTC.*|RUSTFLAGS|GO(FLAGS|PROXY|PATH|ROOT|TOOLCHAIN|ENV|PRIVATE|NOSUMDB)|CC|CXX|CPP"
    r"|CFLAGS|CXXFLAGS|LDFLAGS|PKG_CONFIG.*|SUDO_.*|COMP_.*|KUBECONFIG|DOCKER_.*|AWS_.*"
    r"|.*_PROXY|.*_proxy|http_proxy|https_proxy|no_proxy)$"
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def variable_target(word: Word, how: str) -> Finding | None:
    """Why assigning the variable named by ``word`` (``how`` says by what) must ask."""
    name = word.text
    if not word.literal:
        return Finding.write(f"{how} assigns a variable whose name is computed")
    if "[" in name:
        return Finding.write(
            f"{how} assigns the array element {name!r}; bash evaluates the subscript as code"
        )
    if _NAME.match(name) is None:
        return Finding.write(f"{how} names an unusual variable {name!r}")
    if SENSITIVE_VAR.match(name):
        return Finding.write(f"{how} assigns {name}, which changes how later commands run")
    return None


def _targets(how: str, names: Sequence[Word]) -> Finding | None:
    found = [f for f in (variable_target(w, how) for w in names) if f is not None]
    return worst(found) if found else None


def _split_options(
    args: Sequence[Word], values: str, flags: str
) -> tuple[list[tuple[str, Word | None]], list[Word]] | str:
    """Read a builtin's short options (``values`` take an argument)."""
    opts: list[tuple[str, Word | None]] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if not w.literal and t.startswith(("-", "$", "`", '"', "'")):
            return f"the computed argument {t!r} could turn into an option"
        if t == "--":
            i += 1
            break
        if not t.startswith("-") or t == "-":
            break
        i += 1
        for pos, letter in enumerate(t[1:], start=1):
            if letter in values:
                rest = t[pos + 1 :]
                if rest:
                    opts.append((letter, Word(rest, literal=w.literal)))
                elif i < len(args):
                    opts.append((letter, args[i]))
                    i += 1
                else:
                    return f"-{letter} needs a value"
                break
            if letter not in flags:
                return f"-{letter} is not an option this builtin is known to take"
            opts.append((letter, None))
    return opts, list(args[i:])


def _printf(name: str, args: list[Word], ctx: Context) -> Finding:
    if args and not args[0].literal and not args[0].quoted:
        return Finding.write("printf with a computed first word could gain -v")
    if args and args[0].text.startswith("-v"):
        target = args[0].text[2:]
        word = Word(target, literal=args[0].literal) if target else None
        if word is None:
            if len(args) < 2:
                return Finding.write("printf -v without a name")
            word = args[1]
        return _targets("printf -v", [word]) or Finding.read("printf -v sets a plain variable")
    return Finding.read("printf prints text")


def _read(name: str, args: list[Word], ctx: Context) -> Finding:
    parsed = _split_options(args, "adinNptu", "ers")
    if isinstance(parsed, str):
        return Finding.write(f"read: {parsed}")
    opts, names = parsed
    arrays = [v for letter, v in opts if letter == "a" and v is not None]
    return _targets("read", [*names, *arrays]) or Finding.read("read sets plain variables")


def _mapfile(name: str, args: list[Word], ctx: Context) -> Finding:
    parsed = _split_options(args, "dnOsuCc", "t")
    if isinstance(parsed, str):
        return Finding.write(f"{name}: {parsed}")
    opts, names = parsed
    if any(letter == "C" for letter, _ in opts):
        return Finding.write(f"{name} -C runs a callback, which is code")
    return _targets(name, names[:1]) or Finding.read(f"{name} fills a plain array")


def _hash(name: str, args: list[Word], ctx: Context) -> Finding:
    parsed = _split_options(args, "pd", "rlt")
    if isinstance(parsed, str):
        return Finding.write(f"hash: {parsed}")
    opts, _ = parsed
    if any(letter == "p" for letter, _ in opts):
        return Finding.write("hash -p binds a command name to another program")
    if any(letter == "d" for letter, _ in opts):
        return Finding.write("hash -d changes which program a name runs")
    return Finding.read("hash looks programs up")


def _declare(name: str, args: list[Word], ctx: Context) -> Finding:
    printing = set("pfFx") if name == "export" else set("pfFgaAirxlnut")
    options = [w for w in args if w.text.startswith("-")]
    operands = [w for w in args if not w.text.startswith("-")]
    if not operands and all(w.literal and set(w.text[1:]) <= printing for w in options):
        if name in ("local", "readonly") and options:
            return Finding.write(f"{name} {options[0].text} changes variables")
        return Finding.read(f"{name} prints variables or functions")
    if any(w.text.startswith("-") and "p" in w.text for w in options) and all(
        w.literal and _NAME.match(w.text) for w in operands
    ):
        return Finding.read(f"{name} -p prints variables")
    findings = [Finding.write(f"{name} sets shell variables or attributes")]
    for w in operands:
        target = Word(w.text.split("=", 1)[0].split("+", 1)[0], literal=w.literal)
        found = variable_target(target, name)
        if found is not None:
            findings.append(found)
    return worst(findings)


def _test(name: str, args: list[Word], ctx: Context) -> Finding:
    """``test``, ``[`` and ``[[``: ``-v`` evaluates a subscript.

    The operands ``[[`` evaluates as arithmetic (``[[ $n -gt 0 ]]``) are checked by
    the parser, which knows which variables the command itself set to numbers.
    """
    texts = [w.text for w in args]
    for i, w in enumerate(args):
        if i == 0 or texts[i - 1] != "-v":
            continue
        if "[" in w.text or not w.literal:
            return Finding.write(
                f"{name} evaluates {w.text!r} as arithmetic or a variable name, which may run code"
            )
    if any(w.substitution and not w.quoted for w in args):
        return Finding.write(f"{name} with an unquoted command substitution")
    return Finding.read(f"{name} tests a condition")


def _write_always(reason: str) -> Callable[[str, list[Word], Context], Finding]:
    def rule(name: str, args: list[Word], ctx: Context) -> Finding:
        return Finding.write(f"{name} {reason}")

    return rule


def _listing(
    reason: str, read_opts: frozenset[str]
) -> Callable[[str, list[Word], Context], Finding]:
    """Builtins that only print when given no operands (``trap``, ``alias``)."""

    def rule(name: str, args: list[Word], ctx: Context) -> Finding:
        if all(w.literal and w.text in read_opts for w in args):
            return Finding.read(f"{name} prints its settings")
        return Finding.write(f"{name} {reason}")

    return rule


_Rule = Callable[[str, list[Word], Context], Finding]
BUILTINS: dict[str, _Rule] = {
    "printf": _printf,
    "read": _read,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    "hash": _hash,
    "declare": _declare,
    "typeset": _declare,
    "local": _declare,
    "export": _declare,
    "readonly": _declare,
    "test": _test,
    "[": _test,
    "[[": _test,
    "let": _write_always("evaluates arithmetic that can assign variables"),
    "((": _write_always("evaluates arithmetic that can assign variables"),
    "enable": _listing("loads or switches builtins", frozenset({"-a", "-p", "-s", "-n"})),
    "trap": _listing("installs code to run on a signal", frozenset({"-p", "-l"})),
    "alias": _listing("rebinds a command name", frozenset({"-p"})),
    "unalias": _write_always("changes which command a name runs"),
    "shopt": _listing("changes how the shell reads commands", frozenset({"-p"})),
    "bind": _write_always("changes key bindings"),
    "complete": _write_always("installs completion code"),
    "compgen": _write_always("can run completion functions"),
    "fc": _write_always("re-runs commands from history"),
    "history": _write_always("can rewrite the shell's history"),
    "getopts": _write_always("assigns variables"),
    "unset": _write_always("removes variables or functions"),
}
