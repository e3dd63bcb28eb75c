"""A turn's refresh of the memory index: what one stat of the directory catches, and
what is left to the full scan (files rewritten in place with nothing else changing).

Real files, real SQLite; directory mtimes are set with ``os.utime`` where a test
needs the index to trust a listing (older than the racy window) without waiting.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_shell_bridge.memory.experience import Experience, write_experience
from agent_shell_bridge.memory.index import MemoryIndex

BRIDGE = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "agent-shell-bridge"
OLD_NS = 10_000_000_000  # ten seconds: well past the racy window


def _exp(title: str, summary: str) -> Experience:
    return Experience(
        title=title,
        date="2025-03-04",
        project="proj",
        task_type="bugfix",
        summary=summary,
        goal=title,
    )


def _age(directory: Path, *files: Path) -> None:
    """Put the mtimes of ``files`` and ``directory`` ten seconds in the past."""
    then = time.time_ns() - OLD_NS
    for path in (*files, directory):
        os.utime(path, ns=(then, then))


def _settle(index: MemoryIndex, root: Path) -> None:
    """Age the directory and files, then let a full scan record them as trusted."""
    directory = root / ".agent-shell" / "memory"
    _age(directory, *directory.glob("*.md"))
    index.sync_root(root)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write_experience(root, _exp("修复缓存失效", "缓存键没有包含语言，中文页面拿到英文结果。"))
    write_experience(root, _exp("Fix flaky upload", "The upload retried without a backoff."))
    return root


@pytest.fixture
def index(tmp_path: Path, root: Path) -> Iterator[MemoryIndex]:
    ix = MemoryIndex(tmp_path / "memdir")
    ix.refresh_root(root)  # first sight: a full scan
    _settle(ix, root)
    yield ix
    ix.close()


def _titles(index: MemoryIndex, query: str) -> list[str]:
    return [h.title for h in index.search(query, project="proj")]


def _directory(root: Path) -> Path:
    return root / ".agent-shell" / "memory"


def test_first_refresh_of_a_root_indexes_every_file(tmp_path: Path, root: Path) -> None:
    with MemoryIndex(tmp_path / "m") as ix:
        stats = ix.refresh_root(root)
        assert (stats.added, ix.count()) == (2, 2)
        assert _titles(ix, "缓存失效") == ["修复缓存失效"]


def test_unchanged_directory_costs_no_file_stat(index: MemoryIndex, root: Path) -> None:
    """Nothing changed: nothing is looked at, so a file rewritten in place with its
    size and mtime kept is not seen (that is the full scan's job)."""
    path = next(_directory(root).glob("*缓存*"))
    st = path.stat()
    path.write_text(path.read_text("utf-8").replace("英文结果", "乱码页"), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    stats = index.refresh_root(root)
    assert (stats.added, stats.updated, stats.removed, stats.unchanged) == (0, 0, 0, 0)
    assert _titles(index, "乱码") == []
    assert index.sync_root(root).updated == 1  # the full scan finds it
    assert _titles(index, "乱码") == ["修复缓存失效"]


def test_file_saved_by_rename_is_picked_up(index: MemoryIndex, root: Path) -> None:
    """How most editors save: a new file written beside it, renamed over it."""
    path = next(_directory(root).glob("*缓存*"))
    text = path.read_text("utf-8").replace("英文结果", "繁体中文结果，另存为")
    tmp = path.with_name(".#save.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    stats = index.refresh_root(root)
    assert (stats.updated, stats.added, stats.removed) == (1, 0, 0)
    assert _titles(index, "繁体中文结果") == ["修复缓存失效"]
    hit = index.search("繁体中文结果", project="proj")[0]
    assert hit.summary == "缓存键没有包含语言，中文页面拿到繁体中文结果，另存为。"


def test_file_written_in_place_while_a_lock_file_comes_and_goes_is_picked_up(
    index: MemoryIndex, root: Path
) -> None:
    """Emacs locks a file it edits (``.#name``) in the same directory: the directory
    changes though no experience's name or inode does, so every file is stat-ed."""
    path = next(_directory(root).glob("*upload*"))
    lock = path.with_name(".#" + path.name)
    lock.symlink_to("user@host.1234")
    with path.open("r+", encoding="utf-8") as fh:  # in place: same inode
        text = fh.read().replace("without a backoff", "without any jitter")
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    lock.unlink()
    stats = index.refresh_root(root)
    assert (stats.updated, stats.unchanged) == (1, 1)  # every file was looked at
    assert _titles(index, "jitter") == ["Fix flaky upload"]


def test_deleted_file_is_dropped_at_the_next_refresh(index: MemoryIndex, root: Path) -> None:
    path = next(_directory(root).glob("*upload*"))
    path.unlink()
    stats = index.refresh_root(root)
    assert (stats.removed, index.count()) == (1, 1)
    assert _titles(index, "upload backoff") == []


def test_new_file_from_another_writer_is_indexed(index: MemoryIndex, root: Path) -> None:
    path = write_experience(root, _exp("迁移脚本超时", "大表迁移要分批，否则锁表超时。"))
    assert index.refresh_root(root).added == 1
    assert [Path(h.path).name for h in index.search("分批", project="proj")] == [path.name]


def test_our_writer_indexes_its_file_without_a_scan(index: MemoryIndex, root: Path) -> None:
    path = write_experience(root, _exp("死锁排查", "两个事务交叉加锁导致死锁。"))
    stats = index.index_file(root, path)
    assert (stats.added, stats.unchanged) == (1, 0)
    assert _titles(index, "死锁") == ["死锁排查"]
    # The directory did change; the next refresh lists it, finds the change was
    # its own writer's, and stats no file (unchanged counts the files stat-ed).
    again = index.refresh_root(root)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 0)
    path.unlink()
    assert index.index_file(root, path).removed == 1
    assert _titles(index, "死锁") == []
    gone = index.refresh_root(root)
    assert (gone.added, gone.updated, gone.removed, gone.unchanged) == (0, 0, 0, 0)


def test_change_in_the_same_clock_tick_as_the_listing_is_not_trusted_away(
    index: MemoryIndex, root: Path
) -> None:
    """A listing taken within the racy window of the directory's mtime is not
    trusted: a name added in the same tick (same mtime) is still found."""
    directory = _directory(root)
    assert index.refresh_root(root).added == 0
    write_experience(root, _exp("Fix proxy loop", "The proxy forwarded to itself."))
    assert index.refresh_root(root).added == 1  # listed now, within the window
    stamp = directory.stat().st_mtime_ns
    later = write_experience(root, _exp("Fix locale sort", "Sorting ignored the locale."))
    os.utime(directory, ns=(stamp, stamp))  # as if in the same tick as the listing
    assert index.refresh_root(root).added == 1
    assert [Path(h.path).name for h in index.search("locale sort", project="proj")] == [later.name]


def test_full_scan_is_claimed_once_per_interval(tmp_path: Path, root: Path) -> None:
    with MemoryIndex(tmp_path / "m", full_scan_every_s=3600) as ix:
        assert ix.claim_full_scan(root)  # never scanned
        assert not ix.claim_full_scan(root)  # claimed, not yet run
        ix.sync_root(root)
        assert not ix.claim_full_scan(root)  # scanned just now
    with MemoryIndex(tmp_path / "m", full_scan_every_s=0) as ix:
        assert ix.claim_full_scan(root)
        ix.sync_root(root)
        assert ix.claim_full_scan(root)


def test_lost_and_damaged_rows_come_back_with_reindex(tmp_path: Path, root: Path) -> None:
    """A row deleted behind the index's back and another whose text was damaged: the
    full scan restores the missing one; ``memory reindex`` (the CLI) restores both."""
    memdir = tmp_path / "memdir"
    with MemoryIndex(memdir) as ix:
        ix.refresh_root(root)
        _settle(ix, root)
    conn = sqlite3.connect(memdir / "index.sqlite3")
    conn.execute("DELETE FROM experiences WHERE title = 'Fix flaky upload'")
    conn.execute(
        "UPDATE experiences SET summary = 'garbage', body = '' WHERE title = ?", ("修复缓存失效",)
    )
    conn.commit()
    conn.close()
    with MemoryIndex(memdir) as ix:
        assert ix.refresh_root(root).added == 0  # nothing on disk changed
        assert ix.count() == 1
        assert ix.sync_root(root).added == 1  # the full scan sees the file without a row
        assert _titles(ix, "upload backoff") == ["Fix flaky upload"]
        assert ix.search("缓存失效", project="proj")[0].summary == "garbage"
    proc = subprocess.run(
        [str(BRIDGE), "memory", "reindex", "--memory-dir", str(memdir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"added": 2' in proc.stdout
    with MemoryIndex(memdir) as ix:
        hit = ix.search("缓存失效", project="proj")[0]
        assert hit.summary == "缓存键没有包含语言，中文页面拿到英文结果。"
        assert ix.count() == 2
        assert ix.refresh_root(root).added == 0  # reindex recorded the directory too


def test_search_reads_candidates_with_a_limit_when_a_term_is_everywhere(tmp_path: Path) -> None:
    """A word in every experience chooses no candidates while a rarer word can, and
    still leaves the right one first when it is the only word."""
    root = tmp_path / "big"
    directory = root / ".agent-shell" / "memory"
    directory.mkdir(parents=True)
    for i in range(1200):
        extra = "zeppelin 飞艇" if i == 777 else ""
        (directory / f"2025-01-01--n{i:04d}.md").write_text(
            f"---\ntitle: Note {i}\ndate: 2025-01-01\nproject: big\ntask_type: x\n"
            f"summary: common words everywhere {extra}\n---\n\n## Goal\n\ncommon\n",
            encoding="utf-8",
        )
    with MemoryIndex(tmp_path / "m") as ix:
        ix.refresh_root(root)
        assert [h.title for h in ix.search("common zeppelin", project="big")][:1] == ["Note 777"]
        assert [h.title for h in ix.search("everywhere 飞艇", project="big")][:1] == ["Note 777"]
        assert len(ix.search("common everywhere", project="big")) == 5
