"""The statement walker: simple and compound commands, tests, arithmetic, functions.

:class:`Walker` is the whole walker: each statement node goes to the readers here,
to the loops (:mod:`.loops`) or to the redirections (:mod:`.redirects`), all of
them reading words with :mod:`.words`.
"""

from __future__ import annotations

import tree_sitter

from ..shell_words import Issue, SimpleCommand, Word
from .loops import LoopWalker
from .nodes import EXPANSIONS, REDIRECTS, SUBSTITUTIONS, node_text
from .redirects import RedirectWalker

__all__ = ["Walker"]

# Statement-level nodes whose children are simply more statements.
_CONTAINERS = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "subshell",
        "compound_statement",
        "do_group",
        "negated_command",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "case_statement",
        "case_item",
        "for_statement",
        "c_style_for_statement",
    }
)
_WORDISH = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "translated_string",
        "concatenation",
        "number",
        "test_operator",
        "regex",
        "extglob_pattern",
        "variable_name",
    }
)
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


class Walker(LoopWalker, RedirectWalker):
    """Walks one tree, filling a :class:`ParsedCommand`.

    Statements are dispatched here; the parts it inherits read loops, redirections
    and words, and hold the walk's state (:class:`.state.WalkerState`).
    """

    def statement(self, node: tree_sitter.Node, *, in_sub: bool = False) -> None:
        self.depth += 1
        try:
            if self.depth > 200:
                self.result.issues.append(Issue("command nests too deeply to judge"))
                return
            self._statement(node, in_sub)
        finally:
            self.depth -= 1

    def _statement(self, node: tree_sitter.Node, in_sub: bool) -> None:
        kind = node.type
        if node.is_missing or kind == "ERROR":
            self.result.issues.append(Issue("the command does not parse cleanly"))
            for child in node.named_children:
                self.statement(child, in_sub=in_sub)
            return
        if not node.is_named or kind == "comment":
            return
        if kind == "command":
            self.command(node, in_sub=in_sub, extra_redirects=())
        elif kind == "redirected_statement":
            self.redirected(node, in_sub)
        elif kind == "for_statement":
            self.loop(node, in_sub)
        elif kind == "c_style_for_statement":
            with self.in_loop():
                self.arithmetic_command(node)
        elif kind == "compound_statement" and node.children and node.children[0].type == "((":
            self.arithmetic_command(node)
        elif kind == "while_statement":
            with self.in_loop():
                for child in node.children:
                    self.statement(child, in_sub=in_sub)
        elif kind in _CONTAINERS:
            for child in node.children:
                if child.type in ("word", "concatenation", "string", "raw_string"):
                    self.word(child, arg=True)  # case values: only substitutions matter
                elif child.type == "variable_name":
                    continue
                else:
                    self.statement(child, in_sub=in_sub)
        elif kind == "variable_assignment":
            name, value = self.assignment(node)
            self.assigned(name, value)
            self.result.commands.append(
                SimpleCommand(argv=[], assignments=[(name, value)], text=node_text(node))
            )
        elif kind == "variable_assignments":
            assigns = [self.assignment(c) for c in node.named_children]
            for name, value in assigns:
                self.assigned(name, value)
            self.result.commands.append(
                SimpleCommand(argv=[], assignments=assigns, text=node_text(node))
            )
        elif kind in ("declaration_command", "unset_command"):
            keyword = node_text(node.children[0]) if node.children else kind
            argv = [Word(keyword)]
            for child in node.named_children:
                if child.type == "variable_assignment":
                    name, value = self.assignment(child)
                    argv.append(Word(f"{name}={value.text}", literal=value.literal))
                else:
                    argv.append(self.word(child))
            self.builtin_assigns(argv)
            self.result.commands.append(SimpleCommand(argv=argv, text=node_text(node)))
        elif kind == "test_command":
            # [[ evaluates arithmetic operands (code); [ is the test builtin.
            opener = node.children[0].type if node.children else "[["
            strict = opener != "["
            self.code += strict
            try:
                words = [Word(opener), *self.test_words(node, arg=not strict)]
            finally:
                self.code -= strict
            if strict:
                self.test_arithmetic(node)
            self.result.commands.append(SimpleCommand(argv=words, text=node_text(node)))
        elif kind == "function_definition":
            self.function(node, in_sub)
        elif kind in REDIRECTS:
            self.result.redirects.append(self.redirect(node))
        else:
            self.result.issues.append(Issue(f"unsupported shell construct: {kind}"))
            for child in node.named_children:
                self.statement(child, in_sub=in_sub)

    def test_arithmetic(self, node: tree_sitter.Node) -> None:
        """``[[ X -eq Y ]]`` evaluates X and Y as arithmetic, values of names included."""
        for child in node.named_children:
            if child.type == "binary_expression" and any(
                c.type == "test_operator" and node_text(c) in _ARITHMETIC_TESTS
                for c in child.children
            ):
                for operand in child.named_children:
                    if operand.type == "test_operator":
                        continue
                    raw = node_text(operand)
                    self.arithmetic_text(raw[1:-1] if operand.type == "raw_string" else raw)
            else:
                self.test_arithmetic(child)

    def arithmetic_command(self, node: tree_sitter.Node) -> None:
        """``(( ... ))`` or ``for (( ...; ...; ... ))``: code bash evaluates."""
        for child in node.children:
            if child.type == "do_group" or (
                child.type == "compound_statement"
                and child.children
                and child.children[0].type == "{"
            ):
                self.statement(child)  # the loop's body: ordinary commands
            elif child.is_named:
                self.arithmetic(child)
        self.result.commands.append(SimpleCommand(argv=[Word("((")], text=node_text(node)))

    def test_words(self, node: tree_sitter.Node, *, arg: bool) -> list[Word]:
        """The operands and operators of a ``[[ ... ]]`` or ``[ ... ]`` test, in order."""
        out: list[Word] = []
        for child in node.children:
            if child.type in ("[[", "[") and child is node.children[0]:
                continue
            if child.type in _WORDISH or child.type in EXPANSIONS or child.type in SUBSTITUTIONS:
                out.append(self.word(child, arg=arg))
            elif not child.is_named and child.type not in ("(", ")"):
                out.append(Word(node_text(child)))
            else:
                out.extend(self.test_words(child, arg=arg))
        return out

    def redirected(self, node: tree_sitter.Node, in_sub: bool) -> None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c.type in REDIRECTS]
        extra_errors = [c for c in node.children if c.type == "ERROR" or c.is_missing]
        if extra_errors:
            self.result.issues.append(Issue("the command does not parse cleanly"))
        if body is not None and body.type == "command":
            self.command(body, in_sub=in_sub, extra_redirects=redirects)
            return
        if body is not None:
            self.statement(body, in_sub=in_sub)
        for red in redirects:
            self.result.redirects.append(self.redirect(red))
            self.heredoc_statements(red)

    def command(
        self,
        node: tree_sitter.Node,
        *,
        in_sub: bool,
        extra_redirects: tuple[tree_sitter.Node, ...] | list[tree_sitter.Node],
    ) -> None:
        cmd = SimpleCommand(argv=[], text=node_text(node), in_substitution=in_sub)
        heredocs: list[str] = []
        children = node.children
        for child in children:
            if child.type == "ERROR" or child.is_missing:
                self.result.issues.append(Issue("the command does not parse cleanly"))
                continue
            if not child.is_named:
                continue
            if child.type == "variable_assignment":
                cmd.assignments.append(self.assignment(child))
            elif child.type == "command_name":
                inner = child.named_children[0] if child.named_children else child
                # A loop variable as the command name stays computed: which program
                # runs is never taken from a loop's words.
                bound, self.bound = self.bound, {}
                try:
                    cmd.argv.append(self.word(inner))
                finally:
                    self.bound = bound
            elif child.type in REDIRECTS:
                cmd.redirects.append(self.redirect(child))
            else:
                cmd.argv.append(self.word(child, arg=True))
        for red in extra_redirects:
            cmd.redirects.append(self.redirect(red))
            body = self.heredoc_statements(red)
            if body is not None:
                heredocs.append(body)
        for red in children:
            if red.type in REDIRECTS:
                body = self.heredoc_statements(red)
                if body is not None:
                    heredocs.append(body)
        if heredocs:
            cmd.heredoc = "\n".join(heredocs)
        self.builtin_assigns(cmd.argv)
        self.result.commands.append(cmd)

    def function(self, node: tree_sitter.Node, in_sub: bool) -> None:
        name_node = node.child_by_field_name("name")
        name = node_text(name_node) if name_node is not None else ""
        before = len(self.result.commands)
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, in_sub=in_sub)
        called = [c.name for c in self.result.commands[before:]]
        self.result.functions.append((name, called))
        self.result.issues.append(Issue(f"defines a shell function {name!r}"))

    def assignment(self, node: tree_sitter.Node) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = node_text(name_node) if name_node is not None else node_text(node).split("=", 1)[0]
        value = self.word(value_node) if value_node is not None else Word("")
        return name, value
