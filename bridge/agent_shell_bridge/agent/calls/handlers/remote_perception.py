"""The headless perception tools of a remote session, answered from its host.

A remote session's root here is its local mirror, which holds records, not the
project: searching or reading it would answer "nothing" with confidence. So
``symbol_search``, ``open_file`` and ``org_search`` look on the host through the
session's connection (confined there like every remote file). ``buffer_overview``
and ``project_diagnostics`` are Emacs's, on its buffers visiting the project's files;
with no such Emacs connected they say why they are unavailable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....errors import ToolFailed
from ....tools import files
from ....tools.org_outline import org_headings
from ....types import JSONObject

if TYPE_CHECKING:
    from ....remote.project import RemoteProject

__all__ = ["UNAVAILABLE", "org_outline", "symbol_matches", "visible_name"]

UNAVAILABLE = (
    "{tool} looks at the buffers Emacs visits of a remote project's files (on {where}), "
    "and no Emacs is connected to this remote session; use read_file, grep and "
    "run_command, which work there."
)
ORG_DEFAULTS = ("README.org", "TODO.org")


async def symbol_matches(
    remote: RemoteProject, pattern: str, limit: int, timeout_s: float
) -> tuple[list[object], bool]:
    """Lines matching PATTERN (Python ``re``) on the host, at most LIMIT; and whether
    there were more."""
    found = await remote.files.grep(
        pattern, ".", glob=None, skip=sorted(files.SKIP_DIRS), limit=limit + 1, timeout_s=timeout_s
    )
    matches = found["matches"]
    assert isinstance(matches, list)
    return matches[:limit], len(matches) > limit or bool(found.get("truncated"))


async def visible_name(remote: RemoteProject, rel: str) -> str:
    """The TRAMP name the user opens REL with; refused when it is not a file there."""
    if not await remote.files.exists(rel):
        raise ToolFailed(f"No such file: {rel}")
    return remote.target.tramp_name(remote.files.absolute(rel))


async def org_outline(remote: RemoteProject, rel: str | None, query: str | None) -> JSONObject:
    """The headings of the org file REL on the host (its README.org or TODO.org
    when REL is None), those matching QUERY when given."""
    if rel is None:
        rel = ORG_DEFAULTS[0]
        for name in ORG_DEFAULTS:
            if await remote.files.exists(name):
                rel = name
                break
    if not await remote.files.exists(rel):
        raise ToolFailed(f"No org file {rel}")
    text = (await remote.files.read(rel)).decode("utf-8", errors="replace")
    return {"file": rel, "headings": org_headings(text, query)}
