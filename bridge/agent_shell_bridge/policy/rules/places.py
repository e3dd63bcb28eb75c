"""Where words lead: paths, globs, reads outside the project, secrets, protected files."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ...errors import PathNotAllowed
from ..findings import Context, Finding
from ..paths import protected_reason_for_parts, resolve_physical, resolve_physical_text
from ..shell_words import Word


def _path_text(word: Word, ctx: Context) -> str | None:
    """The path a word names, absolute, as the kernel would be given it; ``None`` if unknown.

    ``..`` is kept: folding it lexically would be wrong after a symlink.
    """
    text = word.text
    if not word.literal:
        only_tilde = (
            word.expansion
            and not word.glob
            and not word.substitution
            and text.startswith("~")
            and "$" not in text
            and "{" not in text
            and (len(text) == 1 or text[1] == "/")
        )
        if not only_tilde:
            return None
        text = ctx.home_text + text[1:]
    # os.path.join(cwd, text), without its generality: this runs for every word.
    if text.startswith("/"):
        return text
    if ctx.cwd is None:
        return None
    base = str(ctx.cwd)
    return base + text if base.endswith("/") else base + "/" + text


def _under(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` (both absolute, normalised) or ``None`` if outside.

    Plain string work: this runs for every word of every command.
    """
    if path == base:
        return ""
    prefix = base if base.endswith("/") else base + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _parts(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p]


def locate(word: Word, ctx: Context) -> tuple[str, Path | None]:
    """Classify a path word as inside/temp/outside/wide/protected/unknown (lexically)."""
    where, norm = _locate_text(word, ctx)
    return where, (Path(norm) if norm is not None else None)


def _locate_text(word: Word, ctx: Context) -> tuple[str, str | None]:
    """:func:`locate` with the normalised path as a string."""
    joined = _path_text(word, ctx)
    if joined is None:
        return "unknown", None
    norm = os.path.normpath(joined)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    roots = ctx.roots_text
    home = ctx.home_text
    if norm.count("/") <= 1 or norm == home:
        return "wide", norm
    for anchor in (*roots, home):
        if _under(anchor, norm) is not None:
            return "wide", norm
    for r in roots:
        rel = _under(norm, r)
        if rel is not None:
            if protected_reason_for_parts(_parts(rel)) is not None:
                return "protected", norm
            return "inside", norm
    temp = ctx.temp_text
    if norm != temp and _under(norm, temp) is not None:
        return "temp", norm
    return "outside", norm


def _physical(word: Word, ctx: Context) -> Path | None:
    """Where the kernel would really take a path word (symlinks and ``..`` followed)."""
    real = _physical_text(word, ctx)
    return Path(real) if real is not None else None


def _physical_text(word: Word, ctx: Context) -> str | None:
    """:func:`_physical` as a string, looked up once per judgement (``ctx.physical``)."""
    joined = _path_text(word, ctx)
    if joined is None:
        return None
    if joined in ctx.physical:
        return ctx.physical[joined]
    real: str | None
    try:
        real = resolve_physical_text(joined, ctx.roots_text)
    except PathNotAllowed:
        real = None
    ctx.physical[joined] = real
    return real


def _within_roots(real: Path, ctx: Context) -> Path | None:
    """The allowed root holding the already resolved ``real``, or ``None``."""
    text = str(real)
    for r, r_text in zip((ctx.root, *ctx.extra), ctx.roots_text, strict=True):
        if _under(text, r_text) is not None:
            return r
    return None


def _within_roots_text(real: str, ctx: Context) -> bool:
    """Whether the already resolved ``real`` lies in one of the allowed roots."""
    return any(_under(real, r) is not None for r in ctx.roots_text)


def _protected_physically(word: Word, ctx: Context) -> bool:
    """Whether ``word`` leads, through links, to .git or the agent's settings or records."""
    text = _physical_text(word, ctx)
    if text is None:
        return False
    for r in ctx.roots_text:
        rel = _under(text, r)
        if rel is not None:
            return protected_reason_for_parts(_parts(rel)) is not None
    return False


# Read-only commands whose operands name files they read: reading outside the
# allowed roots (~/.ssh, /etc, a symlink planted in the repo) would send those bytes
# to the model, so such reads ask first.
READS_FILES = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "stat", "du", "file", "nl", "cut", "cmp",
        "comm", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "grep", "egrep",
        "fgrep", "diff", "column", "od", "expand", "unexpand", "tac", "rev", "fold",
        "paste", "join", "jq", "sort", "uniq", "less", "more", "strings", "xxd",
        "hexdump", "tree", "rg", "find", "awk", "sed", "realpath", "readlink", "look",
        "fmt", "date", "base64",
    }
)  # fmt: skip


_MAX_GLOB_MATCHES = 2000


# Directory entries a glob may make us look at before giving up (a pattern such as
# /*/*/*/*/* would otherwise walk the whole machine, /proc loops included).
_MAX_GLOB_SCAN = 5000


# Options whose value (joined with = or as the next word) names a file to read.
_FILE_OPTIONS = frozenset(
    {
        "--file", "--from-file", "--to-file", "--exclude-from", "--include-from",
        "--contents", "--ignore-file", "--files-from", "--files0-from", "--reference",
        "--random-source", "--gitfile", "--infofile", "--hintro", "--houtro",
        "--magic-file", "--ignore-revs-file",
    }
)  # fmt: skip


# Long options (or any unambiguous abbreviation) that give the pattern or program,
# so that no operand is one.
_CODE_OPTIONS = ("--regexp", "--expression", "--source", "--file", "--from-file")


# Commands whose first operand is a pattern, a program or a string, not a file.
_FIRST_OPERAND_IS_CODE = frozenset(
    {"grep", "egrep", "fgrep", "rg", "jq", "awk", "gawk", "mawk", "nawk", "sed", "look"}
)


# Per command: short options whose value is code, and short options whose value is a file.
_SHORT_CODE: dict[str, str] = {
    "grep": "e", "egrep": "e", "fgrep": "e", "rg": "e", "sed": "e", "awk": "e",
    "gawk": "e", "mawk": "e", "nawk": "e",
}  # fmt: skip


_SHORT_FILE: dict[str, str] = {
    "grep": "f", "egrep": "f", "fgrep": "f", "rg": "f", "sed": "f", "awk": "f",
    "gawk": "f", "mawk": "f", "nawk": "f", "jq": "f", "date": "fr",
}  # fmt: skip


# Short options that take a value, so letters after them in a cluster are not options.
_SHORT_VALUES: dict[str, str] = {
    "grep": "efmABCdD", "egrep": "efmABCdD", "fgrep": "efmABCdD",
    "rg": "ABCEMTdefgjmrt", "du": "BdtX", "tree": "LPIoHT", "ls": "ITw",
    "diff": "CDFILSUWxX",
}  # fmt: skip


def _long_is(option: str, full: str) -> bool:
    """Whether ``option`` is ``full`` or an abbreviation getopt would accept for it."""
    return len(option) > 3 and full.startswith(option)


def _short_letters(name: str, text: str) -> str:
    """The option letters of a short cluster such as ``-rnL``, up to a value option."""
    values = _SHORT_VALUES.get(name, "") + _SHORT_CODE.get(name, "") + _SHORT_FILE.get(name, "")
    out = []
    for ch in text[1:]:
        out.append(ch)
        if ch in values:
            break
    return "".join(out)


def _file_words(name: str, args: Sequence[Word]) -> list[Word]:
    """The words of a read-only command that name files it will read."""
    operands: list[Word] = []
    files: list[Word] = []
    # rg --files lists the files it would search: every operand is a path.
    code_by_option = name == "rg" and any(w.text == "--files" for w in args)
    code_letters = _SHORT_CODE.get(name, "")
    file_letters = _SHORT_FILE.get(name, "")
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        following = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if t == "--":
            operands.extend(x for x in args[i:] if x.text != "-" and not x.pipe)
            break
        if w.pipe:
            continue  # <(...) is a pipe, not a file
        if t == "-" or not t.startswith("-"):
            operands.append(w)
            continue
        if t.startswith("--"):
            option, eq, value = t.partition("=")
            names_code = any(_long_is(option, c) for c in _CODE_OPTIONS)
            # Abbreviations only of --file: --include is an option of its own, not
            # --include-from cut short.
            names_file = option in _FILE_OPTIONS or _long_is(option, "--file")
            code_by_option = code_by_option or names_code
            if eq:
                if names_file or (
                    not names_code and ("/" in value or value.startswith(("~", ".")))
                ):
                    files.append(Word(value, literal=w.literal, glob=w.glob, expansion=w.expansion))
            elif (names_code or names_file) and following is not None:
                if names_file:
                    files.append(following)
                i += 1  # the value, not an operand
            continue
        for pos, ch in enumerate(t[1:], start=1):
            if ch in code_letters or ch in file_letters:
                code_by_option = code_by_option or name in _FIRST_OPERAND_IS_CODE
                value = t[pos + 1 :]
                if value:
                    if ch in file_letters:
                        files.append(Word(value, literal=w.literal, expansion=w.expansion))
                elif following is not None:
                    if ch in file_letters:
                        files.append(following)
                    i += 1
                break
            if ch in _SHORT_VALUES.get(name, ""):
                break
    if name in _FIRST_OPERAND_IS_CODE and not code_by_option:
        operands = operands[1:]
    return operands + files


def reads_outside(name: str, args: Sequence[Word], ctx: Context) -> Finding | None:
    base = name.split()[0]
    files = _file_words(base, args)
    for w in files:
        finding = _outside_operand(name, w, ctx)
        if finding is not None:
            return finding
    return _follows_links(base, args) or _searches_secrets(base, args, files, ctx)


_RECURSIVE_READERS = frozenset({"grep", "egrep", "fgrep", "diff", "rg"})


def _searches_secrets(
    name: str, args: Sequence[Word], files: Sequence[Word], ctx: Context
) -> Finding | None:
    """A recursive search of a folder holding ``~/.ssh`` and the like reads them too."""
    if name not in _RECURSIVE_READERS:
        return None
    if name != "rg" and not any(w.text in ("--recursive", "--dereference-recursive") for w in args):
        return None
    for w in files or [Word(".")]:
        real = _physical(w, ctx)
        if real is None or not (ctx.home == real or ctx.home.is_relative_to(real)):
            continue
        present = ctx.secrets.existing(ctx.home)
        if present:
            return Finding.write(
                f"{name} searches {w.text!r}, which holds {present[0]} (the user's secrets)"
            )
    return None


def _secret_finding(
    name: str, w: Word, path: Path | str | None, real: Path | str | None, ctx: Context
) -> Finding | None:
    """Reading a key, token or credential file of the user always asks first."""
    for p in (path, real):
        if p is None:
            continue
        text = str(p)
        if ctx.secrets.is_secret_resolved(text, ctx.home_text) or any(
            _under(text, r) is not None for r in ctx.secret_roots_text
        ):
            return Finding.write(f"{name} reads {w.text!r}: one of the user's secrets ({text})")
    return None


def _follows_links(name: str, args: Sequence[Word]) -> Finding | None:
    """A recursive read told to follow symlinks may be led out of the project by one."""
    follow: str | None = None
    recursive = False
    no_deref = False
    for w in args:
        t = w.text
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        option = t.partition("=")[0]
        letters = "" if t.startswith("--") else _short_letters(name, t)
        if name in ("grep", "egrep", "fgrep"):
            if "R" in letters or _long_is(option, "--dereference-recursive"):
                follow = t
        elif name == "rg":
            if "L" in letters or _long_is(option, "--follow"):
                follow = t
        elif name == "find":
            if t in ("-L", "-follow"):
                follow = t
        elif name == "du":
            if "L" in letters or option == "--dereference":
                follow = t
        elif name == "tree":
            if "l" in letters:
                follow = t
        elif name in ("ls", "diff"):
            if (name == "ls" and "L" in letters) or option == "--dereference":
                follow = follow or t
            if (name == "diff" and "r" in letters) or (name == "ls" and "R" in letters):
                recursive = True
            if _long_is(option, "--recursive"):
                recursive = True
            if _long_is(option, "--no-dereference"):
                no_deref = True
    if name == "diff" and recursive and not no_deref:
        return Finding.write(
            "diff -r follows symlinks, which may lead out of the project (add --no-dereference)"
        )
    if name == "ls" and not recursive:
        follow = None
    if follow is None:
        return None
    return Finding.write(f"{name} {follow} follows symlinks, which may lead out of the project")


def _outside_operand(name: str, w: Word, ctx: Context) -> Finding | None:
    if w.glob and not w.expansion and not w.substitution:
        return _glob_outside(name, w, ctx)
    if w.pipe:
        return None
    where, path = _locate_text(w, ctx)
    if where == "unknown" or path is None:
        return Finding.write(f"{name} reads {w.text!r}, which cannot be located in advance")
    if path == "/dev/null":
        return None
    real = _physical_text(w, ctx)
    secret = _secret_finding(name, w, path, real, ctx)
    if secret is not None:
        return secret
    if real is not None and _within_roots_text(real, ctx):
        return None  # e.g. "." is the project root itself
    if where in ("inside", "protected"):
        return Finding.write(f"{name} reads {w.text!r}, a link leading out of the project")
    return Finding.write(f"{name} reads {w.text!r}, outside the project ({real or path})")


def reads_outside_file(what: str, word: Word, ctx: Context) -> Finding | None:
    """A confirm finding when ``word`` (an input redirection target) reads outside."""
    return _outside_operand(what, word, ctx)


def _inside_roots(path: Path, ctx: Context) -> bool:
    try:
        real = resolve_physical(path)
    except PathNotAllowed:
        return False
    # Not the temp directory: other programs' tickets and secrets live there too.
    return _within_roots(real, ctx) is not None


_GLOB_CHAR_RE = re.compile(r"[*?\[]")


# Bash syntax Python's fnmatch reads differently: [^…], POSIX classes, equivalence
# classes, extglob and globstar. Such patterns cannot be expanded faithfully here.
_UNSUPPORTED_GLOB_RE = re.compile(r"\[\^|\[\[[:=.]|[?*+@!]\(|\*\*")


class _GlobRefused(Exception):
    """A glob that cannot be checked in advance; the message says why."""


def _glob_matches(word: Word, ctx: Context) -> list[Path]:
    """Expand a glob word now, as bash would, within a bounded amount of looking.

    Directories are only listed when they lie physically inside the allowed roots, so
    a pattern can never make the bridge walk the rest of the machine.
    """
    text = word.text
    if text.startswith("~/") or text == "~":
        text = str(ctx.home) + text[1:]
    if ctx.cwd is None and not text.startswith("/"):
        raise _GlobRefused("is relative to a directory not known in advance")
    if _UNSUPPORTED_GLOB_RE.search(text):
        raise _GlobRefused("uses glob syntax that cannot be checked in advance")
    full = text if text.startswith("/") else os.path.join(ctx.cwd or ctx.root, text)
    parts = full.split("/")
    first = next(i for i, p in enumerate(parts) if _GLOB_CHAR_RE.search(p))
    prefix = Path("/".join(parts[:first]) or "/")
    try:
        real_prefix = resolve_physical(prefix)
    except PathNotAllowed as exc:
        raise _GlobRefused(f"goes through {prefix}, which cannot be resolved") from exc
    if _within_roots(real_prefix, ctx) is None:
        raise _GlobRefused(f"looks in {prefix}, outside the project")
    frontier = [prefix]
    budget = _MAX_GLOB_SCAN
    for pattern in parts[first:]:
        if pattern in ("", "."):
            continue
        if not _GLOB_CHAR_RE.search(pattern):
            frontier = [d / pattern for d in frontier]  # pathlib keeps "..": resolved later
            continue
        found: list[Path] = []
        for d in frontier:
            try:
                real = resolve_physical(d)
            except PathNotAllowed as exc:
                raise _GlobRefused(f"goes through {d}, which cannot be resolved") from exc
            if _within_roots(real, ctx) is None:
                raise _GlobRefused(f"looks in {d}, outside the project")
            names: list[str] = []
            if pattern.startswith("."):
                names.extend((".", ".."))  # bash before 5.2 lets .* match them
            try:
                with os.scandir(real) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget < 0:
                            raise _GlobRefused("would look at too many files to check")
                        names.append(entry.name)
            except OSError:
                continue  # not a directory or unreadable: bash matches nothing there
            for n in names:
                if (n.startswith(".") and not pattern.startswith(".")) or not fnmatch.fnmatchcase(
                    n, pattern
                ):
                    continue
                found.append(d / n)
                if len(found) > _MAX_GLOB_MATCHES:
                    raise _GlobRefused("matches too many files to check")
        frontier = found
    matches = [m for m in frontier if os.path.lexists(m)]
    if not matches and "[" in full:
        # Bracket expressions are where bash and fnmatch can disagree: a pattern
        # that seems to match nothing may match something for bash.
        raise _GlobRefused("matches nothing here, so what it would name is unknown")
    return matches


def _glob_outside(name: str, word: Word, ctx: Context) -> Finding | None:
    """Expand a glob operand and check where each match really leads."""
    try:
        matches = _glob_matches(word, ctx)
    except _GlobRefused as exc:
        return Finding.write(f"{name} {word.text!r} {exc}")
    if not matches:
        # Bash passes a pattern that matches nothing on as it is: check that name.
        return _outside_operand(name, Word(word.text), ctx)
    for match in matches:
        if match.name.startswith("-"):
            return Finding.write(f"{name} {word.text!r} matches {match.name!r}, read as an option")
        if not _inside_roots(match, ctx):
            return Finding.write(f"{name} {word.text!r} reads {match}, outside the project")
        lexical = Path(os.path.normpath(match))
        secret = _secret_finding(
            name, Word(str(match)), lexical, _physical(Word(str(match)), ctx), ctx
        )
        if secret is not None:
            return secret
    return None


def names_protected(w: Word, ctx: Context) -> bool:
    """Whether a word of a writing command names .git or the agent's settings or records.

    Checked as written, through symlinks, and for globs against what they match now.
    """
    if w.glob and not w.expansion and not w.substitution:
        try:
            matches = _glob_matches(w, ctx)
        except _GlobRefused:
            return False
        return any(_protected_physically(Word(str(m)), ctx) for m in matches) or any(
            locate(Word(str(m)), ctx)[0] == "protected" for m in matches
        )
    text = w.text
    if not w.literal:
        return False
    if text.startswith("-") and "=" not in text:
        # A value glued to short options (curl -o.git/hooks/x, tar -xf.git/x): any
        # tail of the cluster may be the file name.
        folded = text.casefold()
        if text.startswith("--") or (".git" not in folded and ".agent-shell" not in folded):
            return False
        return any(_locate_text(Word(text[k:]), ctx)[0] == "protected" for k in range(2, len(text)))
    if text.startswith("-"):
        # An option's value: --output=F, --file=F.
        text = text.split("=", 1)[1]
    if not text:
        return False
    target = Word(text.split("=", 1)[-1] if not w.text.startswith("-") else text)
    return _locate_text(target, ctx)[0] == "protected" or _protected_physically(target, ctx)


# Programs that remove their operand itself: a symlink named last is removed, not
# followed (the folders on its way still are: rm dir_link/x removes outside).
_ACTS_ON_LINK_ITSELF = frozenset({"rm", "unlink", "rmdir"})
_WRITES_NO_OPERAND = frozenset({"git", "cd", "pushd", "popd"})


def shown_path(path: str, ctx: Context) -> str:
    """``path`` as a person reads it: ``~/.bashrc`` rather than ``/home/me/.bashrc``."""
    rel = _under(path, ctx.home_text)
    if rel is None:
        return path
    return "~/" + rel if rel else "~"


def _where_link_leads(
    word: Word, ctx: Context, *, follow_last: bool = True
) -> tuple[str, str] | None:
    """``(written, real)`` when ``word`` names a place in the project (or the temp
    directory) that a symlink on its way really takes out of it; else ``None``.

    With ``follow_last`` false, a last component that is a link is not followed (what
    ``rm`` does); a trailing slash, ``.`` or ``..`` make it followed all the same.
    """
    where, lexical = _locate_text(word, ctx)
    joined = _path_text(word, ctx)
    if lexical is None or joined is None or where not in ("inside", "protected", "temp"):
        return None
    head, _, last = joined.rpartition("/")
    if follow_last or last in ("", ".", ".."):
        real = _physical_text(word, ctx)
    else:
        up = _physical_text(Word(head or "/"), ctx)
        real = None if up is None else up.rstrip("/") + "/" + last
    if real is None or _within_roots_text(real, ctx):
        return None
    if where == "temp" and _under(real, ctx.temp_text) is not None:
        return None
    return word.text, real


def link_out_of_project(what: str, word: Word, ctx: Context) -> Finding | None:
    """A write to ``word`` that a symlink takes out of the project, named as it really is.

    Into the user's secrets it is refused; anywhere else the user is asked each time
    (never for the session: a grant was given for a write that stayed in the project).
    """
    return _link_finding(what, word, ctx, follow_last=True)


def _link_finding(what: str, word: Word, ctx: Context, *, follow_last: bool) -> Finding | None:
    found = _where_link_leads(word, ctx, follow_last=follow_last)
    if found is None:
        return None
    written, real = found
    shown = f"{written} → {shown_path(real, ctx)}"
    if ctx.secrets.is_secret_resolved(real, ctx.home_text) or any(
        _under(real, r) is not None for r in ctx.secret_roots_text
    ):
        return Finding.danger(f"{what}: {shown}, among the user's secrets (through a symlink)")
    return Finding.ask(f"{what}: {shown}, outside the project (through a symlink)")


def writes_through_links(name: str, args: Sequence[Word], ctx: Context) -> Finding | None:
    """A command that may write its operands, one of which a symlink leads out of the
    project (``cp README.md notes_link.md`` with ``notes_link.md -> ~/.bashrc``).

    Which operand a program writes is not known for every program, so each literal
    operand and option value is followed. Git never follows links in the work tree,
    and cd (which has moved ``ctx.cwd`` on already) writes nothing.
    """
    if name in _WRITES_NO_OPERAND:
        return None
    follow_last = name not in _ACTS_ON_LINK_ITSELF
    found: list[Finding] = []
    for w in args:
        for target in _operand_paths(w, ctx):
            finding = _link_finding(name, target, ctx, follow_last=follow_last)
            if finding is not None:
                if not finding.ask_once:
                    return finding
                found.append(finding)
    return found[0] if found else None


def _operand_paths(w: Word, ctx: Context) -> list[Word]:
    """The paths a word may name: itself, an option's or ``key=``'s value, a glob's matches."""
    if w.glob and not w.expansion and not w.substitution:
        try:
            matches = _glob_matches(w, ctx)
        except _GlobRefused:
            return []
        base = str(ctx.cwd or ctx.root)
        return [Word(_under(str(m), base) or str(m)) for m in matches]
    if w.pipe or not w.text:
        return []
    out = [] if w.text.startswith("-") else [w]
    if w.literal:
        _, eq, value = w.text.partition("=")
        if eq and value:
            out.append(Word(value))
    return out
