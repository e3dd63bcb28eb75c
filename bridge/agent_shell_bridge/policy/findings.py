"""What a rule returns (:class:`Finding`) and what it may look at (:class:`Context`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..types import Risk
from .secrets import BUILTIN, SecretList
from .shell_words import SimpleCommand, Word

__all__ = ["Context", "Finding", "worst"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason bearing on a decision."""

    risk: Risk
    auto: bool
    reason: str
    # Dangerous, yet the user may allow it once, having read the reason (a write that
    # leads out of the project through a symlink); never allowed for the session.
    ask_once: bool = False

    @staticmethod
    def read(reason: str) -> Finding:
        return Finding(Risk.READ, True, reason)

    @staticmethod
    def write(reason: str) -> Finding:
        return Finding(Risk.WRITE, False, reason)

    @staticmethod
    def danger(reason: str) -> Finding:
        return Finding(Risk.DANGEROUS, False, reason)

    @staticmethod
    def ask(reason: str) -> Finding:
        """Dangerous, asked each time (see ``ask_once``)."""
        return Finding(Risk.DANGEROUS, False, reason, ask_once=True)


def worst(findings: Sequence[Finding]) -> Finding:
    """The finding that decides: dangerous beats write beats read; non-auto beats auto;
    among dangerous ones, what is refused beats what may be asked."""
    best = findings[0]
    for f in findings[1:]:
        if (f.risk.rank, not f.auto, not f.ask_once) > (
            best.risk.rank,
            not best.auto,
            not best.ask_once,
        ):
            best = f
    return best


@dataclass(slots=True)
class Context:
    """What rules need to know about the place a command runs in."""

    root: Path
    extra: tuple[Path, ...]
    cwd: Path | None
    home: Path
    temp: Path
    nested: Callable[[str], Finding]
    write_check: Callable[[str, Path], str | None]
    # Where symlinked secrets really live (secrets.real_secret_roots), found once.
    secret_roots: tuple[Path, ...] = ()
    # The secrets: the built-in list plus the user's additions.
    secrets: SecretList = BUILTIN
    # Judges a command a rule finds inside another (find -exec, env, xargs …).
    classify_argv: Callable[[Sequence[Word], Context, SimpleCommand], Finding] | None = None
    # The same places as strings (path rules compare text, not Path objects).
    roots_text: tuple[str, ...] = field(init=False, default=())
    home_text: str = field(init=False, default="")
    temp_text: str = field(init=False, default="")
    secret_roots_text: tuple[str, ...] = field(init=False, default=())
    # Where path words really lead, looked up once per judgement (never kept across
    # judgements: a link planted between two commands must be seen by the second).
    physical: dict[str, str | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.roots_text = tuple(str(r) for r in (self.root, *self.extra))
        self.home_text = str(self.home)
        self.temp_text = str(self.temp)
        self.secret_roots_text = tuple(str(r) for r in self.secret_roots)
