"""Start ``agent-shell-bridge serve`` as a real child process and talk to it.

The benchmarks drive the bridge the way Emacs does: spawn, read the ready line,
speak JSON-RPC over HTTP and follow ``GET /events``; closing stdin stops it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .common import bridge_command, clean_env

__all__ = ["Bridge", "iter_sse", "spawn_bridge"]

READY_TIMEOUT_S = 30.0
_LINE_END = re.compile(rb"\r\n|\n|\r")


@dataclass
class Bridge:
    process: asyncio.subprocess.Process
    port: int
    token: str
    ready_s: float

    def client(self, timeout: float = 120.0) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=timeout,
            trust_env=False,
        )

    async def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            async with asyncio.timeout(10):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


@asynccontextmanager
async def spawn_bridge(directory: Path, env: dict[str, str] | None = None) -> AsyncIterator[Bridge]:
    """A started bridge; ``ready_s`` is the time from spawn to its ready line."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    stderr = (directory / "bridge-stderr.log").open("wb")
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *bridge_command(),
        "serve",
        "--port",
        "0",
        "--log-level",
        "WARNING",
        "--memory-dir",
        str(directory / "memory"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=clean_env(**(env or {})),
        cwd=directory,
    )
    try:
        assert process.stdout is not None
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                line = await process.stdout.readline()
        except TimeoutError:
            line = b""
        ready_s = time.perf_counter() - started
        if not line:
            process.kill()
            await process.wait()
            text = (directory / "bridge-stderr.log").read_text(errors="replace")
            raise RuntimeError(f"the bridge printed no ready line; stderr:\n{text}")
        ready = json.loads(line)
        bridge = Bridge(process, int(ready["port"]), str(ready["token"]), ready_s)
        try:
            yield bridge
        finally:
            await bridge.stop()
    finally:
        stderr.close()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def iter_sse(response: httpx.Response) -> AsyncIterator[bytes]:
    """The data of each SSE event of ``response`` (comments and ids skipped)."""
    buffer = b""
    data: list[bytes] = []
    async for chunk in response.aiter_raw():
        buffer += chunk
        while True:
            match = _LINE_END.search(buffer)
            if match is None or (match.group() == b"\r" and match.end() == len(buffer)):
                break
            line = buffer[: match.start()]
            buffer = buffer[match.end() :]
            if not line:
                if data:
                    yield b"\n".join(data)
                    data = []
            elif line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))


async def rpc(client: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
    """One JSON-RPC request that must succeed; its ``result``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await client.post("/rpc", content=json.dumps(body).encode())
    response.raise_for_status()
    reply = response.json()
    if "error" in reply:
        raise RuntimeError(f"{method} failed: {reply['error']}")
    return reply["result"]
