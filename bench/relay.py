"""Relay: text chunks from the model, through the bridge, to an SSE client.

The mock model (in this process) streams a long answer in small chunks; each chunk
is a 19-digit placeholder that a thin ASGI layer overwrites with the monotonic clock
at the moment the chunk is handed to the socket. The client (also in this process)
reads the bridge's ``GET /events`` stream, so every chunk carries its own send time
and the client's receive time gives its latency (CLOCK_MONOTONIC is system-wide, so
the bridge's separate process does not matter). The baseline is the same client
reading the mock model's own SSE stream directly.

Throughput uses an unpaced flood; latency a paced stream (one chunk every few
milliseconds, like a fast model), so that queueing in a flood does not pose as
latency.

The bridge joins deltas into frames (agent_shell_bridge.transport.frames), so one event the
client reads may carry several stamps. A frame's latency is that of its newest
chunk: what the hop adds to the freshest text. The per-chunk figure, which also
counts how long older chunks waited in their frame, is reported beside it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_shell_bridge.model.mock_script import MockScript, MockStep
from agent_shell_bridge.model.mock_server import MockServer

from .bridgeproc import iter_sse, rpc, spawn_bridge
from .common import Figure, Scale, median, percentile

__all__ = ["StampSend", "run"]

PLACEHOLDER = b"T" * 19
PIECE = "@@" + "T" * 19 + "@@ "
STAMP = re.compile(r"@@(\d{19})@@")
TIMEOUT_S = 300.0


class StampSend:
    """ASGI middleware writing the send time into each body frame's placeholder."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.body":
                body: bytes = message.get("body", b"")
                if PLACEHOLDER in body:
                    now = b"%019d" % time.monotonic_ns()
                    message = {**message, "body": body.replace(PLACEHOLDER, now)}
            await send(message)

        await self.app(scope, receive, stamped)


@dataclass
class Reading:
    """Stamps seen by a client: receive time minus send time, and arrival times."""

    latencies_ns: list[int] = field(default_factory=list)
    arrivals_ns: list[int] = field(default_factory=list)
    frame_latencies_ns: list[int] = field(default_factory=list)

    def take(self, text: str) -> None:
        now = time.monotonic_ns()
        newest = None
        for match in STAMP.finditer(text):
            sent = int(match.group(1))
            self.latencies_ns.append(now - sent)
            self.arrivals_ns.append(now)
            newest = sent if newest is None else max(newest, sent)
        if newest is not None:
            self.frame_latencies_ns.append(now - newest)

    @property
    def frames(self) -> int:
        return len(self.frame_latencies_ns)

    @property
    def rate(self) -> float:
        """Chunks per second from the first arrival to the last."""
        if len(self.arrivals_ns) < 2:
            return 0.0
        span = (self.arrivals_ns[-1] - self.arrivals_ns[0]) / 1e9
        return (len(self.arrivals_ns) - 1) / span if span > 0 else 0.0

    def latencies_ms(self) -> list[float]:
        return [n / 1e6 for n in self.latencies_ns]

    def frame_latencies_ms(self) -> list[float]:
        return [n / 1e6 for n in self.frame_latencies_ns]


def _step(chunks: int, gap_ms: int = 0) -> MockStep:
    return MockStep(text=PIECE * chunks, chunk_size=len(PIECE), delay_ms=gap_ms)


async def _direct(mock: MockServer) -> Reading:
    """The baseline client: read the mock model's stream itself."""
    reading = Reading()
    body = {
        "model": "mock-model",
        "stream": True,
        "messages": [{"role": "user", "content": "stream"}],
    }
    async with (
        httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as client,
        client.stream("POST", f"{mock.api_base}/chat/completions", json=body) as response,
    ):
        response.raise_for_status()
        async for data in iter_sse(response):
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            for choice in chunk.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    reading.take(content)
    return reading


async def _turn_events(
    client: httpx.AsyncClient, session_id: str, prompt: str
) -> AsyncIterator[dict[str, Any]]:
    last = (await rpc(client, "ping", {}))["lastEventId"]
    headers = {"Last-Event-ID": str(last)}
    async with client.stream("GET", "/events", headers=headers) as response:
        response.raise_for_status()
        await rpc(client, "session/prompt", {"sessionId": session_id, "prompt": prompt})
        async for data in iter_sse(response):
            message = json.loads(data)
            params = message.get("params") or {}
            if params.get("sessionId") != session_id:
                continue
            update = params.get("update") or {}
            yield update
            if update.get("sessionUpdate") == "turn_end":
                return


async def _through_bridge(client: httpx.AsyncClient, session_id: str) -> Reading:
    reading = Reading()
    async with asyncio.timeout(TIMEOUT_S):
        async for update in _turn_events(client, session_id, "stream a long answer"):
            if update.get("sessionUpdate") == "agent_message_chunk":
                reading.take(str((update.get("content") or {}).get("text", "")))
            elif update.get("sessionUpdate") == "turn_end" and update.get("error"):
                raise RuntimeError(f"the relay turn failed: {update['error']}")
    return reading


def _expect(reading: Reading, chunks: int, what: str) -> None:
    if len(reading.latencies_ns) != chunks:
        raise RuntimeError(f"{what}: {len(reading.latencies_ns)} of {chunks} chunks arrived")


async def run(scale: Scale, work: Path) -> list[Figure]:
    n, m, gap = scale.relay_chunks, scale.relay_latency_chunks, scale.relay_latency_gap_ms
    reps = scale.relay_reps
    one_side = [_step(20), *(_step(n) for _ in range(reps)), _step(m, gap)]
    steps = one_side * 2
    mock = MockServer(MockScript(steps=steps))
    mock.app.add_middleware(StampSend)
    project = work / "project"
    project.mkdir(parents=True)
    await mock.start()
    try:
        env = {
            "AGENT_SHELL_API_BASE": mock.api_base,
            "AGENT_SHELL_MODEL": "mock-model",
            "AGENT_SHELL_API_KEY": "sk-bench",
        }
        async with spawn_bridge(work / "bridge", env) as bridge, bridge.client(TIMEOUT_S) as client:

            async def turn() -> Reading:
                # A fresh session per turn: long answers piling up in one history
                # would make the bridge compact it, a model call the script lacks.
                session = await rpc(client, "session/new", {"cwd": str(project)})
                return await _through_bridge(client, str(session["sessionId"]))

            _expect(await turn(), 20, "bridge warm-up")
            bridge_floods = [await turn() for _ in range(reps)]
            bridge_paced = await turn()
        _expect(await _direct(mock), 20, "direct warm-up")
        direct_floods = [await _direct(mock) for _ in range(reps)]
        direct_paced = await _direct(mock)
    finally:
        await mock.stop()
    for flood in bridge_floods:
        _expect(flood, n, "bridge flood")
    for flood in direct_floods:
        _expect(flood, n, "direct flood")
    _expect(bridge_paced, m, "bridge paced")
    _expect(direct_paced, m, "direct paced")
    via, direct = bridge_paced.frame_latencies_ms(), direct_paced.latencies_ms()
    via_chunks = bridge_paced.latencies_ms()
    paced = {
        "chunks": m,
        "gap_ms": gap,
        "chunk_chars": len(PIECE),
        "frames": bridge_paced.frames,
        "chunk_median_ms": median(via_chunks),
        "chunk_p99_ms": percentile(via_chunks, 99),
    }
    return [
        Figure(
            key="relay_rate",
            title="Relay: chunks per second to the SSE client",
            unit="chunk/s",
            value=median([r.rate for r in bridge_floods]),
            baseline=median([r.rate for r in direct_floods]),
            baseline_label="same client reading the mock model directly",
            better="higher",
            details={
                "chunks": n,
                "runs": reps,
                "chunk_chars": len(PIECE),
                "frames": [r.frames for r in bridge_floods],
            },
        ),
        Figure(
            key="relay_latency_median",
            title="Relay: latency per frame (its newest chunk), median",
            unit="ms",
            value=median(via),
            baseline=median(direct),
            baseline_label="same client reading the mock model directly, per chunk",
            better="lower",
            details={**paced, "added_ms": median(via) - median(direct)},
        ),
        Figure(
            key="relay_latency_p99",
            title="Relay: latency per frame (its newest chunk), p99",
            unit="ms",
            value=percentile(via, 99),
            baseline=percentile(direct, 99),
            baseline_label="same client reading the mock model directly, per chunk",
            better="lower",
            details={**paced, "added_ms": percentile(via, 99) - percentile(direct, 99)},
        ),
    ]
