"""Turn a bash command line into simple commands with normalised words.

The policy never looks at raw command strings: tree-sitter-bash parses the line and
this module flattens the tree into :class:`SimpleCommand` records whose words are
unquoted, ANSI-C decoded and flagged when bash would expand them (globs, variables,
braces, substitutions). Anything the walker does not understand becomes an
:class:`Issue`, so the engine can refuse to auto-allow it (fail closed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache

import tree_sitter
import tree_sitter_bash

from .arithmetic import INTEGER_VALUE_RE, Event, first_unsafe_use, scan
from .shell_quoting import decode_ansi_c, unescape_double, unescape_unquoted
from .shell_words import Issue, ParsedCommand, Redirect, SimpleCommand, Word

__all__ = [
    "Issue",
    "ParsedCommand",
    "Redirect",
    "SimpleCommand",
    "Word",
    "normalise_name",
    "parse_command",
]

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
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "arithmetic_expansion",
        "brace_expression",
    }
)
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
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
# Names bash's arithmetic assigns: x=, x+=, ++x, x-- (not ==, <=, >=, !=).
_ARITH_ASSIGN_RE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)\s*(\[[^\]]*\])?\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
    r"|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)\s*(?:\+\+|--)"
)
_CODE_IN_SUBSCRIPT_RE = re.compile(r"\[[^\]]*[$`'\"\\][^\]]*\]")
_BRACE_RE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_ZERO_WIDTH_RE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")
# Words that are plain text to bash, with no quotes or nested nodes of their own.
_PLAIN_KINDS = frozenset({"word", "number", "variable_name", "file_descriptor", "test_operator"})
_ESCAPED_RE = re.compile(r"\\.")
_GLOB_RE = re.compile(r"[*?\[]")
_ASSIGNING_EXPANSION_RE = re.compile(r"^\$\{[^}]*?:?=")
# ${[#!]NAME[SUBSCRIPT]...: the parts of a parameter expansion bash evaluates as
# arithmetic are the subscript and, after a ":" that starts no operator, the offset.
_EXPANSION_HEAD_RE = re.compile(
    r"^\$\{([#!]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[([^\]]*)\])?"
)
_INTEGER_RANGE_RE = re.compile(r"^\{[+-]?[0-9]+\.\.[+-]?[0-9]+(\.\.[+-]?[0-9]+)?\}$")
_REFERENCE_RE = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
# Builtins that assign the variables their words name (read NAME, mapfile NAME …),
# with the variable they fill when none is named.
_ASSIGNING_BUILTINS = {
    "read": "REPLY", "mapfile": "MAPFILE", "readarray": "MAPFILE", "getopts": "OPTARG",
    "unset": "", "declare": "", "typeset": "", "local": "", "export": "", "readonly": "",
    "let": "",
}  # fmt: skip
# A loop body is walked once per value bound to its variable, up to this many values,
# and at most this many times again in one command line.
_MAX_BOUND_VALUES = 8
_MAX_REWALKS = 32
# Nor when the walks would read more than this many bytes of body in all.
_MAX_BOUND_BYTES = 8192
# Where text that would run a command, or arithmetic, may start: $( $[ ` <( >(.
_SUBSTITUTION_START_RE = re.compile(rb"\$\(|\$\[|`|[<>]\(")


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


class _Walker:
    """Walks one tree, filling a :class:`ParsedCommand`."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.result = ParsedCommand()
        self.depth = 0
        # Inside an expansion, arithmetic or a [[ test: text there is evaluated.
        self.code = 0
        # The word being read is a plain argument of a simple command.
        self.arg = False
        # Where each judged substitution (and arithmetic expansion) starts, and
        # where a backquoted one ends: all other "$(", "`" and "<(" are looked at.
        self.judged: set[int] = set()
        # Names set and read as arithmetic, in order (see .arithmetic).
        self.events: list[Event] = []
        self.loops: tuple[int, ...] = ()
        self.loop_count = 0
        # Loop variables whose value is one known word, and how often one was used.
        self.bound: dict[str, Word] = {}
        self.bound_uses = 0
        # Loop bodies walked again for a bound value (or after a rollback) so far:
        # past the budget, loops are walked once, unbound.
        self.rewalks = 0

    # -- statements --------------------------------------------------------

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
                SimpleCommand(argv=[], assignments=[(name, value)], text=_text(node))
            )
        elif kind == "variable_assignments":
            assigns = [self.assignment(c) for c in node.named_children]
            for name, value in assigns:
                self.assigned(name, value)
            self.result.commands.append(
                SimpleCommand(argv=[], assignments=assigns, text=_text(node))
            )
        elif kind in ("declaration_command", "unset_command"):
            keyword = _text(node.children[0]) if node.children else kind
            argv = [Word(keyword)]
            for child in node.named_children:
                if child.type == "variable_assignment":
                    name, value = self.assignment(child)
                    argv.append(Word(f"{name}={value.text}", literal=value.literal))
                else:
                    argv.append(self.word(child))
            self.builtin_assigns(argv)
            self.result.commands.append(SimpleCommand(argv=argv, text=_text(node)))
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
            self.result.commands.append(SimpleCommand(argv=words, text=_text(node)))
        elif kind == "function_definition":
            self.function(node, in_sub)
        elif kind in _REDIRECTS:
            self.result.redirects.append(self.redirect(node))
        else:
            self.result.issues.append(Issue(f"unsupported shell construct: {kind}"))
            for child in node.named_children:
                self.statement(child, in_sub=in_sub)

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
                name = _text(child)
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
            SimpleCommand(argv=[], assignments=[(name, value)], text=_text(node), kind="bind")
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

    @contextmanager
    def in_loop(self) -> Iterator[None]:
        """Everything walked inside is inside one more loop (see .arithmetic)."""
        self.loop_count += 1
        saved = self.loops
        self.loops = (*saved, self.loop_count)
        try:
            yield
        finally:
            self.loops = saved

    def event(self, kind: str, name: str) -> None:
        self.events.append((kind, name, self.loops))

    def assigned(self, name: str, value: Word) -> None:
        """``NAME=value``: a number from here on only if the value is one."""
        base = name.split("[", 1)[0]
        number = value.literal and INTEGER_VALUE_RE.match(value.text) is not None
        self.event("int" if number and base == name else "data", base)

    def builtin_assigns(self, argv: Sequence[Word]) -> None:
        """The variables ``read``, ``mapfile``, ``printf -v``, ``declare`` … fill with data.

        Every name in their words counts (over-counting costs only a question); for
        ``printf`` only the ``-v`` target does, its other words being text.
        """
        if not argv or not argv[0].literal:
            return
        program = argv[0].text
        if program == "printf":
            for i, w in enumerate(argv[1:], start=1):
                if w.text.startswith("-v"):
                    target = w.text[2:] or (argv[i + 1].text if i + 1 < len(argv) else "")
                    for name in _IDENTIFIER_RE.findall(target):
                        self.event("data", name)
            return
        implicit = _ASSIGNING_BUILTINS.get(program)
        if implicit is None:
            return
        if implicit:
            self.event("data", implicit)
        for w in argv[1:]:
            for name in _IDENTIFIER_RE.findall(w.text):
                self.event("data", name)

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

    def arithmetic_text(self, text: str) -> None:
        """Record the names arithmetic ``text`` sets and reads (see .arithmetic)."""
        found, problem = scan(text)
        for kind, name in found:
            self.event(kind, name)
        if problem is not None:
            self.result.issues.append(Issue(problem))

    def test_arithmetic(self, node: tree_sitter.Node) -> None:
        """``[[ X -eq Y ]]`` evaluates X and Y as arithmetic, values of names included."""
        for child in node.named_children:
            if child.type == "binary_expression" and any(
                c.type == "test_operator" and _text(c) in _ARITHMETIC_TESTS for c in child.children
            ):
                for operand in child.named_children:
                    if operand.type == "test_operator":
                        continue
                    raw = _text(operand)
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
        self.result.commands.append(SimpleCommand(argv=[Word("((")], text=_text(node)))

    def arithmetic(self, node: tree_sitter.Node) -> None:
        """Judge arithmetic text: assignments to variables, subscripts holding code."""
        raw = _text(node)
        self.arithmetic_text(raw)
        for m in _ARITH_ASSIGN_RE.finditer(raw):
            name = m.group(1) or m.group(3) or m.group(4)
            if name:
                self.result.commands.append(
                    SimpleCommand(
                        argv=[],
                        assignments=[(name, Word(raw, literal=False, expansion=True))],
                        text=raw,
                        kind="bind",
                    )
                )
        if _CODE_IN_SUBSCRIPT_RE.search(raw):
            self.result.issues.append(
                Issue("an array subscript in arithmetic is evaluated and may run code")
            )
        self.code += 1
        try:
            self.scan_words(node)
        finally:
            self.code -= 1

    def test_words(self, node: tree_sitter.Node, *, arg: bool) -> list[Word]:
        """The operands and operators of a ``[[ ... ]]`` or ``[ ... ]`` test, in order."""
        out: list[Word] = []
        for child in node.children:
            if child.type in ("[[", "[") and child is node.children[0]:
                continue
            if child.type in _WORDISH or child.type in _EXPANSIONS or child.type in _SUBSTITUTIONS:
                out.append(self.word(child, arg=arg))
            elif not child.is_named and child.type not in ("(", ")"):
                out.append(Word(_text(child)))
            else:
                out.extend(self.test_words(child, arg=arg))
        return out

    def redirected(self, node: tree_sitter.Node, in_sub: bool) -> None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c.type in _REDIRECTS]
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
        cmd = SimpleCommand(argv=[], text=_text(node), in_substitution=in_sub)
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
            elif child.type in _REDIRECTS:
                cmd.redirects.append(self.redirect(child))
            else:
                cmd.argv.append(self.word(child, arg=True))
        for red in extra_redirects:
            cmd.redirects.append(self.redirect(red))
            body = self.heredoc_statements(red)
            if body is not None:
                heredocs.append(body)
        for red in children:
            if red.type in _REDIRECTS:
                body = self.heredoc_statements(red)
                if body is not None:
                    heredocs.append(body)
        if heredocs:
            cmd.heredoc = "\n".join(heredocs)
        self.builtin_assigns(cmd.argv)
        self.result.commands.append(cmd)

    def function(self, node: tree_sitter.Node, in_sub: bool) -> None:
        name_node = node.child_by_field_name("name")
        name = _text(name_node) if name_node is not None else ""
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
        name = _text(name_node) if name_node is not None else _text(node).split("=", 1)[0]
        value = self.word(value_node) if value_node is not None else Word("")
        return name, value

    def redirect(self, node: tree_sitter.Node) -> Redirect:
        fd: str | None = None
        op = ""
        target: Word | None = None
        for child in node.children:
            if child.type == "file_descriptor":
                fd = _text(child)
            elif not child.is_named and not op:
                op = _text(child)
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            elif child.type in _REDIRECTS:
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
                parts.append(_text(child))
                self.heredoc_words(child)
        return "".join(parts)

    def heredoc_words(self, body: tree_sitter.Node) -> None:
        """An unquoted here-document expands like a double-quoted string."""
        for child in body.named_children:
            raw = _text(child)
            arithmetic = raw.startswith("$((") and raw.endswith("))")
            if child.type == "command_substitution" and arithmetic:
                # tree-sitter reads $((…)) here as $( (…) ): it is arithmetic.
                self.judged.add(child.start_byte)
                self.arithmetic_text(raw)
            elif child.type in _SUBSTITUTIONS:
                self.word(child)
            elif child.type == "expansion":
                self.expansion_issues(raw)
                self.scan_words(child)
            elif child.type == "heredoc_content" and ("$[" in raw or "$((" in raw):
                self.result.issues.append(
                    Issue("arithmetic in a here-document that the parser cannot read")
                )

    def expansion_issues(self, raw: str) -> None:
        """``${...}`` forms that evaluate text as code or assign variables."""
        if _ASSIGNING_EXPANSION_RE.search(raw):
            self.result.issues.append(Issue("assigns a shell variable inside ${...}"))
        if raw.startswith("${!"):
            self.result.issues.append(
                Issue("indirect expansion ${!...} reads a variable named by data (may run code)")
            )
        if raw.endswith("@P}"):
            self.result.issues.append(Issue("prompt expansion ${...@P} runs the value as code"))
        head_match = _EXPANSION_HEAD_RE.match(raw)
        if head_match is not None:
            flag, _, subscript = head_match.groups()
            if subscript is not None and subscript not in ("@", "*"):
                self.arithmetic_text(subscript)
            rest = raw[head_match.end() : -1 if raw.endswith("}") else None]
            if not flag and rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+"):
                self.arithmetic_text(rest[1:])
        # Subscripts and ${x:offset:length} are arithmetic, evaluated with their quotes.
        head = raw.split(":", 1)[0]
        if _CODE_IN_SUBSCRIPT_RE.search(raw):
            self.result.issues.append(
                Issue("an array subscript in ${...} is evaluated and may run code")
            )
        elif "$(" in head or "`" in head:
            # ${x/$(cmd)/y}, ${x#`cmd`}: the pattern is expanded, running cmd.
            self.result.issues.append(
                Issue("a command substitution inside ${...} runs when bash expands it")
            )

    # -- words -------------------------------------------------------------

    def scan_words(self, node: tree_sitter.Node) -> None:
        """Find substitutions anywhere below ``node`` and judge their commands, and
        the arithmetic of expansions nested there (``${x:-$[n]}``, ``${x:-${a[n]}}``)."""
        for child in node.named_children:
            if child.type in _SUBSTITUTIONS:
                self.word(child)
            elif child.type == "arithmetic_expansion":
                self.judged.add(child.start_byte)
                self.code += 1
                try:
                    self.arithmetic(child)
                finally:
                    self.code -= 1
            else:
                if child.type == "expansion":
                    self.expansion_issues(_text(child))
                self.scan_words(child)

    def word(self, node: tree_sitter.Node, *, arg: bool = False) -> Word:
        """Read one word; ``arg`` when it is a plain argument of a simple command."""
        if self.bound and node.type in ("string", "simple_expansion", "expansion"):
            found = self.bound_word(node)
            if found is not None:
                return found
        if node.type in _PLAIN_KINDS:
            raw = _text(node)
            if "\\" not in raw:
                # The common case, as the general path below would read it.
                glob = _GLOB_RE.search(raw) is not None
                expansion = (
                    "$" in raw
                    or "`" in raw
                    or raw.startswith("~")
                    or _BRACE_RE.search(raw) is not None
                )
                return Word(
                    text=raw,
                    literal=not (glob or expansion),
                    glob=glob,
                    expansion=expansion,
                )
        pieces: list[str] = []
        unquoted: list[str] = []
        flags = {"quoted": False, "glob": False, "expansion": False, "substitution": False}
        saved = self.arg
        self.arg = arg
        try:
            self._word_into(node, pieces, unquoted, flags)
        finally:
            self.arg = saved
        bare = "".join(unquoted)
        if _BRACE_RE.search(bare):
            flags["expansion"] = True
        if bare.startswith("~"):
            flags["expansion"] = True
        text = "".join(pieces)
        literal = not (flags["glob"] or flags["expansion"] or flags["substitution"])
        return Word(
            text=text,
            literal=literal,
            quoted=flags["quoted"],
            glob=flags["glob"],
            expansion=flags["expansion"],
            substitution=flags["substitution"],
            pipe=node.type == "process_substitution" and arg,
        )

    def bound_word(self, node: tree_sitter.Node) -> Word | None:
        """``"$f"`` (or a plain ``$f`` whose value bash would not split or glob) in a
        loop over known words: that word, as bash passes it."""
        quoted = node.type == "string"
        ref = node
        if quoted:
            inner = node.named_children
            if len(inner) != 1 or _text(node) != f'"{_text(inner[0])}"':
                return None
            ref = inner[0]
        m = _REFERENCE_RE.match(_text(ref))
        if m is None:
            return None
        value = self.bound.get(m.group(1) or m.group(2))
        if value is None:
            return None
        if not quoted and (not value.literal or any(c in value.text for c in " \t\n*?[")):
            return None
        self.bound_uses += 1
        # A glob's value is one of its matches: judged as the glob itself is (what it
        # may match, a file named like an option included), so never as quoted text.
        return Word(
            value.text, literal=value.literal, quoted=quoted and value.literal, glob=value.glob
        )

    def _word_into(
        self,
        node: tree_sitter.Node,
        pieces: list[str],
        unquoted: list[str],
        flags: dict[str, bool],
    ) -> None:
        kind = node.type
        raw = _text(node)
        if kind in _PLAIN_KINDS:
            if "\\" in raw:
                value = unescape_unquoted(raw)
                flags["quoted"] = True
                stripped = _ESCAPED_RE.sub("", raw)
            else:
                value = stripped = raw
            if _GLOB_RE.search(stripped):
                flags["glob"] = True
            if "$" in stripped or "`" in stripped:
                flags["expansion"] = True
            pieces.append(value)
            unquoted.append(stripped)
        elif kind == "raw_string":
            flags["quoted"] = True
            pieces.append(raw[1:-1] if len(raw) >= 2 else "")
            unquoted.append("\x00")
        elif kind == "ansi_c_string":
            flags["quoted"] = True
            pieces.append(decode_ansi_c(raw[2:-1] if len(raw) >= 3 else ""))
            unquoted.append("\x00")
        elif kind in ("string", "translated_string"):
            flags["quoted"] = True
            for child in node.named_children:
                if child.type == "string_content":
                    pieces.append(unescape_double(_text(child)))
                else:
                    self._word_into(child, pieces, [], flags)
            unquoted.append("\x00")
        elif kind == "concatenation":
            for child in node.children:
                self._word_into(child, pieces, unquoted, flags)
        elif kind == "command_substitution" and raw.startswith("$((") and raw.endswith("))"):
            # tree-sitter reads some $((…)) as $( (…) ); bash reads arithmetic.
            flags["expansion"] = True
            self.judged.add(node.start_byte)
            self.arithmetic_text(raw)
            pieces.append(raw)
            unquoted.append("\x00")
        elif kind in _SUBSTITUTIONS:
            flags["substitution"] = True
            self.judged.add(node.start_byte)
            if raw.startswith("`"):
                self.judged.add(node.end_byte - 1)
            what = "process" if kind == "process_substitution" else "command"
            if self.code or not self.arg:
                # Its output becomes a command name, an assignment, a redirection
                # target or text bash evaluates: never auto-allowed. As a plain
                # argument the rules of the command it feeds decide (see commands).
                where = "where bash evaluates it" if self.code else "outside an argument"
                self.result.issues.append(Issue(f"uses {what} substitution {where}"))
            saved_code, saved_arg = self.code, self.arg
            self.code, self.arg = 0, False
            try:
                for child in node.named_children:
                    self.statement(child, in_sub=True)
            finally:
                self.code, self.arg = saved_code, saved_arg
            pieces.append(raw)
            unquoted.append("\x00")
        elif kind in _EXPANSIONS:
            flags["expansion"] = True
            if kind == "expansion":
                self.expansion_issues(raw)
            if kind == "arithmetic_expansion":
                self.judged.add(node.start_byte)
                self.arithmetic(node)
            else:
                self.code += 1
                try:
                    self.scan_words(node)
                finally:
                    self.code -= 1
            pieces.append(raw)
            unquoted.append("\x00")
        elif not node.is_named:
            # Punctuation inside a concatenation, such as the braces of {a,b}.
            pieces.append(raw)
            unquoted.append(raw)
            if raw in ("$", "`"):
                flags["expansion"] = True
        else:
            flags["expansion"] = True
            self.scan_words(node)
            pieces.append(raw)
            unquoted.append("\x00")


def normalise_name(name: str) -> str:
    """Fold look-alike spellings of a command name (full-width, zero-width) to ASCII."""
    if name.isascii():
        return name  # NFKC leaves ASCII alone and zero-width characters are not ASCII
    return unicodedata.normalize("NFKC", _ZERO_WIDTH_RE.sub("", name))


def _integers(node: tree_sitter.Node, word: Word) -> bool:
    """Whether a loop word gives only integers: ``3``, ``-1`` or a range ``{1..10}``."""
    if word.literal:
        return INTEGER_VALUE_RE.match(word.text) is not None
    return node.type == "brace_expression" and _INTEGER_RANGE_RE.match(word.text) is not None


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
        c.type == "heredoc_start" and any(q in _text(c) for q in "'\"\\") for c in redirect.children
    )


def _in_double_quotes(node: tree_sitter.Node) -> bool:
    """Whether ``node`` lies in a double-quoted string of the same command level."""
    n = node.parent
    while n is not None and n.type not in _SUBSTITUTIONS:
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
        elif kind in _SUBSTITUTIONS and n is not node:
            return quoted
        n = n.parent
    return quoted


def _unjudged_substitution(root: tree_sitter.Node, source: bytes, judged: set[int]) -> str | None:
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


def parse_command(command: str) -> ParsedCommand:
    """Parse ``command`` into simple commands; never raises on bad input."""
    source = command.encode("utf-8", "surrogatepass")
    tree = _parser().parse(source)
    walker = _Walker(source)
    walker.statement(tree.root_node)
    unsafe = first_unsafe_use(walker.events) if walker.events else None
    if unsafe is not None:
        walker.result.issues.append(
            Issue(
                f"bash evaluates the value of {unsafe} as arithmetic (a value such as "
                f"a[$(cmd)] runs cmd), and the command does not set {unsafe} to a number itself"
            )
        )
    unjudged = _unjudged_substitution(tree.root_node, source, walker.judged)
    if unjudged is not None:
        walker.result.issues.append(
            Issue(f"the command holds a {unjudged!r} the parser could not judge as a substitution")
        )
    if tree.root_node.has_error and not any(
        i.reason.startswith("the command does not parse") for i in walker.result.issues
    ):
        walker.result.issues.append(Issue("the command does not parse cleanly"))
    return walker.result
