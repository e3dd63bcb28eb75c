"""Reading words: quote removal, and the expansions, substitutions and arithmetic in them.

A word becomes a :class:`Word` flagged for what bash would expand; the commands of
its substitutions are walked as statements, and the arithmetic bash would evaluate
(``$((...))``, subscripts, offsets) is recorded as events and judged.
"""

from __future__ import annotations

import re

import tree_sitter

from ..shell_quoting import decode_ansi_c, unescape_double, unescape_unquoted
from ..shell_words import Issue, SimpleCommand, Word
from .nodes import EXPANSIONS, SUBSTITUTIONS, node_text
from .state import WalkerState

__all__ = ["WordWalker"]

# Names bash's arithmetic assigns: x=, x+=, ++x, x-- (not ==, <=, >=, !=).
_ARITH_ASSIGN_RE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)\s*(\[[^\]]*\])?\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
    r"|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)\s*(?:\+\+|--)"
)
_CODE_IN_SUBSCRIPT_RE = re.compile(r"\[[^\]]*[$`'\"\\][^\]]*\]")
_BRACE_RE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
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
_REFERENCE_RE = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$")


class WordWalker(WalkerState):
    """Reads words, judging what bash would run or evaluate in them."""

    def arithmetic(self, node: tree_sitter.Node) -> None:
        """Judge arithmetic text: assignments to variables, subscripts holding code."""
        raw = node_text(node)
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

    def scan_words(self, node: tree_sitter.Node) -> None:
        """Find substitutions anywhere below ``node`` and judge their commands, and
        the arithmetic of expansions nested there (``${x:-$[n]}``, ``${x:-${a[n]}}``)."""
        for child in node.named_children:
            if child.type in SUBSTITUTIONS:
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
                    self.expansion_issues(node_text(child))
                self.scan_words(child)

    def word(self, node: tree_sitter.Node, *, arg: bool = False) -> Word:
        """Read one word; ``arg`` when it is a plain argument of a simple command."""
        if self.bound and node.type in ("string", "simple_expansion", "expansion"):
            found = self.bound_word(node)
            if found is not None:
                return found
        if node.type in _PLAIN_KINDS:
            raw = node_text(node)
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
            if len(inner) != 1 or node_text(node) != f'"{node_text(inner[0])}"':
                return None
            ref = inner[0]
        m = _REFERENCE_RE.match(node_text(ref))
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
        raw = node_text(node)
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
                    pieces.append(unescape_double(node_text(child)))
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
        elif kind in SUBSTITUTIONS:
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
        elif kind in EXPANSIONS:
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
