"""A cancel that arrives while a turn is still being recorded ends it as cancelled.

Regression: ``run_turn`` wrote the task's log entry and checkpoint before entering
the block that reports the end of a turn; a cancel landing there (a client may
cancel the moment it has the turn id, as killing the Emacs buffer does) ended the
task silently, and the client waited for a ``turn_end`` that never came.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_rig import make_project, running_rig
from agent_shell_bridge.agent.turn.loop import run_turn


async def test_cancel_while_the_turn_is_recorded_still_sends_turn_end(
    serve_app: Any, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "proj", {"a.py": "print(1)\n"})
    async with running_rig(serve_app, project, [{"text": "never sent", "delay_ms": 20000}]) as rig:
        sid = await rig.new_session()
        live = rig.runtime.sessions[sid]
        async with rig.client.events(from_now=True) as stream:
            live.start_turn(run_turn(live, "慢一点", "t-early"), "t-early")
            await asyncio.sleep(0)  # one loop step: the task is now inside its first await
            assert live.turn_task is not None and not live.turn_task.done()
            assert await live.cancel_turn() is True
            end = None
            async with asyncio.timeout(30):
                while end is None:
                    message = (await stream.next_event(timeout=30)).json()
                    update = (message.get("params") or {}).get("update") or {}
                    if update.get("sessionUpdate") == "turn_end":
                        end = update
        assert end["turnId"] == "t-early" and end["stopReason"] == "cancelled"
        assert not live.busy
        assert rig.mock.recorder.records == []  # the model was never asked
        assert live.state.turn_in_progress is None
