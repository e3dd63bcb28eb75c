"""The tree-sitter-bash node kinds the walker's parts tell apart, and a node's text."""

from __future__ import annotations

import tree_sitter

__all__ = ["EXPANSIONS", "REDIRECTS", "SUBSTITUTIONS", "node_text"]

REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "arithmetic_expansion",
        "brace_expression",
    }
)
SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})


def node_text(node: tree_sitter.Node) -> str:
    """The node's source text (invalid UTF-8 replaced)."""
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""
