"""Turn a bash command line into simple commands with normalised words.

The policy never looks at raw command strings: tree-sitter-bash parses the line and
this package flattens the tree into :class:`SimpleCommand` records whose words are
unquoted, ANSI-C decoded and flagged when bash would expand them (globs, variables,
braces, substitutions). Anything the walker does not understand becomes an
:class:`Issue`, so the engine can refuse to auto-allow it (fail closed).
"""

from __future__ import annotations

from ..shell_words import Issue, ParsedCommand, Redirect, SimpleCommand, Word
from .names import normalise_name
from .parse import parse_command

__all__ = [
    "Issue",
    "ParsedCommand",
    "Redirect",
    "SimpleCommand",
    "Word",
    "normalise_name",
    "parse_command",
]
