"""The bridge renders the action log once: notifications carry the entries' text.

``log/entry`` carries ``org`` (the entry as first written to the file); ``log/update``
carries ``org_head`` (the new heading and drawer) and ``org_body_append`` (what the
body grew by).  Applying them the way ``agent-shell-log.el`` does must rebuild the
writer's view of the log (:meth:`OrgLogWriter.render`, the entries in their current
state) exactly: from the shared fixture stream, and from a real turn over the wire.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_orglog_fixture import scenario

from agent_rig import make_project, running_rig
from agent_shell_bridge.orglog import (
    LogEntry,
    LogUpdate,
    OrgLogWriter,
    Rendered,
    entry_params,
    update_params,
)


def _rebuild(notifications: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Each entry's text after the notifications, as the live buffer keeps it."""
    texts: dict[str, str] = {}
    heads: dict[str, int] = {}
    for method, params in notifications:
        eid = params["id"]
        if method == "log/entry":
            texts[eid] = params["org"]
            heads[eid] = params["org"].index("\n:END:\n") + len("\n:END:\n")
            continue
        if "org_head" in params:
            texts[eid] = params["org_head"] + texts[eid][heads[eid] :]
            heads[eid] = len(params["org_head"])
        texts[eid] += params.get("org_body_append", "")
    return texts


def _file_entries(text: str) -> list[str]:
    """The LOG_IDs of a log file, in order."""
    return re.findall(r"^:LOG_ID: (.*)$", text, flags=re.MULTILINE)


def _body(text: str) -> str:
    """A log file's text from its first heading on."""
    return text[text.index("\n* ") + 1 :]


def test_notifications_rebuild_the_fixture_file(tmp_path: Path) -> None:
    writer = OrgLogWriter(tmp_path / "log.org", title="t")
    sent: list[tuple[str, dict[str, Any]]] = []
    for op in scenario():
        if op["method"] == "log/entry":
            entry = LogEntry.model_validate(op["params"])
            writer.add(entry)
            sent.append(("log/entry", entry_params(entry, writer.rendered(entry.id))))
        else:
            upd = LogUpdate.model_validate(op["params"])
            before = writer.rendered(upd.id)
            writer.update(upd)
            sent.append(("log/update", update_params(upd, before, writer.rendered(upd.id))))
    texts = _rebuild(sent)
    view = writer.render()
    assert "".join(texts[i] for i in _file_entries(view)) == _body(view)
    heads = [p for m, p in sent if m == "log/update" and "org_head" in p]
    appends = [p for m, p in sent if m == "log/update" and "org_body_append" in p]
    assert len(heads) == 3 and len(appends) == 2
    # Appended to an empty body: no blank line; to a body: one blank line first.
    assert appends[0]["org_body_append"] == "appended to an empty body\n"
    assert appends[1]["org_body_append"].startswith("\n#+begin_src text\n")


def test_an_update_that_is_not_an_append_is_refused() -> None:
    upd = LogUpdate(session_id="s", id="x", todo="DONE")
    with pytest.raises(ValueError, match="only append"):
        update_params(upd, Rendered("* a\n", "old\n"), Rendered("* DONE a\n", "new\n"))
    same = update_params(upd, Rendered("* a\n", "b\n"), Rendered("* a\n", "b\n"))
    assert "org_head" not in same and "org_body_append" not in same


async def test_a_real_turn_sends_the_text_of_the_file(serve_app: Any, tmp_path: Path) -> None:
    notes = "* 标题\n#+begin_src sh\n:END:\n" + "\n".join(f"第{i}行" for i in range(400)) + "\n"
    project = make_project(tmp_path / "proj", {"笔记.org": notes})
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "cat 笔记.org"}}]},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "mkdir 输出"}}]},
        {"text": "* 完成\n#+end_src"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "日志 parity")
        assert turn.end["stopReason"] == "end_turn"
        sent = [
            (m["method"], m["params"])
            for m in turn.messages
            if m.get("method") in ("log/entry", "log/update")
        ]
        on_disk = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        view = rig.runtime.sessions[sid].reporter.writer.render()
    assert all("org" in p for m, p in sent if m == "log/entry")
    assert any("org_head" in p for m, p in sent if m == "log/update")
    assert any("org_body_append" in p for m, p in sent if m == "log/update")
    texts = _rebuild(sent)
    assert "".join(texts[i] for i in _file_entries(view)) == _body(view)
    # The file holds each entry as first sent, in the same order.
    assert _file_entries(on_disk) == _file_entries(view)
    for method, params in sent:
        if method == "log/entry":
            assert params["org"] in on_disk
    assert ",* 标题\n,#+begin_src sh\n" in on_disk and "第399行" in on_disk
    assert "lines omitted" in on_disk and (project / "输出").is_dir()
