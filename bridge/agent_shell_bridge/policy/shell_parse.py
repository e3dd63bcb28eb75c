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
from dataclasses import dataclass, field
from functools import cache

import tree_sitter
import tree_sitter_bash

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
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
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
_DOUBLE_ESCAPE_RE = re.compile(r'\\([$`"\\\n])')
_ASSIGNING_EXPANSION_RE = re.compile(r"^\$\{[^}]*?:?=")


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


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _decode_ansi_c(body: str) -> str:
    """Decode the inside of ``$'...'`` the way bash does."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = re.match(f"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 :])
            if m:
                out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
                i += 2 + len(m.group(0))
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _unescape_unquoted(raw: str) -> str:
    """Remove backslash escapes from an unquoted word."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def _unescape_double(raw: str) -> str:
    """Backslash only escapes ``$ ` " \\`` and newline inside double quotes."""
    if "\\" not in raw:
        return raw
    return _DOUBLE_ESCAPE_RE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


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
        elif kind == "c_style_for_statement" or (
            kind == "compound_statement" and node.children and node.children[0].type == "(("
        ):
            self.arithmetic_command(node)
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
            self.result.commands.append(
                SimpleCommand(argv=[], assignments=[(name, value)], text=_text(node))
            )
        elif kind == "variable_assignments":
            assigns = [self.assignment(c) for c in node.named_children]
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
        """``for``/``select`` NAME in WORDS: NAME is assigned like ``NAME=word``."""
        name = ""
        values: list[Word] = []
        for child in node.children:
            if child.type == "variable_name" and not name:
                name = _text(child)
            elif child.type in ("do_group", "compound_statement"):
                self.statement(child, in_sub=in_sub)
            elif child.is_named and child.type != "comment":
                values.append(self.word(child, arg=True))
        value = Word(
            " ".join(v.text for v in values),
            literal=all(v.literal for v in values),
            substitution=any(v.substitution for v in values),
        )
        self.result.commands.append(
            SimpleCommand(argv=[], assignments=[(name, value)], text=_text(node), kind="bind")
        )

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
                cmd.argv.append(self.word(inner))
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
                self.scan_words(child)
        return "".join(parts)

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
        # Subscripts and ${x:offset:length} are arithmetic, evaluated with their quotes.
        head = raw.split(":", 1)[0]
        if _CODE_IN_SUBSCRIPT_RE.search(raw) or "$(" in head or "`" in head:
            self.result.issues.append(
                Issue("an array subscript in ${...} is evaluated and may run code")
            )

    # -- words -------------------------------------------------------------

    def scan_words(self, node: tree_sitter.Node) -> None:
        """Find substitutions anywhere below ``node`` and judge their commands."""
        for child in node.named_children:
            if child.type in _SUBSTITUTIONS:
                self.word(child)
            else:
                self.scan_words(child)

    def word(self, node: tree_sitter.Node, *, arg: bool = False) -> Word:
        """Read one word; ``arg`` when it is a plain argument of a simple command."""
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
                value = _unescape_unquoted(raw)
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
            pieces.append(_decode_ansi_c(raw[2:-1] if len(raw) >= 3 else ""))
            unquoted.append("\x00")
        elif kind in ("string", "translated_string"):
            flags["quoted"] = True
            for child in node.named_children:
                if child.type == "string_content":
                    pieces.append(_unescape_double(_text(child)))
                else:
                    self._word_into(child, pieces, [], flags)
            unquoted.append("\x00")
        elif kind == "concatenation":
            for child in node.children:
                self._word_into(child, pieces, unquoted, flags)
        elif kind in _SUBSTITUTIONS:
            flags["substitution"] = True
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


def parse_command(command: str) -> ParsedCommand:
    """Parse ``command`` into simple commands; never raises on bad input."""
    source = command.encode("utf-8", "surrogatepass")
    tree = _parser().parse(source)
    walker = _Walker(source)
    walker.statement(tree.root_node)
    if tree.root_node.has_error and not any(
        i.reason.startswith("the command does not parse") for i in walker.result.issues
    ):
        walker.result.issues.append(Issue("the command does not parse cleanly"))
    return walker.result
