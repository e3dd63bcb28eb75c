"""The policy engine: one decision per tool call.

``check_command`` parses a command line, judges every simple command, redirection
and risky construct, and takes the worst: anything dangerous is denied unless the
project allowlist names that exact simple command; anything that is not read-only,
or that uses a construct the parser cannot vouch for, waits for the user; the rest
runs at once. ``resolve_path``/``check_path`` confine file tools to the project.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import PathNotAllowed
from ..project.trust import TrustRecord, allowlist_path
from ..types import Decision, Risk, Verdict
from .allowlist import Allowlist, AllowlistError, parse_allowlist
from .commands import (
    DOWNLOADERS,
    Context,
    Finding,
    classify,
    consumes_code,
    program_name,
    reads_outside_file,
    worst,
)
from .paths import Confinement, expand_home, resolve_physical
from .rules.places import link_out_of_project, writes_through_links
from .secrets import BUILTIN, SecretList
from .shell_parse import ParsedCommand, Redirect, SimpleCommand, parse_command

__all__ = ["MAX_COMMAND_CHARS", "Judgement", "PolicyEngine"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Judgement:
    """The policy's verdict on a command line, and the parse it judged."""

    verdict: Verdict
    parsed: ParsedCommand | None = None


MAX_COMMAND_CHARS = 16_384
_MAX_NESTING = 4
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_DROP_RE = re.compile(r"\bdrop\s+(database|schema)\b", re.IGNORECASE)
_OUTPUT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
# Looking for secrets in a tool's arguments: words split at blanks and option '=',
# at most this many looked at (arguments come from the model and may be long).
_ARGUMENT_WORD_SPLIT = re.compile(r"[\s=,;]+")
_MAX_ARGUMENT_WORDS = 5_000
_FD_DUP_RE = re.compile(r"[0-9]+-?|-")
# In ASCII text the only invisible characters are the controls (category Cc).
_ASCII_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _invisible(command: str) -> str | None:
    if command.isascii():
        found = _ASCII_CONTROL_RE.search(command)
        return f"U+{ord(found.group()):04X}" if found is not None else None
    for ch in command:
        if ch in "\n\t":
            continue
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Cs", "Co", "Cn") or ch in "\u2028\u2029":
            return f"U+{ord(ch):04X}"
    return None


class PolicyEngine:
    """Decides allow / confirm / deny for commands and file paths of one project."""

    def __init__(
        self,
        root: Path,
        *,
        extra_paths: Sequence[Path] = (),
        allowlist: Allowlist | None = None,
        home: Path | None = None,
        extra_secrets: Sequence[str] = (),
    ) -> None:
        self.secrets: SecretList = BUILTIN.with_extra(extra_secrets)
        self._confinement = Confinement.create(root, extra_paths, home=home, secrets=self.secrets)
        # "none", "applied", "trusted", "untrusted" or "invalid" (see for_project).
        self.allowlist_status = "applied" if allowlist is not None else "none"
        self._allowlist = allowlist or Allowlist()
        self._home = self._confinement.home
        self._secret_roots = self.secrets.real_roots(self._home)
        self._temp = resolve_physical(Path(os.path.abspath(tempfile.gettempdir())))

    @classmethod
    def for_project(
        cls,
        root: Path,
        *,
        extra_paths: Sequence[Path] = (),
        trust: TrustRecord | None = None,
        home: Path | None = None,
        extra_secrets: Sequence[str] = (),
        allowlist_root: Path | None = None,
    ) -> PolicyEngine:
        """Build the engine for ``root``, reading ``.agent-shell/allowlist.el`` if present.

        ``allowlist_root`` is where that file is read and trusted, when not ``root``:
        the main working tree for a session in a linked git worktree.

        With ``trust`` (agent sessions), the allowlist applies only when the user has
        trusted its current content; ``allowlist_status`` says which case held.
        Without it (the user's own ``policy check`` audits) the file applies as is.
        """
        owner = allowlist_root or root
        path = allowlist_path(owner)
        status = "none"
        allowlist = None
        # Read once: what is parsed is exactly what is hashed for trust.
        read = _read_allowlist(path)
        if read is not None:
            content, via_link = read
            # Parsing is safe (a data reader); an allowlist naming nothing needs no trust.
            try:
                found = _parse_allowlist_bytes(path, content)
            except AllowlistError:
                if trust is None:
                    raise  # the user's own audit: say what is wrong
                found, status = Allowlist(), "invalid"  # a session still starts
            if found.entries:
                if trust is None:
                    allowlist, status = found, "applied"
                elif not via_link and trust.is_trusted_content(owner, content):
                    allowlist, status = found, "trusted"
                else:
                    status = "untrusted"
        engine = cls(
            root,
            extra_paths=extra_paths,
            allowlist=allowlist,
            home=home,
            extra_secrets=extra_secrets,
        )
        engine.allowlist_status = status
        return engine

    @property
    def root(self) -> Path:
        return self._confinement.root

    @property
    def allowlist(self) -> Allowlist:
        return self._allowlist

    def secret_named_in(self, value: object) -> str | None:
        """A word in ``value`` (tool arguments, nested) naming one of the user's secrets.

        For tools the bridge cannot see into (MCP): a path to ``~/.ssh/id_rsa`` in
        their arguments, alone or inside a longer string (``cat ~/.aws/credentials``,
        ``--file=$HOME/.netrc``), makes the call ask like any read of a secret.
        """
        stack: list[object] = [value]
        words = 0
        check = self.secrets.checker(self._home)
        while stack and words < _MAX_ARGUMENT_WORDS:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)
            elif isinstance(item, str):
                for word in {item, *_ARGUMENT_WORD_SPLIT.split(item)}:
                    words += 1
                    word = word.strip("'\"`")
                    if "/" not in word and not word.startswith(("~", "$")):
                        continue
                    try:
                        expanded = expand_home(word, self._home)
                    except PathNotAllowed:
                        continue
                    if "\x00" in expanded:
                        continue
                    path = Path(expanded) if os.path.isabs(expanded) else self.root / expanded
                    if check(path):
                        return word
        return None

    # -- paths -------------------------------------------------------------

    def resolve_path(self, path: str, op: Literal["read", "write"]) -> Path:
        """Resolve ``path`` (relative to the root) or raise :class:`PathNotAllowed`."""
        return self._confinement.resolve(path, op)

    def check_path(self, path: str, op: Literal["read", "write"]) -> Verdict:
        risk = Risk.WRITE if op == "write" else Risk.READ
        try:
            resolved = self.resolve_path(path, op)
        except PathNotAllowed as exc:
            return Verdict(Decision.DENY, risk, exc.message)
        return Verdict(Decision.ALLOW, risk, f"{op} inside the allowed roots: {resolved}")

    # -- commands ----------------------------------------------------------

    def check_command(self, command: str, *, cwd: Path | None = None) -> Verdict:
        """Judge a shell command line; never raises on hostile input."""
        return self.judge_command(command, cwd=cwd).verdict

    def judge_command(self, command: str, *, cwd: Path | None = None) -> Judgement:
        """:meth:`check_command`, with the parse it judged (for placing the command
        without parsing it again); no parse when the line was refused unread."""
        if not command.strip():
            return Judgement(Verdict(Decision.DENY, Risk.READ, "empty command"))
        if len(command) > MAX_COMMAND_CHARS:
            return Judgement(
                Verdict(
                    Decision.DENY,
                    Risk.DANGEROUS,
                    f"command is longer than {MAX_COMMAND_CHARS} characters; too long to review",
                )
            )
        bad = _invisible(command)
        if bad is not None:
            return Judgement(
                Verdict(
                    Decision.DENY,
                    Risk.DANGEROUS,
                    f"command contains an invisible or control character ({bad}); "
                    "what would run differs from what a person sees",
                )
            )
        start = resolve_physical(Path(os.path.abspath(cwd))) if cwd is not None else self.root
        parsed = parse_command(command)
        findings, allowlisted = self._judge(command, start, depth=0, parsed=parsed)
        return Judgement(self._verdict(findings, allowlisted), parsed)

    @staticmethod
    def _verdict(findings: list[Finding], allowlisted: list[Risk]) -> Verdict:
        decisive = worst(findings)
        if decisive.risk is Risk.DANGEROUS:
            # A write a symlink takes out of the project: the user may allow it once,
            # having read where it really goes; never for the session.
            decision = Decision.CONFIRM if decisive.ask_once else Decision.DENY
            return Verdict(decision, Risk.DANGEROUS, decisive.reason)
        risk = Risk.READ
        for f in findings:
            risk = risk.worst(f.risk)
        for entry_risk in allowlisted:
            risk = risk.worst(entry_risk)
        if decisive.auto:
            reason = "allowlisted by the project" if allowlisted else decisive.reason
            return Verdict(Decision.ALLOW, risk, reason)
        return Verdict(Decision.CONFIRM, risk, decisive.reason)

    def _judge(
        self, command: str, cwd: Path, *, depth: int, parsed: ParsedCommand | None = None
    ) -> tuple[list[Finding], list[Risk]]:
        if parsed is None:
            parsed = parse_command(command)
        ctx = Context(
            root=self.root,
            extra=self._confinement.extra,
            cwd=cwd,
            home=self._home,
            secret_roots=self._secret_roots,
            secrets=self.secrets,
            temp=self._temp,
            nested=lambda text: self._nested(text, depth),
            write_check=self._write_reason,
        )
        findings: list[Finding] = []
        allowlisted: list[Risk] = []
        for issue in parsed.issues:
            findings.append(
                Finding(Risk.DANGEROUS if issue.dangerous else Risk.WRITE, False, issue.reason)
            )
        for cmd in parsed.commands:
            verdict = classify(cmd, ctx)
            if depth == 0 and self._allowlist.match(cmd) is not None and not cmd.in_substitution:
                allowlisted.append(verdict.risk)
                if verdict.risk is not Risk.READ and cmd.argv:
                    # The entry was written for files of the project: it never covers a
                    # write that a link now takes out of it.
                    name = program_name(cmd.argv)[0]
                    through_link = writes_through_links(name, cmd.argv[1:], ctx)
                    if through_link is not None:
                        findings.append(through_link)
                verdict = Finding(Risk.READ, True, "allowlisted by the project")
            findings.append(verdict)
            for red in cmd.redirects:
                findings.append(self._redirect(red, ctx))
        for red in parsed.redirects:
            findings.append(self._redirect(red, ctx))
        findings.extend(self._global(parsed, command))
        if not findings:
            findings.append(Finding.write("nothing recognisable to run"))
        return findings, allowlisted

    def _nested(self, text: str, depth: int) -> Finding:
        if depth >= _MAX_NESTING:
            return Finding.write("shell code nested too deeply to judge")
        bad = _invisible(text)
        if bad is not None:
            return Finding.danger(f"nested code contains an invisible character ({bad})")
        findings, _ = self._judge(text, self.root, depth=depth + 1)
        return worst(findings)

    def _write_reason(self, target: str, cwd: Path) -> str | None:
        try:
            self._confinement.resolve(target, "write", cwd=cwd, secret_roots=self._secret_roots)
        except PathNotAllowed as exc:
            return exc.message
        return None

    def _redirect(self, red: Redirect, ctx: Context) -> Finding:
        op = red.op
        target = red.target
        if op in ("<<", "<<-", "<<<"):
            return Finding.read("here-document")
        if op in (">&", "<&") and target is not None and _FD_DUP_RE.fullmatch(target.text):
            return Finding.read("file descriptor duplication")
        if target is None:
            return Finding.write(f"redirection {op} without a target")
        if not target.literal:
            if op == "<":
                return Finding.write("input from a computed file name")
            return Finding.danger(f"redirection {op} to a computed target {target.text!r}")
        if target.text in _HARMLESS_TARGETS:
            return Finding.read(f"redirection to {target.text}")
        if op == "<":
            outside = reads_outside_file("input redirection", target, ctx)
            return outside or Finding.read(f"input redirection from {target.text}")
        if target.text.startswith("/dev/"):
            return Finding.danger(f"redirection onto device {target.text}")
        if op not in _OUTPUT_OPS and op != "<":
            return Finding.write(f"unusual redirection {op}")
        if ctx.cwd is None and not target.text.startswith("/"):
            return Finding.write(f"redirection {op} {target.text} after changing directory")
        through_link = link_out_of_project(f"redirection {op} {target.text}", target, ctx)
        if through_link is not None:
            return Finding.danger(through_link.reason)  # as any redirection outside
        reason = self._write_reason(target.text, ctx.cwd or ctx.root)
        if reason is not None:
            return Finding.danger(f"redirection {op} {target.text}: {reason}")
        return Finding.write(f"redirection {op} writes {target.text}")

    def _global(self, parsed: ParsedCommand, command: str) -> list[Finding]:
        out: list[Finding] = []
        names = {program_name(c.argv)[0] for c in parsed.commands if c.argv}
        if names & DOWNLOADERS and any(consumes_code(c) for c in parsed.commands):
            out.append(Finding.danger("feeds a network download to a shell or interpreter"))
        if _DROP_RE.search(command) and any(_runs_sql(c) for c in parsed.commands):
            out.append(Finding.danger("DROP DATABASE/SCHEMA destroys data"))
        for name, called in parsed.functions:
            if name and name in called:
                out.append(Finding.danger(f"function {name!r} calls itself (fork bomb)"))
        return out


def _read_allowlist(path: Path) -> tuple[bytes, bool] | None:
    """The allowlist's bytes and whether they came through a symlink; ``None`` if absent.

    Opened without blocking (a FIFO planted there must not hang the bridge) and
    checked to be a regular file on the open descriptor itself.
    """
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    via_link = False
    try:
        fd = os.open(path, flags | nofollow)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK) or not path.is_symlink():
            raise AllowlistError(f"cannot read allowlist {path}: {exc}") from exc
        via_link = True
        try:
            fd = os.open(path, flags)
        except (FileNotFoundError, NotADirectoryError):
            return None  # a dangling link: no allowlist
        except OSError as exc2:
            raise AllowlistError(f"cannot read allowlist {path}: {exc2}") from exc2
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        try:
            return fh.read(), via_link
        except OSError as exc:
            raise AllowlistError(f"cannot read allowlist {path}: {exc}") from exc


def _parse_allowlist_bytes(path: Path, content: bytes) -> Allowlist:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AllowlistError(f"cannot read allowlist {path}: {exc}") from exc
    return parse_allowlist(text)


_TEXT_TOOLS = frozenset(
    {"echo", "printf", "grep", "egrep", "fgrep", "rg", "cat", "git", "sed", "awk"}
)


def _runs_sql(cmd: SimpleCommand) -> bool:
    """Whether ``cmd`` could hand SQL text to a database (anything but plain text tools)."""
    return bool(cmd.argv) and program_name(cmd.argv)[0] not in _TEXT_TOOLS
