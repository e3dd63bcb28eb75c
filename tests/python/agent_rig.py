"""A rig for agent-loop tests: the scripted model, a real bridge on 127.0.0.1, a client.

Everything is real except the remote model API: the bridge runs under uvicorn on a
loopback socket, the client speaks HTTP + SSE to it, commands run as subprocesses
and files live in a temporary git project.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from agent_shell_bridge.runtime import Runtime
from conftest import BridgeClient, EventStream, InProcessServer, make_runtime

TURN_TIMEOUT_S = 60.0

Answerer = Callable[[dict[str, Any]], dict[str, Any]]


def allow_once(_params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def reject(reason: str = "no") -> Answerer:
    def answer(_params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}, "reason": reason}

    return answer


def make_project(root: Path, files: dict[str, str]) -> Path:
    """A git repository with ``files`` committed."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=root, check=True)
    return root


@dataclass
class Turn:
    """What a client saw during one turn."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        out = [m["params"]["update"] for m in self.messages if m.get("method") == "session/update"]
        return [u for u in out if kind is None or u["sessionUpdate"] == kind]

    @property
    def end(self) -> dict[str, Any]:
        ends = self.updates("turn_end")
        assert len(ends) == 1, ends
        return ends[0]

    @property
    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.updates("agent_message_chunk"))

    def log_entries(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.messages if m.get("method") == "log/entry"]

    def tool_results(self) -> list[dict[str, Any]]:
        return [
            u for u in self.updates("tool_call_update") if u["status"] in ("completed", "failed")
        ]


@dataclass
class AgentRig:
    mock: MockServer
    server: InProcessServer
    client: BridgeClient
    root: Path

    @property
    def runtime(self) -> Runtime:
        return self.server.runtime

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of the requests the scripted model received."""
        return [r.body for r in self.mock.recorder.records]  # type: ignore[misc]

    async def new_session(self, **params: Any) -> str:
        result = await self.client.result("session/new", {"cwd": str(self.root), **params})
        return str(result["sessionId"])

    async def turn(
        self,
        session_id: str,
        prompt: str,
        *,
        answer: Answerer = allow_once,
        on_message: Callable[[dict[str, Any], EventStream], Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Turn:
        """Send a prompt and follow the event stream to this session's turn_end.

        ``params`` are more fields of ``session/prompt`` (``attachments``); its result
        is kept in ``turn.result``."""
        turn = Turn()
        async with self.client.events(from_now=True) as stream:
            turn.result = await self.client.result(
                "session/prompt", {"sessionId": session_id, "prompt": prompt, **(params or {})}
            )
            async with asyncio.timeout(TURN_TIMEOUT_S):
                while True:
                    event = await stream.next_event(timeout=TURN_TIMEOUT_S)
                    message = event.json()
                    turn.messages.append(message)
                    if on_message is not None:
                        maybe = on_message(message, stream)
                        if asyncio.iscoroutine(maybe):
                            await maybe
                    if message.get("method") == "session/request_permission":
                        turn.permission_requests.append(message["params"])
                        reply = {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": answer(message["params"]),
                        }
                        response = await self.client.post_rpc(reply)
                        assert response.status_code == 202
                    params = message.get("params") or {}
                    update = params.get("update") or {}
                    if (
                        update.get("sessionUpdate") == "turn_end"
                        and params.get("sessionId") == session_id
                    ):
                        return turn


async def start_rig(
    serve_app: Any,
    root: Path,
    steps: list[dict[str, Any]],
    *,
    memory_dir: Path | None = None,
    mock_options: dict[str, Any] | None = None,
    provider_rules: dict[str, Any] | None = None,
    **config: Any,
) -> tuple[AgentRig, Callable[[], Any]]:
    """``mock_options`` are script-level settings of the scripted model (``context_limit``);
    ``provider_rules``: what the emulated provider refuses in a history (see MockScript)."""
    mock = MockServer(
        MockScript.model_validate(
            {"steps": steps, **(mock_options or {}), **(provider_rules or {})}
        )
    )
    await mock.start()
    rt = make_runtime()
    rt.config = BridgeConfig(
        api_base=mock.api_base,
        model="mock-model",
        api_key="sk-rig-secret",
        memory_dir=memory_dir,
        **config,
    )
    server = await serve_app(rt)
    client = server.client()
    rig = AgentRig(mock, server, client, root)

    async def stop() -> None:
        await client.aclose()
        await rt.aclose()
        await mock.stop()

    return rig, stop


@asynccontextmanager
async def running_rig(
    serve_app: Any,
    root: Path,
    steps: list[dict[str, Any]],
    *,
    memory_dir: Path | None = None,
    mock_options: dict[str, Any] | None = None,
    provider_rules: dict[str, Any] | None = None,
    **config: Any,
) -> AsyncIterator[AgentRig]:
    """``start_rig`` as a context manager: the rig is stopped however the test ends."""
    rig, stop = await start_rig(
        serve_app,
        root,
        steps,
        memory_dir=memory_dir,
        mock_options=mock_options,
        provider_rules=provider_rules,
        **config,
    )
    try:
        yield rig
    finally:
        await stop()


def tool_messages(request_body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request_body["messages"] if m["role"] == "tool"]


def payload_of(framed: str) -> dict[str, Any]:
    """The JSON result inside one framed tool message (header line, JSON, closing line)."""
    value = json.loads(framed.split("\n", 1)[1].rsplit("\n", 1)[0])
    assert isinstance(value, dict)
    return value


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
