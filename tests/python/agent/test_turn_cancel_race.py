"""A cancel that arrives while a turn is still being set up still ends the turn.

The prompt and the cancel are dispatched back to back in the bridge's own event
loop, so the cancel lands before the turn task has run a single step: the window a
client hits when it cancels right after ``session/prompt`` returns. Every client
(Emacs, ``run``, ACP) waits for ``turn_end``; without it the session looks busy
forever.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent_rig import make_project
from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from agent_shell_bridge.transport.rpc import IncomingRequest
from conftest import make_runtime


async def call(rt: Any, method: str, params: dict[str, Any], rid: int) -> dict[str, Any]:
    reply = await rt.dispatcher.dispatch(rt, IncomingRequest(method, params, rid))
    assert reply is not None and "error" not in reply, reply
    return dict(reply["result"])


async def test_cancel_before_the_turn_runs_still_sends_turn_end(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    mock = MockServer(MockScript.model_validate({"steps": [{"text": "late", "delay_ms": 20000}]}))
    await mock.start()
    rt = make_runtime()
    rt.config = BridgeConfig(api_base=mock.api_base, model="m", api_key="sk-x")
    try:
        sid = (await call(rt, "session/new", {"cwd": str(project)}, 1))["sessionId"]
        after = rt.hub.last_id
        started = await call(rt, "session/prompt", {"sessionId": sid, "prompt": "go"}, 2)
        cancelled = await call(rt, "session/cancel", {"sessionId": sid}, 3)
        assert cancelled == {"cancelled": True}

        async def turn_end() -> dict[str, Any]:
            async for event in rt.hub.subscribe(after):
                update = json.loads(event.data).get("params", {}).get("update", {})
                if update.get("sessionUpdate") == "turn_end":
                    return dict(update)
            raise AssertionError("the event stream ended")

        end = await asyncio.wait_for(turn_end(), 10)
        assert end["turnId"] == started["turnId"]
        assert end["stopReason"] == "cancelled"
        # The session is free again: a new prompt is accepted.
        assert rt.sessions[sid].busy is False
        state = await call(rt, "session/resume", {"sessionId": sid, "cwd": str(project)}, 4)
        assert state["sessionId"] == sid
    finally:
        await rt.aclose()
        await mock.stop()
