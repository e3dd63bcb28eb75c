"""A project's ``.agent-shell/hooks.json``: what its commands decide about a step.

Real bridge under uvicorn on 127.0.0.1, real bubblewrap running real shell scripts
written into a temporary git project, the real trust record; only the model is
scripted. Each decision a hook can give, and the tighten-only rule it shares with
the Emacs hooks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_rig import running_rig
from project_hooks_rig import (
    hooks_project,
    log_text,
    needs_sandbox,
    run,
    tool_results,
    trust,
    wait_for,
)

__all__ = ["hooks_project"]  # the fixture, used by name


async def test_each_decision_of_a_trusted_hook(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    steps = [
        run("rm notes.txt"),  # exit 2: denied, with its stderr as the reason
        run("echo json-deny"),  # {"decision": "deny"}
        run("echo rewrite-me"),  # rewritten, judged again, runs
        run("echo rewrite-danger"),  # rewritten to rm -rf ~: the policy denies it
        run("echo plain 中文"),  # no opinion: runs, the post hook adds its text
        {"text": "done"},
    ]
    async with running_rig(serve_app, hooks_project, steps, memory_dir=tmp_path / "m") as rig:
        needs_sandbox(rig)
        trusted = await trust(rig)
        assert trusted["hooks"]["pre_tool"] == ["./hooks/check"]
        new = await rig.client.result("session/new", {"cwd": str(hooks_project)})
        assert new["projectHooks"] == "trusted"
        turn = await rig.turn(new["sessionId"], "go")
        assert turn.permission_requests == []
        got = tool_results(rig)
        name = ".agent-shell/hooks.json pre_tool[0] (./hooks/check)"
        assert name in got[0]["error"] and "不许删除：rm 被项目钩子拒绝" in got[0]["error"]
        assert (hooks_project / "notes.txt").exists()
        assert "钩子说不行" in got[1]["error"]
        assert got[2]["stdout"].strip() == "改写过了"
        assert got[2]["sandbox"] == "bubblewrap"
        assert "wide tree" in got[3]["error"]
        assert got[4]["stdout"].strip() == "plain 中文"
        assert "格式化完成 ✓ 已检查" in got[4]["hook_notes"]
        assert "post_tool[0] (./hooks/note)" in got[4]["hook_notes"]
        # The hook saw the event on stdin, in the format the file's readers expect.
        seen = [
            json.loads(line)
            for line in (hooks_project / "hooks-seen.jsonl")
            .read_text(encoding="utf-8")
            .splitlines()
        ]
        assert seen[0] == {
            "event": "pre_tool",
            "tool": "run_command",
            "args": {"command": "rm notes.txt"},
            "session": new["sessionId"],
            "root": str(hooks_project.resolve()),
        }
        log = log_text(rig)
        assert name in log and "不许删除：rm 被项目钩子拒绝" in log
        assert "格式化完成 ✓ 已检查" in log
        await wait_for(hooks_project / "turn-ended.json")
        ended = json.loads((hooks_project / "turn-ended.json").read_text(encoding="utf-8"))
        assert ended["event"] == "turn_end" and ended["stop_reason"] == "end_turn"


async def test_a_hook_only_tightens(serve_app: Any, hooks_project: Path, tmp_path: Path) -> None:
    """ "allow" from a hook leaves a policy ask asking; "ask" makes an allow ask."""
    steps = [run("touch say-allow"), run("echo please-ask"), {"text": "done"}]
    async with running_rig(serve_app, hooks_project, steps, memory_dir=tmp_path / "m") as rig:
        needs_sandbox(rig)
        await trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go")
        asked = [p["toolCall"]["rawInput"]["command"] for p in turn.permission_requests]
        assert asked == ["touch say-allow", "echo please-ask"]
        assert "先问一下" in json.dumps(turn.permission_requests[1], ensure_ascii=False)
        assert [r.get("stdout", "").strip() for r in tool_results(rig)] == ["", "please-ask"]


async def test_emacs_hooks_answer_first_and_their_ask_holds(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    """One rule for both: the client's hook rewrites and asks, the hooks_project's command
    then sees the rewritten call and rewrites it again; the ask still holds."""
    steps = [run("echo from-model"), {"text": "done"}]
    asked: list[dict[str, Any]] = []

    async def answer_hooks(message: dict[str, Any], _stream: Any) -> None:
        if message.get("method") == "hook/pre_tool":
            asked.append(message["params"])
            reply = {"decision": "ask", "hook": "my/elisp-hook", "reason": "先看看"}
            reply["args"] = {"command": "echo rewrite-me"}
            await rig.client.post_rpc({"jsonrpc": "2.0", "id": message["id"], "result": reply})

    async with running_rig(serve_app, hooks_project, steps, memory_dir=tmp_path / "m") as rig:
        needs_sandbox(rig)
        await trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go", on_message=answer_hooks, params={"hooks": ["pre_tool"]})
        assert [a["arguments"] for a in asked] == [{"command": "echo from-model"}]
        seen = (hooks_project / "hooks-seen.jsonl").read_text(encoding="utf-8")
        assert '"command": "echo rewrite-me"' in seen and "from-model" not in seen
        (request,) = turn.permission_requests
        assert request["toolCall"]["rawInput"] == {"command": "echo 改写过了"}
        assert "my/elisp-hook asks first: 先看看" in json.dumps(request, ensure_ascii=False)
        assert tool_results(rig)[0]["stdout"].strip() == "改写过了"
