"""Command-line entry point (placeholder, replaced by the foundation work)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    return 0
