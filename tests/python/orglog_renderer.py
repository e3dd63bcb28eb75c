"""Render ``log/entry`` / ``log/update`` params the way the bridge sends them.

A line-oriented helper for the Emacs suite: each input line is a JSON object
``{"stream": NAME, "method": "log/entry" | "log/update", "params": {...}}``; each
output line is the params the bridge would notify, with ``org`` / ``org_head`` /
``org_body_append`` rendered by the real :class:`OrgLogWriter` of that stream (one
writer and file per stream, in a temporary directory), through the same
:func:`entry_params` / :func:`update_params` calls as the bridge's reporter.  Params
the writer refuses (a duplicate id, an unknown entry) come back unrendered, with an
``error`` field.  Run as ``python tests/python/orglog_renderer.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_shell_bridge.orglog import (
    LogEntry,
    LogUpdate,
    OrgLogWriter,
    entry_params,
    update_params,
)


def render(writer: OrgLogWriter, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The notification params for METHOD with PARAMS, after WRITER applied them."""
    if method == "log/entry":
        entry = LogEntry.model_validate(params)
        writer.add(entry)
        return entry_params(entry, writer.rendered(entry.id))
    upd = LogUpdate.model_validate(params)
    before = writer.rendered(upd.id)
    writer.update(upd)
    return update_params(upd, before, writer.rendered(upd.id))


def main() -> None:
    writers: dict[str, OrgLogWriter] = {}
    with tempfile.TemporaryDirectory(prefix="orglog-render-") as tmp:
        for line in sys.stdin:
            if not line.strip():
                continue
            op = json.loads(line)
            name = str(op["stream"])
            if name not in writers:
                path = Path(tmp) / f"{len(writers)}.org"
                writers[name] = OrgLogWriter(path, title=name)
            try:
                out = render(writers[name], str(op["method"]), op["params"])
            except (ValueError, KeyError) as exc:
                out = {**op["params"], "error": f"{type(exc).__name__}: {exc}"}
            sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
