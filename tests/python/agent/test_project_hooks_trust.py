"""A project's ``.agent-shell/hooks.json`` when it cannot be used as it stands:
untrusted, changed since trusted, malformed, a broken command, no sandbox.

Real bridge, real bubblewrap, real scripts in a temporary git project, the real
trust record; only the model is scripted.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agent_rig import running_rig
from agent_shell_bridge.sandbox import SandboxStatus
from project_hooks_rig import (
    hooks_project,
    log_text,
    needs_sandbox,
    run,
    tool_results,
    trust,
)

__all__ = ["hooks_project"]  # the fixture, used by name


async def test_untrusted_hooks_are_ignored_with_a_notice(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    async with running_rig(
        serve_app, hooks_project, [run("rm notes.txt"), {"text": "ok"}], memory_dir=tmp_path / "m"
    ) as rig:
        new = await rig.client.result("session/new", {"cwd": str(hooks_project)})
        assert new["projectHooks"] == "untrusted"
        turn = await rig.turn(new["sessionId"], "go")
        # No hook ran: the policy alone asked (rm writes), and the file went.
        assert len(turn.permission_requests) == 1
        assert not (hooks_project / "notes.txt").exists()
        assert not (hooks_project / "hooks-seen.jsonl").exists()
        assert "Project hooks not applied: not trusted yet" in log_text(rig)
        assert "M-x agent-shell-trust-hooks" in log_text(rig)


async def test_a_broken_pre_tool_hook_makes_the_step_ask(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    """Output that is no answer, an exit status other than 0 and 2, a timeout: each is
    a log line naming the hook, and the step waits for the user's yes."""
    kinds = ["garbage", "crash", "slow"]
    steps = [*(run(f"echo {kind}") for kind in kinds), {"text": "done"}]
    async with running_rig(
        serve_app, hooks_project, steps, memory_dir=tmp_path / "m", project_hook_timeout_s=1.0
    ) as rig:
        needs_sandbox(rig)
        await trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go")
        assert len(turn.permission_requests) == 3
        assert [r["stdout"].strip() for r in tool_results(rig)] == kinds
        log = log_text(rig)
        name = ".agent-shell/hooks.json pre_tool[0] (./hooks/check)"
        for why in ("printed something that is not an answer", "exited with 1", "timed out"):
            assert f"{name} {why}" in log


async def test_a_changed_file_needs_trust_again(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    steps = [run("rm notes.txt"), {"text": "a"}, run("rm notes.txt"), {"text": "b"}]
    async with running_rig(serve_app, hooks_project, steps, memory_dir=tmp_path / "m") as rig:
        needs_sandbox(rig)
        await trust(rig)
        sid = await rig.new_session()
        first = await rig.turn(sid, "one")
        assert first.permission_requests == [] and (hooks_project / "notes.txt").exists()
        hooks = hooks_project / ".agent-shell" / "hooks.json"
        hooks.write_text(hooks.read_text(encoding="utf-8") + " \n", encoding="utf-8")
        second = await rig.turn(sid, "two")
        assert len(second.permission_requests) == 1  # the policy alone: rm asks
        assert not (hooks_project / "notes.txt").exists()
        assert "Project hooks not applied: not trusted yet" in log_text(rig)


async def test_without_a_sandbox_no_hook_runs(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    steps = [run("echo plain"), {"text": "done"}]
    async with running_rig(serve_app, hooks_project, steps, memory_dir=tmp_path / "m") as rig:
        rig.runtime.sandbox = SandboxStatus.off("switched off for this test")
        await trust(rig)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "go")
        # The guard could not look at it: the step waits for the user instead.
        assert len(turn.permission_requests) == 1
        assert "could not run" in json.dumps(turn.permission_requests[0], ensure_ascii=False)
        assert not (hooks_project / "hooks-seen.jsonl").exists()
        log = log_text(rig)
        assert "Project hooks do not run: no sandbox" in log
        assert "cannot run: no sandbox" in log


async def test_trusting_a_malformed_file_is_refused(
    serve_app: Any, hooks_project: Path, tmp_path: Path
) -> None:
    hooks = hooks_project / ".agent-shell" / "hooks.json"
    hooks.write_text('{"pre_tool": [{"cmd": "x"}], "bogus": []}\n', encoding="utf-8")
    async with running_rig(serve_app, hooks_project, [], memory_dir=tmp_path / "m") as rig:
        digest = hashlib.sha256(hooks.read_bytes()).hexdigest()
        answer = await rig.client.rpc("hooks/trust", {"cwd": str(hooks_project), "sha256": digest})
        assert answer["error"]["code"] == -32602
        assert "bogus" in answer["error"]["message"]
