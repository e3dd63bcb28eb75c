"""Parse a line, walk its tree, then check the line as a whole."""

from __future__ import annotations

from functools import cache

import tree_sitter
import tree_sitter_bash

from ..arithmetic import first_unsafe_use
from ..shell_words import Issue, ParsedCommand
from .statements import Walker
from .unjudged import unjudged_substitution

__all__ = ["parse_command"]


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse_command(command: str) -> ParsedCommand:
    """Parse ``command`` into simple commands; never raises on bad input."""
    source = command.encode("utf-8", "surrogatepass")
    tree = _parser().parse(source)
    walker = Walker(source)
    walker.statement(tree.root_node)
    unsafe = first_unsafe_use(walker.events) if walker.events else None
    if unsafe is not None:
        walker.result.issues.append(
            Issue(
                f"bash evaluates the value of {unsafe} as arithmetic (a value such as "
                f"a[$(cmd)] runs cmd), and the command does not set {unsafe} to a number itself"
            )
        )
    unjudged = unjudged_substitution(tree.root_node, source, walker.judged)
    if unjudged is not None:
        walker.result.issues.append(
            Issue(f"the command holds a {unjudged!r} the parser could not judge as a substitution")
        )
    if tree.root_node.has_error and not any(
        i.reason.startswith("the command does not parse") for i in walker.result.issues
    ):
        walker.result.issues.append(Issue("the command does not parse cleanly"))
    return walker.result
