"""Bridge-side file tools: reading, listing, searching, and the headless edit fallback.

``read_file``, ``list_directory`` and ``grep`` always run here. The edit tools
normally run in Emacs (through the buffer, under the user's undo); when no Emacs
client is connected these implementations keep the same contract: snapshot before
writing, refuse when the file changed since the agent read it, report a diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ToolFailed
from ..limits import HEAD_LINES, TAIL_LINES
from ..policy.secrets import BUILTIN, SecretCheck, SecretList
from ..types import JSONObject
from .args import EditArgs, InsertTextArgs, ReplaceRegionArgs, WriteFileArgs

__all__ = [
    "EditContext",
    "PlannedEdit",
    "apply_edit",
    "drop_snapshot",
    "grep",
    "list_directory",
    "plan_edit",
    "read_text",
    "sha256_bytes",
    "unified_diff",
]

MAX_READ_LINES = 1000
MAX_READ_BYTES = 512 * 1024
MAX_LIST_ENTRIES = 500
MAX_GREP_HITS = 200
MAX_DIFF_LINES = 400
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache"})


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _decode(data: bytes, path: Path) -> str:
    if b"\x00" in data[:8192]:
        raise ToolFailed(f"{path.name} looks like a binary file; not shown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolFailed(
            f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))


def read_text(path: Path, display: str, start: int | None, end: int | None) -> JSONObject:
    """Lines ``start``..``end`` (1-based, inclusive) of a text file, bounded.

    A whole-file read of a long file keeps its first 200 and last 100 lines, like
    any long output, and says which range to ask for; explicit ranges are capped.
    """
    if not path.exists():
        raise ToolFailed(f"No such file: {display}")
    if path.is_dir():
        raise ToolFailed(f"{display} is a directory; use list_directory")
    return text_range(path.read_bytes(), path, display, start, end)


def text_range(
    data: bytes, path: Path, display: str, start: int | None, end: int | None
) -> JSONObject:
    """``read_text`` of content already in hand (from disk or from an editor's buffer)."""
    text = _decode(data, path)
    lines = text.splitlines()
    total = len(lines)
    result: JSONObject = {"path": display, "total_lines": total, "sha256": sha256_bytes(data)}
    if start is None and end is None and total > HEAD_LINES + TAIL_LINES:
        omitted = total - HEAD_LINES - TAIL_LINES
        tail_first = total - TAIL_LINES + 1
        result.update(
            start_line=1,
            end_line=total,
            truncated=True,
            text=_numbered(lines[:HEAD_LINES], 1)
            + f"\n[... lines {HEAD_LINES + 1}-{tail_first - 1} ({omitted} lines) omitted ...]\n"
            + _numbered(lines[-TAIL_LINES:], tail_first),
            note=f"Long file: read lines {HEAD_LINES + 1}-{tail_first - 1} with start_line "
            "and end_line when you need them.",
        )
        return _cap_bytes(result)
    first = max(1, start or 1)
    last = min(total, end or total)
    if first > max(total, 1):
        raise ToolFailed(f"start_line {first} is past the end of {display} ({total} lines)")
    chosen = lines[first - 1 : last]
    truncated = False
    if len(chosen) > MAX_READ_LINES:
        chosen = chosen[:MAX_READ_LINES]
        last = first + MAX_READ_LINES - 1
        truncated = True
    result.update(start_line=first, end_line=last, text=_numbered(chosen, first))
    if truncated:
        result["truncated"] = True
        result["note"] = f"Output capped; read from line {last + 1} to see more."
    return _cap_bytes(result)


def _cap_bytes(result: JSONObject) -> JSONObject:
    body = str(result["text"])
    if len(body.encode()) > MAX_READ_BYTES:
        result["text"] = body.encode()[:MAX_READ_BYTES].decode("utf-8", "ignore")
        result["truncated"] = True
        result.setdefault("note", "Output capped by size; read a smaller range.")
    return result


def list_directory(
    path: Path, display: str, depth: int, root: Path, *, secrets: SecretList = BUILTIN
) -> JSONObject:
    if not path.is_dir():
        raise ToolFailed(f"{display} is not a directory")
    entries: list[str] = []
    truncated = False
    base_depth = len(path.parts)
    # Only a listing that reaches into $HOME can meet its secrets (links are not followed).
    home = os.path.realpath(os.path.expanduser("~"))
    real = os.path.realpath(path)
    guard = (
        real == home
        or home.startswith(real.rstrip("/") + "/")
        or real.startswith(home.rstrip("/") + "/")
    )
    check = _checker(secrets)
    for current, dirs, files in os.walk(path):
        here = Path(current)
        level = len(here.parts) - base_depth
        shown = sorted(d for d in dirs if d not in SKIP_DIRS)
        # Secret folders (~/.ssh, ~/.config/gh …) are shown but never opened.
        dirs[:] = [d for d in shown if not (guard and _secret(here / d, root, check))]
        if level + 1 >= depth:
            shown_dirs, dirs[:] = shown, []
        else:
            shown_dirs = shown
        for name in [*(d + "/" for d in shown_dirs), *sorted(files)]:
            rel = (here / name).relative_to(path)
            entries.append(str(rel) + ("/" if name.endswith("/") else ""))
            if len(entries) >= MAX_LIST_ENTRIES:
                truncated = True
                break
        if truncated:
            break
    result: JSONObject = {"path": display, "depth": depth, "entries": sorted(set(entries))}
    if truncated:
        result["truncated"] = True
    return result


async def grep(
    pattern: str,
    path: Path,
    display: str,
    glob: str | None,
    root: Path,
    timeout_s: float,
    *,
    secrets: SecretList = BUILTIN,
    limit: int = MAX_GREP_HITS,
) -> JSONObject:
    """Search with ripgrep (argv, no shell); Python's re when ripgrep is absent.

    At most ``limit`` hits: ripgrep's output is read as it comes and ripgrep is
    stopped once there are that many, so only the hits kept are parsed and checked.
    """
    check = _checker(secrets)
    rg = shutil.which("rg")
    hits: list[JSONObject]
    if rg is not None:
        argv = [rg, "--no-config", "--json", "--max-columns", "300", "-e", pattern]
        if glob:
            argv += ["--glob", glob]
        argv += ["--", str(path)]
        try:
            async with asyncio.timeout(timeout_s):
                hits = await _rg_hits(argv, root, check, limit)
        except TimeoutError as exc:
            raise ToolFailed(f"grep timed out after {timeout_s:g} s") from exc
    else:
        hits = await asyncio.to_thread(_grep_python, pattern, path, glob, root, check, limit)
    result: JSONObject = {"pattern": pattern, "path": display, "matches": hits}
    if len(hits) >= limit:
        result["truncated"] = True
    return result


_RG_LINE_LIMIT = 1 << 20  # bytes of one JSON line ripgrep may write


async def _rg_hits(argv: list[str], root: Path, check: SecretCheck, limit: int) -> list[JSONObject]:
    """The first ``limit`` matches ripgrep prints outside the user's secrets."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root,
        start_new_session=True,
        limit=_RG_LINE_LIMIT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.create_task(proc.stderr.read())
    hits: list[JSONObject] = []
    secret: dict[str, bool] = {}
    ended = False
    try:
        while len(hits) < limit:
            raw = await proc.stdout.readline()
            if not raw:
                ended = True
                break
            msg = json.loads(raw)
            if msg.get("type") != "match":
                continue
            data = msg["data"]
            file_text = data["path"].get("text", "")
            if file_text not in secret:
                secret[file_text] = _secret(Path(file_text), root, check)
            if secret[file_text]:
                continue
            line_text = data["lines"].get("text", "").rstrip("\n")
            hits.append(
                {
                    "path": _rel(Path(file_text), root),
                    "line": data["line_number"],
                    "text": line_text[:300],
                }
            )
    finally:
        if not ended and proc.returncode is None:
            # Enough hits, a timeout or an error: the rest of the search is not wanted.
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        err = await errors
    if ended and proc.returncode not in (0, 1):
        raise ToolFailed("grep failed: " + err.decode("utf-8", "replace").strip()[:500])
    return hits


def _grep_python(
    pattern: str,
    path: Path,
    glob: str | None,
    root: Path,
    check: SecretCheck | None = None,
    limit: int = MAX_GREP_HITS,
) -> list[JSONObject]:
    if check is None:
        check = _checker(BUILTIN)
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ToolFailed(f"Invalid pattern: {exc}") from exc
    hits: list[JSONObject] = []
    files = [path] if path.is_file() else sorted(p for p in path.rglob(glob or "*") if p.is_file())
    for file in files:
        if any(part in SKIP_DIRS for part in file.parts):
            continue
        # Like ripgrep, follow no symlinks: a link planted in the repository must not
        # lead the search to files outside it.
        if file.is_symlink() or not file.resolve().is_relative_to(root.resolve()):
            continue
        if _secret(file, root, check):
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if rx.search(line):
                hits.append({"path": _rel(file, root), "line": number, "text": line[:300]})
                if len(hits) >= limit:
                    return hits
    return hits


def _checker(secrets: SecretList) -> SecretCheck:
    """One look at $HOME for all the files of a listing or a search."""
    return secrets.checker(Path(os.path.expanduser("~")))


def _secret(file: Path, root: Path, check: SecretCheck) -> bool:
    """Whether a file found by a search is one of the user's secrets (~/.ssh …).

    Matters when the project holds $HOME: searching .config must not show
    .config/gh/hosts.yml to the model.
    """
    return check(file if file.is_absolute() else root / file)


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def unified_diff(old: str, new: str, display: str, *, created: bool = False) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile="/dev/null" if created else f"a/{display}",
            tofile=f"b/{display}",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [
            *lines[:MAX_DIFF_LINES],
            f"[... {len(lines) - MAX_DIFF_LINES} diff lines omitted]\n",
        ]
    return "".join(x if x.endswith("\n") else x + "\n" for x in lines)


@dataclass(frozen=True, slots=True)
class EditContext:
    root: Path
    op_id: str
    turn_id: str
    session_id: str
    expected_sha256: str | None


def _snapshot(ctx: EditContext, path: Path, display: str, old: bytes | None, new_hash: str) -> None:
    """Keep the old bytes and append a manifest line; the same layout Emacs writes,
    so ``agent-shell-undo-turn`` restores bridge-side edits too."""
    snap_root = ctx.root / ".agent-shell" / "snapshots"
    name = f"{ctx.op_id}/{display}"
    if old is not None:
        target = snap_root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(old)
    else:
        snap_root.mkdir(parents=True, exist_ok=True)
    record = {
        "op_id": ctx.op_id,
        "turn_id": ctx.turn_id,
        "session_id": ctx.session_id,
        "path": display,
        "existed": old is not None,
        "snapshot": name if old is not None else None,
        "sha256_before": sha256_bytes(old) if old is not None else None,
        "sha256_after": new_hash,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    with (snap_root / "index.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _lines_edit(text: str, start: int, end: int, new_text: str, expected: str | None) -> str:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if start > total + 1 or end > total or end < start - 1:
        raise ToolFailed(f"Lines {start}-{end} are outside the file ({total} lines)")
    current = "".join(lines[start - 1 : end])
    if expected is not None and current.rstrip("\n") != expected.rstrip("\n"):
        raise ToolFailed(
            f"Lines {start}-{end} no longer contain expected_text; re-read the file and retry"
        )
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    replacement = new_text
    if replacement and not replacement.endswith(("\n", "\r\n")) and end < total:
        replacement += eol
    if (
        replacement
        and not replacement.endswith(("\n", "\r\n"))
        and end == total
        and current.endswith("\n")
    ):
        replacement += eol
    return "".join(lines[: start - 1]) + replacement + "".join(lines[end:])


@dataclass(frozen=True, slots=True)
class PlannedEdit:
    """An edit computed but not yet written: the preview and the write share it."""

    display: str
    old_bytes: bytes | None
    old: str
    new: str
    count: int | None

    @property
    def diff(self) -> str:
        return unified_diff(self.old, self.new, self.display, created=self.old_bytes is None)


def plan_edit(
    args: EditArgs,
    path: Path,
    display: str,
    expected: str | None,
    *,
    current: bytes | Literal[False] | None = False,
) -> PlannedEdit:
    """Compute what an edit tool would write, refusing stale or impossible edits.

    ``current`` is the file's content when it comes from elsewhere than the disk
    (an editor's unsaved buffer; None: no such file); False reads the disk.
    """
    if current is False:
        current = path.read_bytes() if path.exists() else None
    old_bytes = current
    existed = old_bytes is not None
    if old_bytes is not None and expected and sha256_bytes(old_bytes) != expected:
        raise ToolFailed(
            f"{display} changed since you read it (edited by the user?); "
            "read it again before editing"
        )
    old = _decode(old_bytes, path) if old_bytes is not None else ""
    count: int | None = None
    if isinstance(args, WriteFileArgs):
        new = args.content
    elif not existed:
        raise ToolFailed(f"No such file: {display}")
    elif isinstance(args, ReplaceRegionArgs):
        new = _lines_edit(old, args.start_line, args.end_line, args.new_text, args.expected_text)
    elif isinstance(args, InsertTextArgs):
        new = _lines_edit(old, args.line, args.line - 1, args.text, None)
    else:
        if args.literal:
            count = old.count(args.pattern)
            new = old.replace(args.pattern, args.replacement)
        else:
            try:
                new, count = re.subn(args.pattern, args.replacement, old, flags=re.MULTILINE)
            except re.error as exc:
                raise ToolFailed(f"Invalid pattern or replacement: {exc}") from exc
        if count == 0:
            raise ToolFailed(f"Pattern not found in {display}; nothing changed")
    return PlannedEdit(display, old_bytes, old, new, count)


def apply_edit(args: EditArgs, path: Path, display: str, ctx: EditContext) -> JSONObject:
    """Perform one edit tool on disk (the headless fallback of the Emacs actions)."""
    plan = plan_edit(args, path, display, ctx.expected_sha256)
    snapshot_edit(ctx, path, plan)
    _atomic_write(path, plan.new.encode("utf-8"))
    return edit_result(plan)


def snapshot_edit(ctx: EditContext, path: Path, plan: PlannedEdit) -> None:
    """Keep what ``plan`` replaces, so undo-turn can restore it."""
    _snapshot(ctx, path, plan.display, plan.old_bytes, sha256_bytes(plan.new.encode("utf-8")))


def drop_snapshot(ctx: EditContext, plan: PlannedEdit) -> None:
    """Take back :func:`snapshot_edit`'s record of an edit refused before anything
    was written, so undo-turn does not see an edit that never happened."""
    snap_root = ctx.root / ".agent-shell" / "snapshots"
    index = snap_root / "index.jsonl"
    if index.exists():
        kept = [
            line
            for line in index.read_text(encoding="utf-8").splitlines(keepends=True)
            if not _entry_of(line, ctx.op_id, plan.display)
        ]
        _atomic_write(index, "".join(kept).encode("utf-8"))
    kept_bytes = snap_root / f"{ctx.op_id}/{plan.display}"  # as _snapshot names it
    kept_bytes.unlink(missing_ok=True)
    op_dir = snap_root / ctx.op_id
    for parent in kept_bytes.parents:
        if parent == snap_root or not parent.is_relative_to(op_dir):
            break
        with contextlib.suppress(OSError):  # not empty: another edit of the operation
            parent.rmdir()


def _entry_of(line: str, op_id: str, display: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(record, dict) and record.get("op_id") == op_id and record.get("path") == display
    )


def edit_result(plan: PlannedEdit) -> JSONObject:
    """What an edit tool reports once ``plan`` is written."""
    new_hash = sha256_bytes(plan.new.encode("utf-8"))
    result: JSONObject = {
        "path": plan.display,
        "created": plan.old_bytes is None,
        "sha256_before": sha256_bytes(plan.old_bytes) if plan.old_bytes is not None else None,
        "sha256_after": new_hash,
        "diff": plan.diff,
    }
    if plan.count is not None:
        result["replacements"] = plan.count
    return result
