"""``for`` and ``select`` loops: the variable they bind, their body walked per value."""

from __future__ import annotations

import re
from collections.abc import Sequence

import tree_sitter

from ..arithmetic import INTEGER_VALUE_RE
from ..shell_words import SimpleCommand, Word
from .nodes import node_text
from .words import WordWalker

__all__ = ["LoopWalker"]

_INTEGER_RANGE_RE = re.compile(r"^\{[+-]?[0-9]+\.\.[+-]?[0-9]+(\.\.[+-]?[0-9]+)?\}$")
# A loop body is walked once per value bound to its variable, up to this many values,
# and at most this many times again in one command line.
_MAX_BOUND_VALUES = 8
_MAX_REWALKS = 32
# Nor when the walks would read more than this many bytes of body in all.
_MAX_BOUND_BYTES = 8192


class LoopWalker(WordWalker):
    """Walks ``for``/``select`` loops, binding their variable to known words."""

    def loop(self, node: tree_sitter.Node, in_sub: bool) -> None:
        """``for``/``select`` NAME in WORDS: NAME is assigned like ``NAME=word``.

        The body sees NAME as each of the words in turn: a quoted ``"$NAME"`` there is
        judged as that word (``for f in src/*.py; do wc -l "$f"; done`` reads what the
        glob matches), unless the body assigns NAME itself. NAME holds a number bash
        may evaluate as arithmetic only when every word is an integer literal.
        """
        name = ""
        values: list[Word] = []
        numbers = True
        body: list[tree_sitter.Node] = []
        select = bool(node.children) and node.children[0].type == "select"
        for child in node.children:
            if child.type == "variable_name" and not name:
                name = node_text(child)
            elif child.type in ("do_group", "compound_statement"):
                body.append(child)
            elif child.is_named and child.type != "comment":
                word = self.word(child, arg=True)
                values.append(word)
                numbers = numbers and _integers(child, word)
        with self.in_loop():
            if name:
                self.event("int" if numbers and values else "data", name)
            if select:
                self.event("data", "REPLY")
            if name and not select and self.bindable(values, body):
                self.bound_body(name, values, body, in_sub)
            else:
                for child in body:
                    self.statement(child, in_sub=in_sub)
        value = Word(
            " ".join(v.text for v in values),
            literal=all(v.literal for v in values),
            substitution=any(v.substitution for v in values),
        )
        self.result.commands.append(
            SimpleCommand(argv=[], assignments=[(name, value)], text=node_text(node), kind="bind")
        )

    def bindable(self, values: Sequence[Word], body: Sequence[tree_sitter.Node]) -> bool:
        """Whether a loop's body may be walked once per word, each bound to its variable.

        Only words whose value is known (literals, plain globs), only the outermost
        loop (nested bound loops would multiply the walks), and within a budget.
        """
        size = sum(c.end_byte - c.start_byte for c in body)
        return (
            not self.bound
            and self.rewalks < _MAX_REWALKS
            and 0 < len(values) <= _MAX_BOUND_VALUES
            and len(values) * size <= _MAX_BOUND_BYTES
            and all(
                v.literal or (v.glob and not v.expansion and not v.substitution) for v in values
            )
        )

    def bound_body(
        self, name: str, values: Sequence[Word], body: Sequence[tree_sitter.Node], in_sub: bool
    ) -> None:
        """Walk a loop body once per value of its variable, or once unbound if it
        assigns the variable itself (then ``"$NAME"`` is computed, as anywhere)."""
        marks = (
            len(self.result.commands),
            len(self.result.issues),
            len(self.result.redirects),
            len(self.result.functions),
            len(self.events),
        )
        saved_bound, saved_uses = self.bound.get(name), self.bound_uses
        self.bound_uses = 0
        try:
            for n, value in enumerate(values):
                self.rewalks += n > 0
                self.bound[name] = value
                for child in body:
                    self.statement(child, in_sub=in_sub)
                reassigned = any(
                    kind != "use" and event_name == name
                    for kind, event_name, _ in self.events[marks[4] :]
                )
                if reassigned:
                    self.rollback(marks)
                    self.rewalks += 1
                    del self.bound[name]
                    for child in body:
                        self.statement(child, in_sub=in_sub)
                    return
                if n == 0 and not self.bound_uses:
                    return  # the body never reads it as one word: once is enough
        finally:
            self.bound.pop(name, None)
            if saved_bound is not None:
                self.bound[name] = saved_bound
            self.bound_uses += saved_uses

    def rollback(self, marks: tuple[int, int, int, int, int]) -> None:
        """Forget what was walked since ``marks`` (to walk it again differently)."""
        commands, issues, redirects, functions, events = marks
        del self.result.commands[commands:]
        del self.result.issues[issues:]
        del self.result.redirects[redirects:]
        del self.result.functions[functions:]
        del self.events[events:]


def _integers(node: tree_sitter.Node, word: Word) -> bool:
    """Whether a loop word gives only integers: ``3``, ``-1`` or a range ``{1..10}``."""
    if word.literal:
        return INTEGER_VALUE_RE.match(word.text) is not None
    return node.type == "brace_expression" and _INTEGER_RANGE_RE.match(word.text) is not None
