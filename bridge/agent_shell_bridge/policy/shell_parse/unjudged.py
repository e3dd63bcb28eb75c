"""The last check of a line: text bash would expand that the walker did not judge."""

from __future__ import annotations

import re

import tree_sitter

from .nodes import SUBSTITUTIONS, node_text

__all__ = ["unjudged_substitution"]

# Where text that would run a command, or arithmetic, may start: $( $[ ` <( >(.
_SUBSTITUTION_START_RE = re.compile(rb"\$\(|\$\[|`|[<>]\(")


def _escaped(source: bytes, pos: int) -> bool:
    """Whether the byte at ``pos`` follows an odd number of backslashes."""
    count = 0
    while pos - count > 0 and source[pos - count - 1] == 0x5C:
        count += 1
    return count % 2 == 1


def _quoted_heredoc(body: tree_sitter.Node) -> bool:
    redirect = body.parent
    if redirect is None:
        return False
    return any(
        c.type == "heredoc_start" and any(q in node_text(c) for q in "'\"\\")
        for c in redirect.children
    )


def _in_double_quotes(node: tree_sitter.Node) -> bool:
    """Whether ``node`` lies in a double-quoted string of the same command level."""
    n = node.parent
    while n is not None and n.type not in SUBSTITUTIONS:
        if n.type == "string":
            return True
        n = n.parent
    return False


def _literal_there(node: tree_sitter.Node, process: bool) -> bool:
    """Whether bash reads the text at ``node`` as plain characters, not a substitution.

    Single quotes quote, except inside a ``${...}`` that is itself in double quotes
    (``"${x:-'$(cmd)'}"`` runs ``cmd``); comments and quoted here-documents are text;
    ``<(`` and ``>(`` are also text in double quotes, here-documents and arithmetic.
    """
    quoted = False
    n: tree_sitter.Node | None = node
    while n is not None:
        kind = n.type
        if kind == "comment":
            return True
        if kind == "heredoc_body":
            return process or _quoted_heredoc(n)
        if kind in ("raw_string", "ansi_c_string"):
            quoted = True
        elif kind == "expansion" and quoted and _in_double_quotes(n):
            return process
        elif process and (
            kind in ("string", "arithmetic_expansion", "c_style_for_statement")
            or (kind == "compound_statement" and n.children and n.children[0].type == "((")
        ):
            return True
        elif kind in SUBSTITUTIONS and n is not node:
            return quoted
        n = n.parent
    return quoted


def unjudged_substitution(root: tree_sitter.Node, source: bytes, judged: set[int]) -> str | None:
    """The first ``$(``, ``$[``, backquote, ``<(`` or ``>(`` bash would expand that was
    not judged.

    tree-sitter-bash leaves some substitutions as text (inside ``${x:-...}``
    operators, in here-documents); whatever the walker did not judge as one must be
    plain characters to bash, or the command is not auto-allowed.
    """
    for m in _SUBSTITUTION_START_RE.finditer(source):
        pos = m.start()
        if pos in judged or _escaped(source, pos):
            continue
        node = root.descendant_for_byte_range(pos, pos + 1)
        if node is not None and _literal_there(node, m.group().startswith((b"<", b">"))):
            continue
        return m.group().decode()
    return None
