"""``kill -9`` of a real bridge in the middle of a long scripted session, three times.

Each kill lands after a set number of messages on the event stream (so at a
different step each time, without timing); then the log files must parse as org
(our own check of headings, drawers and blocks, and Emacs' org-element), the
session must resume in a new bridge, and nothing the client was told before the
kill may be missing: every log entry's text is in the file, every update is there,
every finished turn's answer is in the saved history.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx

from agent_rig import make_project
from agent_shell_bridge.agent.session.store import SessionStore
from agent_shell_bridge.model.mock_script import MockScript, MockStep, MockToolCall
from agent_shell_bridge.model.mock_server import MockServer
from conftest import BridgeProcess, spawn_bridge, wait_ready

EMACS = "/usr/bin/emacs"
# Messages on the event stream before each kill: early in a turn, in a tool call,
# and later in the session.
KILL_AFTER = (9, 23, 40)
TIMEOUT_S = 30.0

PROBE_EL = r"""
(require 'org)
(require 'org-element)
(require 'json)
(let ((out (car command-line-args-left)) result)
  (dolist (file (cdr command-line-args-left))
    (with-temp-buffer
      (let ((coding-system-for-read 'utf-8)) (insert-file-contents file))
      (org-mode)
      (let (heads)
        (org-element-map (org-element-parse-buffer) 'headline
          (lambda (hl)
            (let* ((section (car (org-element-contents hl)))
                   (drawer (and (eq (org-element-type section) 'section)
                                (org-element-map section 'property-drawer #'identity nil t))))
              (push (list (org-element-property :level hl)
                          (and drawer
                               (org-element-map drawer 'node-property
                                 (lambda (p) (org-element-property :key p)))))
                    heads))))
        (push (cons file (vconcat (nreverse heads))) result))))
  (with-temp-file out (insert (json-encode result))))
(setq command-line-args-left nil)
"""


def _script(turns: int) -> MockScript:
    steps: list[MockStep] = []
    for i in range(turns):
        steps.append(
            MockStep(
                text=f"第{i}轮：先看看。",
                tool_calls=[
                    MockToolCall(name="run_command", arguments={"command": "seq 1 500"}),
                    MockToolCall(name="read_file", arguments={"path": "notes.md"}),
                ],
            )
        )
        steps.append(MockStep(text=f"answer {i}: 看完了 ✓"))
    return MockScript(steps=steps)


class Client:
    """One bridge, over HTTP, with every message of its event stream recorded."""

    def __init__(self, bridge: BridgeProcess) -> None:
        self.bridge = bridge
        self.http = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{bridge.port}",
            headers={"Authorization": f"Bearer {bridge.token}"},
            timeout=TIMEOUT_S,
            trust_env=False,
        )
        self.messages: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def result(self, method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = (await self.http.post("/rpc", json=body)).json()
        assert "error" not in reply, reply
        return reply["result"]

    async def follow(self) -> None:
        last = (await self.result("ping", {}))["lastEventId"]
        ready = asyncio.Event()

        async def run() -> None:
            headers = {"Last-Event-ID": str(last)}
            async with self.http.stream("GET", "/events", headers=headers) as response:
                ready.set()
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif not line and data:
                        self.messages.append(json.loads("\n".join(data)))
                        data = []
                        self.arrived.set()

        self._task = asyncio.create_task(run())
        await asyncio.wait_for(ready.wait(), TIMEOUT_S)

    async def until(self, count: int) -> None:
        while len(self.messages) < count:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), TIMEOUT_S)

    def turn_ends(self, sid: str) -> int:
        return sum(
            1
            for m in self.messages
            if (m.get("params") or {}).get("sessionId") == sid
            and ((m.get("params") or {}).get("update") or {}).get("sessionUpdate") == "turn_end"
        )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.http.aclose()


def _structure(text: str) -> list[str]:
    """Problems with a log file's outline: every heading is followed by a closed
    properties drawer, every block is closed, the file ends with a newline."""
    problems: list[str] = []
    if text and not text.endswith("\n"):
        problems.append("no final newline")
    lines = text.split("\n")
    block: str | None = None
    for n, line in enumerate(lines):
        if block is not None:
            if line.lower().startswith(f"#+end_{block}"):
                block = None
            continue
        if re.match(r"\*+ ", line):
            drawer = lines[n + 1 : n + 60]
            if not drawer or drawer[0] != ":PROPERTIES:" or ":END:" not in drawer:
                problems.append(f"line {n + 1}: heading without a closed drawer")
        elif (begin := re.match(r"#\+begin_(\S+)", line, re.IGNORECASE)) is not None:
            block = begin.group(1).lower()
    if block is not None:
        problems.append(f"an unclosed {block} block")
    return problems


def _check_nothing_lost(client: Client, logs: str, project: Path, sid: str) -> None:
    for message in client.messages:
        params = message.get("params") or {}
        if message.get("method") == "log/entry":
            assert params["org"] in logs, f"entry {params['id']} lost"
        elif message.get("method") == "log/update":
            if params.get("todo") or params.get("properties"):
                assert f":LOG_UPDATE: {params['id']}\n" in logs, f"update of {params['id']} lost"
            elif params.get("org_body_append"):
                assert params["org_body_append"] in logs
    history = "\n".join(str(v.get("text", "")) for v in SessionStore(project).load(sid).visible)
    finished = client.turn_ends(sid)
    answers = re.findall(r"answer \d+: 看完了 ✓", history)
    assert len(answers) >= finished, (finished, answers)


def _all_logs(project: Path) -> tuple[list[Path], str]:
    files = sorted((project / ".agent-shell" / "logs").glob("*.org"))
    return files, "".join(p.read_text(encoding="utf-8") for p in files)


async def _prompt_until(client: Client, sid: str, count: int) -> None:
    """Prompt turn after turn until COUNT more messages have arrived."""
    goal = len(client.messages) + count
    while len(client.messages) < goal:
        await client.result("session/prompt", {"sessionId": sid, "prompt": "继续"})
        ends = client.turn_ends(sid)
        while client.turn_ends(sid) == ends and len(client.messages) < goal:
            await client.until(len(client.messages) + 1)


async def _one_turn(client: Client, sid: str) -> dict[str, Any]:
    await client.result("session/prompt", {"sessionId": sid, "prompt": "最后"})
    while client.turn_ends(sid) < 1:
        await client.until(len(client.messages) + 1)
    return next(
        m["params"]["update"]
        for m in client.messages
        if ((m.get("params") or {}).get("update") or {}).get("sessionUpdate") == "turn_end"
    )


def _kill(bridge: BridgeProcess) -> None:
    os.kill(bridge.pid, signal.SIGKILL)
    bridge.process.wait(timeout=10)
    assert bridge.process.returncode == -signal.SIGKILL
    bridge.stop()  # closes the pipes


def _org_element(tmp_path: Path, files: list[Path]) -> list[list[Any]]:
    """The headings of FILES's first file as Emacs' org-element sees them."""
    out = tmp_path / "parsed.json"
    probe = tmp_path / "probe.el"
    probe.write_text(PROBE_EL, encoding="utf-8")
    subprocess.run(
        [EMACS, "-Q", "--batch", "-l", str(probe), str(out), *map(str, files)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return list(json.loads(out.read_text(encoding="utf-8"))[str(files[0])])


async def test_kill_9_at_three_points_loses_nothing_and_resumes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", {"notes.md": "# 笔记\n" + "行\n" * 50})
    async with MockServer(_script(40)) as mock:
        env = {
            "AGENT_SHELL_API_BASE": mock.api_base,
            "AGENT_SHELL_MODEL": "mock-model",
            "AGENT_SHELL_API_KEY": "sk-test",
        }
        sid = ""
        # Each next bridge starts while the current one works (start-up is imports).
        spare = spawn_bridge(tmp_path / "bridge0", env=env)
        for round_, kill_after in enumerate((*KILL_AFTER, None)):
            bridge = wait_ready(spare)
            if kill_after is not None:
                spare = spawn_bridge(tmp_path / f"bridge{round_ + 1}", env=env)
            client = Client(bridge)
            try:
                await client.follow()
                if not sid:
                    new = await client.result("session/new", {"cwd": str(project)})
                    sid = str(new["sessionId"])
                else:
                    params = {"sessionId": sid, "cwd": str(project)}
                    resumed = await client.result("session/resume", params)
                    assert resumed["sessionId"] == sid and resumed["history"]
                if kill_after is None:  # the last bridge: a whole turn after three kills
                    assert (await _one_turn(client, sid))["stopReason"] == "end_turn"
                    _check_nothing_lost(client, _all_logs(project)[1], project, sid)
                    break
                await _prompt_until(client, sid, kill_after)
                _kill(bridge)
                # What the client saw is all there is to check against.
                await client.close()
                files, logs = _all_logs(project)
                for path in files:
                    assert _structure(path.read_text(encoding="utf-8")) == [], path
                _check_nothing_lost(client, logs, project, sid)
            finally:
                await client.close()
                bridge.stop()
    files, _ = _all_logs(project)
    assert len(files) == 1, "every resume went on in the session's log file"
    heads = _org_element(tmp_path, files)
    assert len(heads) > 20
    for level, keys in heads:
        assert keys and keys[0] == "SOURCE", (level, keys)
        assert {"LOG_ID", "LOG_UPDATE", "CONTINUES", "RESUMED"} & set(keys), keys
    assert sum(1 for _, keys in heads if "RESUMED" in keys) == len(KILL_AFTER)
