"""Rules for shells, interpreters, eval and wrappers that run other commands."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..findings import Context, Finding, worst
from ..shell_words import SimpleCommand, Word
from .build import _pytest
from .common import MULTI_CALL, classify_argv, program_name

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})


INTERPRETER_RE = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl[0-9.]*|ruby|php[0-9.]*|lua[0-9.]*"
    r"|luajit|rscript|tclsh|wish|pwsh|powershell|osascript|jshell|groovy|irb|ipython[0-9]*)$"
)


WRAPPERS = frozenset(
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


def consumes_code(cmd: SimpleCommand) -> bool:
    """Whether ``cmd`` would execute code it reads from stdin or its arguments."""
    if not cmd.argv:
        return False
    name, _, words = program_name(cmd.argv)
    if words > 1:
        return consumes_code(SimpleCommand(argv=cmd.argv[1:]))
    if name in SHELLS or name in ("eval", "source", ".", "xargs", *MULTI_CALL):
        return True
    if name in WRAPPERS and len(cmd.argv) > 1:
        return consumes_code(SimpleCommand(argv=_wrapped_argv(name, cmd.argv[1:])))
    if INTERPRETER_RE.match(name):
        rest = [w.text for w in cmd.argv[1:]]
        if not rest or rest[0] in ("-", "-c", "-e", "-E", "-r", "--eval", "-p", "--print"):
            return True
        positional = [t for t in rest if not t.startswith("-")]
        return not positional and "-m" not in rest
    return False


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


def wrapper_rule(name: str, args: list[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
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
        findings.append(classify_argv(inner, ctx, cmd))
    return worst(findings)


def _nested_text(word: Word, ctx: Context) -> Finding:
    if not word.literal:
        return Finding.write("runs computed shell code")
    inner = ctx.nested(word.text)
    return worst([inner, Finding.write("runs shell code given as a string")])


def shell_rule(name: str, args: list[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
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


def eval_rule(name: str, args: list[Word], ctx: Context) -> Finding:
    findings = [Finding.write(f"{name} runs code that is not visible here")]
    if name == "eval" and args:
        if all(w.literal for w in args):
            findings.append(ctx.nested(" ".join(w.text for w in args)))
        else:
            findings.append(Finding.write("eval of computed text"))
    return worst(findings)


def interpreter_rule(name: str, args: list[Word], ctx: Context) -> Finding:
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
