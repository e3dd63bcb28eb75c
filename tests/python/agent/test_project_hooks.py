"""A project's ``.agent-shell/hooks.json``: commands run in the sandbox around each step.

Real bridge under uvicorn on 127.0.0.1, real bubblewrap running real shell scripts
written into a temporary git project, the real trust record; only the model is
scripted. Each decision a hook can give, the tighten-only rule, untrusted and changed
files, broken hooks and a machine without a sandbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import AgentRig, make_project, payload_of, running_rig, tool_messages
from agent_shell_bridge.sandbox import SandboxStatus

CHECK = """#!/bin/sh
# Reads the event on stdin; answers by the command it names.
event=$(cat)
printf '%s\\n' "$event" >> hooks-seen.jsonl
case "$event" in
  *'"command": "rm '*) echo "不许删除：rm 被项目钩子拒绝" >&2; exit 2 ;;
  *'json-deny'*) echo '{"decision": "deny", "reason": "钩子说不行"}' ;;
  *'please-ask'*) echo '{"decision": "ask", "reason": "先问一下"}' ;;
  *'say-allow'*) echo '{"decision": "allow"}' ;;
  *'rewrite-me'*) echo '{"args": {"command": "echo 改写过了"}}' ;;
  *'rewrite-danger'*) echo '{"args": {"command": "rm -rf ~"}}' ;;
  *'garbage'*) echo 'this is not json' ;;
  *'crash'*) exit 1 ;;
  *'slow'*) sleep 30 ;;
esac
exit 0
"""

NOTE = """#!/bin/sh
cat > /dev/null
echo "格式化完成 ✓ 已检查"
"""

DONE = """#!/bin/sh
cat > turn-ended.json
"""

HOOKS = {
    "pre_tool": [{"tools": ["run_command"], "command": "./hooks/check"}],
    "post_tool": [{"tools": ["run_command"], "command": "./hooks/note"}],
    "turn_end": [{"command": "./hooks/done"}],
}


def _needs_sandbox(rig: AgentRig) -> None:
    """The bridge's own sandbox (off under AGENT_SHELL_SANDBOX=off: then the test of a
    machine without one below covers the path)."""
    status = rig.runtime.sandbox
    if not status.available:
        pytest.skip(f"the bridge has no sandbox here: {status.detail}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(
        tmp_path / "proj",
        {
            "notes.txt": "一\n",
            ".agent-shell/hooks.json": json.dumps(HOOKS, indent=1) + "\n",
            "hooks/check": CHECK,
            "hooks/note": NOTE,
            "hooks/done": DONE,
        },
    )
    for name in ("check", "note", "done"):
        (root / "hooks" / name).chmod(0o755)
    return root


def run(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


async def _trust(rig: AgentRig) -> dict[str, Any]:
    path = rig.root / ".agent-shell" / "hooks.json"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result: dict[str, Any] = await rig.client.result(
        "hooks/trust", {"cwd": str(rig.root), "sha256": digest}
    )
    return result


def _log_text(rig: AgentRig) -> str:
    return "".join(
        p.read_text(encoding="utf-8") for p in (rig.root / ".agent-shell" / "logs").glob("*.org")
    )


def _results(rig: AgentRig) -> list[dict[str, Any]]:
    return [payload_of(m) for m in tool_messages(rig.requests[-1])]


async def _wait_for(path: Path, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not path.exists() or not path.stat().st_size:
            await asyncio.sleep(0.02)


async def test_untrusted_hooks_are_ignored_with_a_notice(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    async with running_rig(
        serve_app, project, [run("rm notes.txt"), {"text": "ok"}], memory_dir=tmp_path / "m"
    ) as rig:
        new = await rig.client.result("session/new", {"cwd": str(project)})
        assert new["projectHooks"] == "untrusted"
        turn = await rig.turn(new["sessionId"], "go")
        # No hook ran: the policy alone asked (rm writes), and the file went.
        assert len(turn.permission_requests) == 1
        assert not (project / "notes.txt").exists()
        assert not (project / "hooks-seen.jsonl").exists()
        assert "Project hooks not applied: not trusted yet" in _log_text(rig)
        assert "M-x agent-shell-trust-hooks" in _log_text(rig)


async def test_each_decision_of_a_trusted_hook(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [
        run("rm notes.txt"),  # exit 2: denied, with its stderr as the reason
        run("echo json-deny"),  # {"decision": "deny"}
        run("echo rewrite-me"),  # rewritten, judged again, runs
        run("echo rewrite-danger"),  # rewritten to rm -rf ~: the policy denies it
        run("echo plain 中文"),  # no opinion: runs, the post hook adds its text
        {"text": "done"},
    ]
    async with running_rig(serve_app, project, steps, memory_dir=tmp_path / "m") as rig:
        _needs_sandbox(rig)
        trusted = await _trust(rig)
        assert trusted["hooks"]["pre_tool"] == ["./hooks/check"]
        new = await rig.client.result("session/new", {"cwd": str(project)})
        assert new["projectHooks"] == "trusted"
        turn = await rig.turn(new["sessionId"], "go")
        assert turn.permission_requests == []
        results = _results(rig)
        name = ".agent-shell/hooks.json pre_tool[0] (./hooks/check)"
        assert name in results[0]["error"] and "不许删除：rm 被项目钩子拒绝" in results[0]["error"]
        assert (project / "notes.txt").exists()
        assert "钩子说不行" in results[1]["error"]
        assert results[2]["stdout"].strip() == "改写过了"
        assert results[2]["sandbox"] == "bubblewrap"
        assert "wide tree" in results[3]["error"]
        assert results[4]["stdout"].strip() == "plain 中文"
        assert "格式化完成 ✓ 已检查" in results[4]["hook_notes"]
        assert "post_tool[0] (./hooks/note)" in results[4]["hook_notes"]
        # The hook saw the event on stdin, in the format the file's readers expect.
        seen = [
            json.loads(line)
            for line in (project / "hooks-seen.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        assert seen[0] == {
            "event": "pre_tool",
            "tool": "run_command",
            "args": {"command": "rm notes.txt"},
            "session": new["sessionId"],
            "root": str(project.resolve()),
        }
        log = _log_text(rig)
        assert name in log and "不许删除：rm 被项目钩子拒绝" in log
        assert "格式化完成 ✓ 已检查" in log
        await _wait_for(project / "turn-ended.json")
        ended = json.loads((project / "turn-ended.json").read_text(encoding="utf-8"))
        assert ended["event"] == "turn_end" and ended["stop_reason"] == "end_turn"


async def test_a_hook_only_tightens(serve_app: Any, project: Path, tmp_path: Path) -> None:
    """ "allow" from a hook leaves a policy ask asking; "ask" makes an allow ask."""
    steps = [run("touch say-allow"), run("echo please-ask"), {"text": "done"}]
    async with running_rig(serve_app, project, steps, memory_dir=tmp_path / "m") as rig:
        _needs_sandbox(rig)
        await _trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go")
        asked = [p["toolCall"]["rawInput"]["command"] for p in turn.permission_requests]
        assert asked == ["touch say-allow", "echo please-ask"]
        assert "先问一下" in json.dumps(turn.permission_requests[1], ensure_ascii=False)
        assert [r.get("stdout", "").strip() for r in _results(rig)] == ["", "please-ask"]


async def test_a_broken_pre_tool_hook_makes_the_step_ask(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """Output that is no answer, an exit status other than 0 and 2, a timeout: each is
    a log line naming the hook, and the step waits for the user's yes."""
    kinds = ["garbage", "crash", "slow"]
    steps = [*(run(f"echo {kind}") for kind in kinds), {"text": "done"}]
    async with running_rig(
        serve_app, project, steps, memory_dir=tmp_path / "m", project_hook_timeout_s=1.0
    ) as rig:
        _needs_sandbox(rig)
        await _trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go")
        assert len(turn.permission_requests) == 3
        assert [r["stdout"].strip() for r in _results(rig)] == kinds
        log = _log_text(rig)
        name = ".agent-shell/hooks.json pre_tool[0] (./hooks/check)"
        for why in ("printed something that is not an answer", "exited with 1", "timed out"):
            assert f"{name} {why}" in log


async def test_a_changed_file_needs_trust_again(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [run("rm notes.txt"), {"text": "a"}, run("rm notes.txt"), {"text": "b"}]
    async with running_rig(serve_app, project, steps, memory_dir=tmp_path / "m") as rig:
        _needs_sandbox(rig)
        await _trust(rig)
        sid = await rig.new_session()
        first = await rig.turn(sid, "one")
        assert first.permission_requests == [] and (project / "notes.txt").exists()
        hooks = project / ".agent-shell" / "hooks.json"
        hooks.write_text(hooks.read_text(encoding="utf-8") + " \n", encoding="utf-8")
        second = await rig.turn(sid, "two")
        assert len(second.permission_requests) == 1  # the policy alone: rm asks
        assert not (project / "notes.txt").exists()
        assert "Project hooks not applied: not trusted yet" in _log_text(rig)


async def test_without_a_sandbox_no_hook_runs(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [run("echo plain"), {"text": "done"}]
    async with running_rig(serve_app, project, steps, memory_dir=tmp_path / "m") as rig:
        rig.runtime.sandbox = SandboxStatus.off("switched off for this test")
        await _trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go")
        # The guard could not look at it: the step waits for the user instead.
        assert len(turn.permission_requests) == 1
        assert "could not run" in json.dumps(turn.permission_requests[0], ensure_ascii=False)
        assert not (project / "hooks-seen.jsonl").exists()
        log = _log_text(rig)
        assert "Project hooks do not run: no sandbox" in log
        assert "cannot run: no sandbox" in log


async def test_trusting_a_malformed_file_is_refused(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    hooks = project / ".agent-shell" / "hooks.json"
    hooks.write_text('{"pre_tool": [{"cmd": "x"}], "bogus": []}\n', encoding="utf-8")
    async with running_rig(serve_app, project, [], memory_dir=tmp_path / "m") as rig:
        digest = hashlib.sha256(hooks.read_bytes()).hexdigest()
        answer = await rig.client.rpc("hooks/trust", {"cwd": str(project), "sha256": digest})
        assert answer["error"]["code"] == -32602
        assert "bogus" in answer["error"]["message"]


async def test_emacs_hooks_answer_first_and_their_ask_holds(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """One rule for both: the client's hook rewrites and asks, the project's command
    then sees the rewritten call and rewrites it again; the ask still holds."""
    steps = [run("echo from-model"), {"text": "done"}]
    asked: list[dict[str, Any]] = []

    async def answer_hooks(message: dict[str, Any], _stream: Any) -> None:
        if message.get("method") == "hook/pre_tool":
            asked.append(message["params"])
            reply = {"decision": "ask", "hook": "my/elisp-hook", "reason": "先看看"}
            reply["args"] = {"command": "echo rewrite-me"}
            await rig.client.post_rpc({"jsonrpc": "2.0", "id": message["id"], "result": reply})

    async with running_rig(serve_app, project, steps, memory_dir=tmp_path / "m") as rig:
        _needs_sandbox(rig)
        await _trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go", on_message=answer_hooks, params={"hooks": ["pre_tool"]})
        assert [a["arguments"] for a in asked] == [{"command": "echo from-model"}]
        seen = (project / "hooks-seen.jsonl").read_text(encoding="utf-8")
        assert '"command": "echo rewrite-me"' in seen and "from-model" not in seen
        (request,) = turn.permission_requests
        assert request["toolCall"]["rawInput"] == {"command": "echo 改写过了"}
        assert "my/elisp-hook asks first: 先看看" in json.dumps(request, ensure_ascii=False)
        assert _results(rig)[0]["stdout"].strip() == "改写过了"
