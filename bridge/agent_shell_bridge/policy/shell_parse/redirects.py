"""Redirections and here-documents: their targets, and what an unquoted body expands."""

from __future__ import annotations

import tree_sitter

from ..shell_words import Issue, Redirect, Word
from .nodes import REDIRECTS, SUBSTITUTIONS, node_text
from .words import WordWalker

__all__ = ["RedirectWalker"]


class RedirectWalker(WordWalker):
    """Reads redirections, and judges the substitutions of here-documents."""

    def redirect(self, node: tree_sitter.Node) -> Redirect:
        fd: str | None = None
        op = ""
        target: Word | None = None
        for child in node.children:
            if child.type == "file_descriptor":
                fd = node_text(child)
            elif not child.is_named and not op:
                op = node_text(child)
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            elif child.type in REDIRECTS:
                self.result.redirects.append(self.redirect(child))
            elif child.is_named and target is None:
                target = self.word(child)
        return Redirect(op=op or node.type, fd=fd, target=target)

    def heredoc_statements(self, node: tree_sitter.Node) -> str | None:
        """Return a heredoc's body text (substitutions inside it are judged too)."""
        if node.type != "heredoc_redirect":
            return None
        parts: list[str] = []
        for child in node.named_children:
            if child.type == "heredoc_body":
                parts.append(node_text(child))
                self.heredoc_words(child)
        return "".join(parts)

    def heredoc_words(self, body: tree_sitter.Node) -> None:
        """An unquoted here-document expands like a double-quoted string."""
        for child in body.named_children:
            raw = node_text(child)
            arithmetic = raw.startswith("$((") and raw.endswith("))")
            if child.type == "command_substitution" and arithmetic:
                # tree-sitter reads $((…)) here as $( (…) ): it is arithmetic.
                self.judged.add(child.start_byte)
                self.arithmetic_text(raw)
            elif child.type in SUBSTITUTIONS:
                self.word(child)
            elif child.type == "expansion":
                self.expansion_issues(raw)
                self.scan_words(child)
            elif child.type == "heredoc_content" and ("$[" in raw or "$((" in raw):
                self.result.issues.append(
                    Issue("arithmetic in a here-document that the parser cannot read")
                )
