"""The small front-matter dialect of experience files.

Experience files are edited by people, so the header is parsed by hand with a
forgiving reader instead of a YAML library: ``key: value`` lines, lists as
``[a, b]`` (or YAML-style ``- item`` lines), values optionally JSON-quoted when they
would otherwise be ambiguous.  See ``memory_schema/FORMAT.md``.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "FrontMatter",
    "body_after_front_matter",
    "parse_list",
    "parse_scalar",
    "render_list",
    "render_scalar",
    "split_front_matter",
]

FrontMatter = dict[str, "str | list[str]"]

_DELIM = re.compile(r"^---[ \t]*$")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_ -]*?)[ \t]*:(.*)$")
_BLOCK_ITEM = re.compile(r"^[ \t]*-[ \t]+(.*)$|^[ \t]*-$")
_LIST_UNSAFE = re.compile(r"[,\[\]\"]")


def _norm_key(key: str) -> str:
    return re.sub(r"[ -]+", "_", key.strip().lower())


def body_after_front_matter(text: str) -> str:
    """The body of ``text`` (newlines already ``\\n``) without parsing the header.

    The same body :func:`split_front_matter` returns, for callers that need no keys.
    """
    lines = text.split("\n")
    if not lines or not _DELIM.match(lines[0]):
        return text
    end = next((i for i in range(1, len(lines)) if _CLOSE.match(lines[i])), None)
    return text if end is None else "\n".join(lines[end + 1 :])


def split_front_matter(
    text: str, list_keys: frozenset[str] = frozenset()
) -> tuple[FrontMatter | None, str]:
    """Split ``text`` (newlines already ``\\n``) into its header and the body after it.

    Only keys in ``list_keys`` read ``[a, b]`` as a list, so a title such as
    ``[WIP] fix`` stays text.

    Returns ``(None, text)`` when the text does not open with a ``---`` line or the
    header is never closed.
    """
    lines = text.split("\n")
    if not lines or not _DELIM.match(lines[0]):
        return None, text
    end = next((i for i in range(1, len(lines)) if _CLOSE.match(lines[i])), None)
    if end is None:
        return None, text
    fm: FrontMatter = {}
    key: str | None = None
    block: list[str] | None = None
    for line in lines[1:end]:
        item = _BLOCK_ITEM.match(line)
        if block is not None and item is not None:
            block.append(parse_scalar((item.group(1) or "").strip()))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _KEY.match(line)
        if m is None:
            continue  # a stray line a person typed; ignore rather than fail
        key = _norm_key(m.group(1))
        raw = m.group(2).strip()
        if raw:
            fm[key] = parse_list(raw) if key in list_keys else parse_scalar(raw)
            block = None
        else:
            block = []
            fm[key] = block
    for k, v in list(fm.items()):
        if isinstance(v, list) and not v and k not in list_keys:
            fm[k] = ""
    return fm, "\n".join(lines[end + 1 :])


def parse_scalar(raw: str) -> str:
    """Read one value: bare text, or a JSON string when it starts with ``"``."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == '"':
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(value, str):
            return value
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def parse_list(raw: str) -> list[str]:
    """Read ``[a, "b, c", d]``; a missing ``]`` or stray text is tolerated."""
    s = raw.strip()
    if s.startswith("["):
        s = s[1:]
    out: list[str] = []
    i, n = 0, len(s)
    decoder = json.JSONDecoder()
    while i < n:
        while i < n and s[i] in " \t,":
            i += 1
        if i >= n or s[i] == "]":
            break
        if s[i] == '"':
            try:
                value, j = decoder.raw_decode(s, i)
            except ValueError:
                value, j = None, i
            if isinstance(value, str):
                out.append(value)
                i = j
                continue
        j = i
        while j < n and s[j] not in ",]":
            j += 1
        item = parse_scalar(s[i:j])
        if item:
            out.append(item)
        i = j
    return out


def _needs_quotes(value: str) -> bool:
    return (
        value != value.strip()
        or value.startswith(('"', "[", "'", "#"))
        or any(ord(c) < 32 or c == "\x7f" for c in value)
    )


def render_scalar(value: str) -> str:
    """Write a value so that :func:`parse_scalar` gives it back unchanged."""
    if _needs_quotes(value):
        return json.dumps(value, ensure_ascii=False)
    return value


def render_list(items: list[str]) -> str:
    """Write a list so that :func:`parse_list` gives it back unchanged."""
    parts = []
    for item in items:
        if not item or _needs_quotes(item) or _LIST_UNSAFE.search(item):
            parts.append(json.dumps(item, ensure_ascii=False))
        else:
            parts.append(item)
    return "[" + ", ".join(parts) + "]"
