"""The written log is real org: checked with Emacs' own org-element parser.

One batch Emacs parses every file the module produces (a fixture session, an
injection corpus, a Chinese log and logs cut short by SIGKILL) and reports each
heading's level, TODO keyword, title, timestamp, properties and blocks as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.orglog import LogEntry, OrgLogWriter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "orglog"
EMACS = "/usr/bin/emacs"

PARSER_EL = r"""
(require 'org)
(require 'org-element)
(require 'json)
(defun probe-blocks (section type)
  (let (out)
    (when section
      (org-element-map section type
        (lambda (b)
          (push (list (cons "lang" (or (org-element-property :language b) ""))
                      (cons "value" (org-element-property :value b)))
                out))
        nil nil 'headline))
    (vconcat (nreverse out))))
(defun probe-file (file)
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (insert-file-contents file))
    (org-mode)
    (let ((tree (org-element-parse-buffer)) heads)
      (org-element-map tree 'headline
        (lambda (hl)
          (let* ((section (car (org-element-contents hl)))
                 (section (and (eq (org-element-type section) 'section) section))
                 (drawer (and section
                              (org-element-map section 'property-drawer #'identity nil t)))
                 (props (and drawer
                             (org-element-map drawer 'node-property
                               (lambda (p) (cons (org-element-property :key p)
                                                 (org-element-property :value p))))))
                 (ts (car (org-element-property :title hl))))
            (push (list (cons "level" (org-element-property :level hl))
                        (cons "todo" (org-element-property :todo-keyword hl))
                        (cons "todo_type"
                              (symbol-name (or (org-element-property :todo-type hl) 'none)))
                        (cons "tags" (vconcat (org-element-property :tags hl)))
                        (cons "raw" (org-element-property :raw-value hl))
                        (cons "ts_type" (if (eq (org-element-type ts) 'timestamp)
                                            (symbol-name (org-element-property :type ts))
                                          "none"))
                        (cons "ts" (if (eq (org-element-type ts) 'timestamp)
                                       (org-element-property :raw-value ts) ""))
                        (cons "props"
                              (vconcat (mapcar (lambda (c) (vector (car c) (cdr c))) props)))
                        (cons "src" (probe-blocks section 'src-block))
                        (cons "example" (probe-blocks section 'example-block)))
                  heads))))
      (vconcat (nreverse heads)))))
(let ((out (car command-line-args-left))
      (files (cdr command-line-args-left))
      result)
  (dolist (f files) (push (cons f (probe-file f)) result))
  (let ((coding-system-for-write 'utf-8))
    (with-temp-file out
      (insert (json-encode (nreverse result))))))
(setq command-line-args-left nil)
"""

WRITER_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agent_shell_bridge.orglog import LogEntry, LogUpdate, OrgLogWriter
    path = Path(sys.argv[1])
    w = OrgLogWriter(path, title="crash")
    ts = "2026-11-30T10:00:00+08:00"
    w.add(LogEntry(id="t", session_id="s", title="任务", timestamp=ts, source="user"))
    i = 0
    while True:
        i += 1
        parent = "t" if i % 3 else None
        eid = f"e-{i}"
        w.add(LogEntry(id=eid, session_id="s", parent_id=parent, todo="DONE", title=f"步骤 {i}",
                       timestamp=ts, source="tool",
                       body=[{"kind": "src", "lang": "sh",
                              "text": ("* 输出\\n" * 50) + "#+end_src"}]))
        if i % 4 == 0:
            w.update(LogUpdate(session_id="s", id="t", properties={"STEPS": i}))
        print(i, flush=True)
    """
)

CHINESE = "处理中文字符：“测试”与 emoji 🚀 — 全角　空格"


def _entry(eid: str, title: str, **kw: Any) -> LogEntry:
    base: dict[str, Any] = {
        "id": eid,
        "session_id": "s",
        "title": title,
        "timestamp": "2026-11-30T23:59:00-05:00",
        "source": "tool",
    }
    base.update(kw)
    return LogEntry.model_validate(base)


def _injection_log(path: Path) -> None:
    w = OrgLogWriter(path, title="injection")
    w.add(_entry("t1", "task\n* FAKE TASK\n#+end_src", source="user"))
    w.add(
        _entry(
            "s1",
            "WAIT not a keyword",
            parent_id="t1",
            todo="WAIT",
            properties={"RISK": "write", "NOTE": ":END:\n* FAKE", "TOOL": "x:END:"},
            body=[
                {"kind": "text", "text": "* FAKE\n  #+end_example\n:END:\n:PROPERTIES:"},
                {
                    "kind": "src",
                    "lang": "sh",
                    "text": "#+end_src\n* FAKE\n  ** FAKE\n,#+x\n#+END_SRC",
                },
                {"kind": "src", "lang": "sh\n* FAKE", "text": "x", "link": "/x]]\n* FAKE"},
            ],
        )
    )
    w.add(_entry("s2", "COMMENT [#A] :a:b:", parent_id="t1"))


def _chinese_log(path: Path) -> None:
    w = OrgLogWriter(path, title=CHINESE)
    w.add(_entry("t1", CHINESE, properties={"说明": CHINESE}, source="user"))
    w.add(
        _entry(
            "s1",
            CHINESE,
            parent_id="t1",
            todo="DONE",
            body=[
                {"kind": "text", "text": CHINESE},
                {"kind": "src", "lang": "text", "text": CHINESE},
            ],
        )
    )


def _crashed_logs(tmp: Path) -> list[tuple[Path, int]]:
    """Writers killed with SIGKILL after N reported entries; (path, N) pairs."""
    out: list[tuple[Path, int]] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for n in (3, 9):
        path = tmp / f"crash-{n}" / "log.org"
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER_CHILD, str(path)],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert proc.stdout is not None
        seen = 0
        while seen < n:
            line = proc.stdout.readline()
            assert line, "writer child died early"
            seen = int(line)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        out.append((path, n))
    return out


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("orglog-org")
    files: dict[str, Path] = {
        "fixture": FIXTURES / "expected.org",
        "file": FIXTURES / "expected-file.org",
        "injection": tmp / "injection.org",
        "chinese": tmp / "chinese.org",
    }
    _injection_log(files["injection"])
    _chinese_log(files["chinese"])
    crashed = _crashed_logs(tmp)
    for path, n in crashed:
        files[f"crash-{n}"] = path
    script = tmp / "probe.el"
    script.write_text(PARSER_EL, encoding="utf-8")
    out = tmp / "out.json"
    subprocess.run(
        [EMACS, "-Q", "--batch", "-l", str(script), str(out), *map(str, files.values())],
        check=True,
        capture_output=True,
        timeout=60,
    )
    raw = dict(json.loads(out.read_text(encoding="utf-8")))
    result: dict[str, Any] = {name: raw[str(path)] for name, path in files.items()}
    result["_paths"] = files
    return result


def _props(head: dict[str, Any]) -> dict[str, str]:
    return dict(head["props"])


def test_orglog_org_fixture_headings(parsed: dict[str, Any]) -> None:
    """Levels, TODO keywords (from #+TODO), inactive timestamps and drawers parse."""
    heads = parsed["fixture"]
    ids = [_props(h)["LOG_ID"] for h in heads]
    assert ids == ["e-1", "e-2", "e-7", "e-4", "e-6", "e-9", "e-3", "e-5", "e-8"]
    assert [h["level"] for h in heads] == [1, 2, 3, 2, 2, 2, 1, 2, 1]
    todos = ["DONE", "APPROVED", None, "DONE", None, "WAIT", None, "FAILED", None]
    assert [h["todo"] for h in heads] == todos
    assert [h["todo_type"] for h in heads if h["todo"]] == ["done"] * 3 + ["todo", "done"]
    assert all(h["ts_type"] == "inactive" for h in heads)
    assert heads[0]["ts"] == "[2026-11-30 Mon 10:00]"
    assert heads[0]["raw"] == "[2026-11-30 Mon 10:00] 修复中文 JSON 解析"
    for head in heads:
        assert head["props"][0][0] == "SOURCE"
    e2 = _props(heads[1])
    assert e2["DECISION"] == "approved" and e2["EXIT_CODE"] == "0" and e2["RISK"] == "write"
    assert [s["lang"] for s in heads[1]["src"]] == ["sh", "diff", "text"]
    assert heads[7]["tags"] == [], "a tag-like title must not become tags"
    assert _props(heads[7])["SOURCE"] == "model", "a forged SOURCE property is dropped"


def test_orglog_org_append_only_file_outline(parsed: dict[str, Any]) -> None:
    """The append-only file: every entry once, under its parent (through continuation
    headings), updates one level below their entry with the new state."""
    heads = parsed["file"]
    entries = [(h["level"], _props(h)["LOG_ID"]) for h in heads if "LOG_ID" in _props(h)]
    assert sorted(i for _, i in entries) == [f"e-{n}" for n in range(1, 10)]
    level = dict((i, lv) for lv, i in entries)
    assert level == {
        "e-1": 1,
        "e-2": 2,
        "e-3": 1,
        "e-4": 2,
        "e-5": 2,
        "e-6": 2,
        "e-7": 3,
        "e-8": 1,
        "e-9": 2,
    }
    parent_of: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for head in heads:
        props = _props(head)
        own = props.get("LOG_ID") or props.get("CONTINUES") or props.get("LOG_UPDATE", "")
        while stack and stack[-1][0] >= head["level"]:
            stack.pop()
        if "LOG_ID" in props:
            parent_of[own] = stack[-1][1] if stack else None
        if "LOG_UPDATE" in props:
            assert stack and stack[-1][1] == own, "an update sits right under its entry"
        stack.append((head["level"], own))
    assert parent_of["e-4"] == "e-1" and parent_of["e-7"] == "e-2"
    assert parent_of["e-9"] == "e-1" and parent_of["e-8"] is None
    done = [h for h in heads if _props(h).get("LOG_UPDATE") == "e-1"]
    assert [h["todo"] for h in done] == ["DONE"]
    assert _props(done[0])["DURATION_MS"] == "160000"


def test_orglog_org_src_round_trip(parsed: dict[str, Any]) -> None:
    """Comma escaping is undone by org: the block value is the original output."""
    e4 = parsed["fixture"][3]
    assert e4["src"][0]["value"] == (
        "* not a heading\n#+end_src\n  #+begin_src\n,* already\n:END:\nfunc decodeString() {}\n"
    )
    long_block = parsed["fixture"][4]["src"][0]
    assert long_block["lang"] == "text"
    lines = long_block["value"].splitlines()
    assert len(lines) == 301 and lines[200] == "[… 51 lines omitted …]"
    assert lines[0] == "line 1 输出" and lines[-1] == "x" * 500 + "…"


def test_orglog_org_waiting_state_is_todo(tmp_path: Path, parsed: dict[str, Any]) -> None:
    """WAIT is a not-done keyword, the outcome keywords are done keywords."""
    heads = parsed["injection"]
    wait = [h for h in heads if h["todo"] == "WAIT"]
    assert len(wait) == 1 and wait[0]["todo_type"] == "todo"


def test_orglog_org_injection_cannot_fake_structure(parsed: dict[str, Any]) -> None:
    """Headings, drawers and blocks in titles or output stay text."""
    heads = parsed["injection"]
    assert [_props(h)["LOG_ID"] for h in heads] == ["t1", "s1", "s2"]
    assert [h["level"] for h in heads] == [1, 2, 2]
    assert heads[0]["raw"].endswith("task * FAKE TASK #+end_src")
    s1 = heads[1]
    assert s1["raw"].startswith("[2026-11-30 Mon 23:59] WAIT not a keyword")
    props = _props(s1)
    assert props["NOTE"] == ":END: * FAKE" and props["TOOL"] == "x:END:"
    assert s1["example"][0]["value"] == "* FAKE\n  #+end_example\n:END:\n:PROPERTIES:\n"
    assert s1["src"][0]["value"] == "#+end_src\n* FAKE\n  ** FAKE\n,#+x\n#+END_SRC\n"
    assert s1["src"][1]["lang"] == "text", "a hostile language name is replaced"
    text = parsed["_paths"]["injection"].read_text(encoding="utf-8")
    assert "/x]]" not in text, "a link target with brackets is dropped"
    s2 = heads[2]
    assert s2["todo"] is None and s2["tags"] == []
    assert "COMMENT [#A] :a:b:" in s2["raw"]


def test_orglog_org_chinese_byte_exact(parsed: dict[str, Any]) -> None:
    """Chinese, emoji and full-width spaces survive byte for byte."""
    heads = parsed["chinese"]
    assert heads[0]["raw"] == "[2026-11-30 Mon 23:59] " + CHINESE
    assert _props(heads[0])["__"] == CHINESE, "a non-ASCII key is reduced, the value kept"
    assert heads[1]["src"][0]["value"] == CHINESE + "\n"
    raw = parsed["_paths"]["chinese"].read_bytes()
    assert raw.startswith(f"#+TITLE: {CHINESE}\n".encode())
    assert raw.count(CHINESE.encode("utf-8")) == 6


def test_orglog_org_killed_writer_leaves_valid_file(parsed: dict[str, Any]) -> None:
    """SIGKILL between entries: every heading written is complete, in order."""
    for name in ("crash-3", "crash-9"):
        n = int(name.split("-")[1])
        heads = [h for h in parsed[name] if "LOG_ID" in _props(h)]
        ids = [_props(h)["LOG_ID"] for h in heads]
        written = {int(i.split("-")[1]) for i in ids if i.startswith("e-")}
        assert len(written) >= n
        assert written == set(range(1, max(written) + 1))
        for head in heads[1:]:
            assert head["todo"] == "DONE"
            assert len(head["src"]) == 1
            assert head["src"][0]["value"] == "* 输出\n" * 50 + "#+end_src\n"
        updates = [h for h in parsed[name] if "LOG_UPDATE" in _props(h)]
        assert all(_props(h)["LOG_UPDATE"] == "t" and "STEPS" in _props(h) for h in updates)
        leftovers = [p.name for p in parsed["_paths"][name].parent.iterdir() if p.suffix == ".tmp"]
        assert leftovers == [], "the log is only appended to"
