"""What the shell parser gives the policy: words, redirections, simple commands.

Plain records with no parsing in them, so the rules and the sandbox can take them
without the parser (``shell_parse``) and tree-sitter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Issue", "ParsedCommand", "Redirect", "SimpleCommand", "Word"]


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal.

    ``text`` is what bash would pass when ``literal`` is true; otherwise it is a best
    effort (expansions kept verbatim) that is only good for spotting danger.
    """

    text: str
    literal: bool = True
    quoted: bool = False
    glob: bool = False
    expansion: bool = False
    substitution: bool = False
    # The whole word is a process substitution <(...): bash passes a /dev/fd path.
    pipe: bool = False

    @property
    def key(self) -> tuple[str, bool]:
        """Comparison key for allowlist matching: value plus whether it is exact."""
        return (self.text, self.literal)


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``op`` is the operator (``>``, ``>>``, ``<``, ``&>``, ``<<`` …)."""

    op: str
    fd: str | None
    target: Word | None


@dataclass(slots=True)
class SimpleCommand:
    """One command: leading assignments, argv and its own redirections."""

    argv: list[Word]
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    text: str = ""
    heredoc: str | None = None
    in_substitution: bool = False
    # "bind" when the assignments bind a name without "=": a for/select loop
    # variable or a name assigned inside arithmetic ($((x=1)), i++).
    kind: str = ""

    @property
    def name(self) -> str:
        return self.argv[0].text if self.argv else ""


@dataclass(frozen=True, slots=True)
class Issue:
    """A construct that must never be auto-allowed; ``dangerous`` ones are denied."""

    reason: str
    dangerous: bool = False


@dataclass(slots=True)
class ParsedCommand:
    """The flattened result of parsing one command line."""

    commands: list[SimpleCommand] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    # Redirections attached to compound statements (``(a; b) > f``).
    redirects: list[Redirect] = field(default_factory=list)
    functions: list[tuple[str, list[str]]] = field(default_factory=list)
