"""A real ACP client (the official SDK's client side) driving ``agent-shell-bridge acp``.

The agent runs as a subprocess on stdio, exactly as an editor starts it; the only
stand-in is the remote model, the scripted mock server on loopback.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
)

from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from conftest import bridge_command

API_KEY = "sk-acp-secret-7d1"

Chooser = Callable[[dict[str, Any]], str | None]


def dump(value: Any) -> Any:
    if isinstance(value, list):
        return [dump(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


@dataclass
class RecordingClient:
    """Records every update; answers permission requests with ``choose``'s option id."""

    choose: Chooser = lambda _request: "allow_once"
    updates: list[dict[str, Any]] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    first_text: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **_: Any
    ) -> RequestPermissionResponse:
        request = {"sessionId": session_id, "toolCall": dump(tool_call), "options": dump(options)}
        self.permissions.append(request)
        chosen = self.choose(request)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        data = dump(update)
        self.updates.append({"sessionId": session_id, **data})
        if data.get("sessionUpdate") == "agent_message_chunk":
            self.first_text.set()
        async with self.arrived:
            self.arrived.notify_all()

    async def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool]) -> None:
        """Until ``predicate`` holds for the updates so far (30 s at most)."""
        async with asyncio.timeout(30), self.arrived:
            await self.arrived.wait_for(lambda: predicate(self.updates))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]

    @property
    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.of("agent_message_chunk"))

    # Unsaved editor buffers by absolute path; the fs methods serve and update them.
    buffers: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)

    async def write_text_file(self, content: str, path: str, session_id: str, **_: Any) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content

    async def read_text_file(self, path: str, session_id: str, **_: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


@dataclass
class AcpRig:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    mock: MockServer
    stderr_path: Path

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.mock.recorder.records]  # type: ignore[misc]


def agent_env(tmp_path: Path, api_base: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_SHELL_", "DEEPSEEK"))}
    env.update(
        {
            "AGENT_SHELL_API_KEY": API_KEY,
            "AGENT_SHELL_API_BASE": api_base,
            "AGENT_SHELL_MODEL": "mock-model",
            "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@asynccontextmanager
async def acp_agent(
    tmp_path: Path,
    steps: list[dict[str, Any]],
    client: RecordingClient | None = None,
    agent_args: Sequence[str] = (),
) -> AsyncIterator[AcpRig]:
    mock = MockServer(MockScript.model_validate({"steps": steps}))
    await mock.start()
    client = client or RecordingClient()
    stderr_path = tmp_path / f"acp-stderr-{os.getpid()}-{id(client)}.log"
    command, *prefix = bridge_command()
    try:
        with stderr_path.open("wb") as stderr:
            async with spawn_agent_process(
                client,
                command,
                *prefix,
                "acp",
                *agent_args,
                env=agent_env(tmp_path, mock.api_base),
                transport_kwargs={"stderr": stderr.fileno()},
            ) as (conn, process):
                yield AcpRig(conn, process, client, mock, stderr_path)
    finally:
        await mock.stop()
