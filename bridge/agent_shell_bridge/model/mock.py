"""A scripted OpenAI-compatible chat-completions server for tests and the demo.

``create_mock_app(script)`` serves ``POST /v1/chat/completions`` (and
``/chat/completions``) with real chunked SSE, answering each request with the next
step of a :class:`~.mock_script.MockScript`. Steps with a ``match`` are tried first,
so a dedicated step answers e.g. a compaction request wherever it stands; otherwise
the first unused plain step answers. When the script runs out the answer is
``(mock model: script exhausted)``.

Every request is recorded (body, headers without the Authorization value, whether
auth was present, which step answered, whether the client disconnected early) in
``app.state.recorder`` and at ``GET /_mock/requests`` for tests in other processes.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..types import JSON, JSONObject
from .mock_overflow import overflow_response
from .mock_script import MockScript, MockStep

__all__ = ["EXHAUSTED_TEXT", "Recorder", "RequestRecord", "build_frames", "create_mock_app"]

EXHAUSTED_TEXT = "(mock model: script exhausted)"
CREATED = 1_700_000_000  # fixed so recorded streams are reproducible
_DEFAULT_ERRORS = {
    "400": ("invalid_request_error", "mock: the request was rejected"),
    "401": ("authentication_error", "mock: Authentication Fails, your api key is invalid"),
    "429": ("rate_limit_error", "mock: rate limit reached, slow down"),
    "500": ("server_error", "mock: internal server error"),
    "503": ("server_error", "mock: the server is overloaded"),
    "529": ("overloaded_error", "mock: overloaded"),
}


@dataclass
class RequestRecord:
    """One request as the mock saw it."""

    index: int
    path: str
    headers: dict[str, str]
    auth_present: bool
    body: JSON
    step: int | None = None
    fault: str | None = None
    status: int = 200
    completed: bool = False
    disconnected: bool = False

    def to_json(self) -> JSONObject:
        return {
            "index": self.index,
            "path": self.path,
            "headers": self.headers,
            "auth_present": self.auth_present,
            "body": self.body,
            "step": self.step,
            "fault": self.fault,
            "status": self.status,
            "completed": self.completed,
            "disconnected": self.disconnected,
        }


class Recorder:
    """Requests seen so far; :meth:`wait_for` lets tests wait on a condition."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []
        self._changed = asyncio.Event()

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)
        self.touch()

    def touch(self) -> None:
        """Wake every waiter after a record changed."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for(self, predicate: Callable[[list[RequestRecord]], bool]) -> None:
        """Return once ``predicate(records)`` holds; wrap in ``asyncio.timeout``."""
        while not predicate(self.records):
            await self._changed.wait()

    def to_json(self) -> list[JSONObject]:
        return [r.to_json() for r in self.records]


class _ScriptState:
    """Which steps are used up and how many faults each has left to serve."""

    def __init__(self, script: MockScript) -> None:
        self.steps = script.steps
        self.used = [False] * len(script.steps)
        self.faults_left = [s.times or 0 for s in script.steps]

    def take(self, messages: list[JSONObject]) -> tuple[int | None, MockStep, str | None]:
        """The step answering this request, its index and the fault to serve."""
        index = self._pick(messages)
        if index is None:
            return None, MockStep(text=EXHAUSTED_TEXT, finish_reason="stop"), None
        step = self.steps[index]
        fault: str | None = None
        if step.fault is not None and step.times is None:
            fault = step.fault
            self.used[index] = True
        elif step.fault is not None and self.faults_left[index] > 0:
            self.faults_left[index] -= 1
            fault = step.fault
        else:
            self.used[index] = True
        return index, step, fault

    def _pick(self, messages: list[JSONObject]) -> int | None:
        free = [i for i, used in enumerate(self.used) if not used]
        for i in free:
            match = self.steps[i].match
            if match is not None and match.passes(messages):
                return i
        for i in free:
            if self.steps[i].match is None:
                return i
        return None


# --- building the stream -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes
    delay_s: float = 0.0


def _pieces(text: str, size: int | None) -> list[str]:
    if not text:
        return []
    if size is None:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(obj: JSON) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"


def estimate_usage(body: JSONObject, step: MockStep) -> JSONObject:
    """Plausible counts: about four characters per token, at least one."""
    prompt_chars = len(json.dumps(body.get("messages", []), ensure_ascii=False))
    prompt_chars += len(json.dumps(body.get("tools", []), ensure_ascii=False))
    reasoning = len(step.reasoning or "")
    answer = len(step.text) + sum(len(c.name) + len(c.arguments_text()) for c in step.tool_calls)
    prompt = max(1, math.ceil(prompt_chars / 4))
    reasoning_tokens = math.ceil(reasoning / 4)
    completion = max(1, math.ceil(answer / 4) + reasoning_tokens)
    usage: JSONObject = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "prompt_cache_hit_tokens": 0,
        "prompt_cache_miss_tokens": prompt,
    }
    if step.usage:
        usage.update(step.usage)
    return usage


def build_frames(
    step: MockStep, body: JSONObject, request_index: int
) -> tuple[list[Frame], list[Frame]]:
    """The stream for ``step``: (data chunks, trailer of usage chunk and [DONE]).

    Kept apart so faults can cut between chunks without ever sending the trailer.
    """
    delay = step.delay_ms / 1000
    if step.raw_chunks is not None:
        raw = [
            Frame(item.encode("utf-8") if isinstance(item, str) else _sse(item), delay)
            for item in step.raw_chunks
        ]
        return raw, []
    model = str(body.get("model") or "mock-model")
    chunk_id = f"chatcmpl-mock-{request_index}"

    def chunk(delta: JSONObject, finish: str | None = None) -> JSONObject:
        return {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    size = step.chunk_size
    deltas: list[JSONObject] = [{"role": "assistant", "content": ""}]
    reasoning_key = "reasoning" if step.style == "vllm" else "reasoning_content"
    deltas += [{reasoning_key: p} for p in _pieces(step.reasoning or "", size)]
    deltas += [{"content": p} for p in _pieces(step.text, size)]
    for i, call in enumerate(step.tool_calls):
        call_id = call.id or f"call_{request_index}_{i}"
        args = call.arguments_text()
        if step.style == "ollama":
            function = {"name": call.name, "arguments": args}
            whole = {"index": 0, "id": call_id, "type": "function", "function": function}
            deltas.append({"tool_calls": [whole]})
            continue
        no_args = step.style == "vllm" and args.strip() in ("", "{}")
        first_fn: JSONObject = (
            {"name": call.name} if no_args else {"name": call.name, "arguments": ""}
        )
        first = {"index": i, "id": call_id, "type": "function", "function": first_fn}
        deltas.append({"tool_calls": [first]})
        if not no_args:
            deltas += [
                {"tool_calls": [{"index": i, "function": {"arguments": p}}]}
                for p in _pieces(args, size)
            ]
    finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
    frames = [Frame(_sse(chunk(d)), delay) for d in deltas]
    frames.append(Frame(_sse(chunk({}, finish)), delay))
    if step.keepalive:
        keep = Frame(b": keep-alive\n\n", 0.0)
        frames = [f for frame in frames for f in (keep, frame)]
    trailer: list[Frame] = []
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        usage_chunk = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [],
            "usage": estimate_usage(body, step),
        }
        trailer.append(Frame(_sse(usage_chunk), delay))
    trailer.append(Frame(b"data: [DONE]\n\n", delay))
    return frames, trailer


def build_completion(step: MockStep, body: JSONObject, request_index: int) -> JSONObject:
    """The whole answer as one ``chat.completion`` object (a non-streaming reply)."""
    message: JSONObject = {"role": "assistant", "content": step.text or None}
    if step.reasoning:
        message["reasoning_content"] = step.reasoning
    if step.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{request_index}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_text()},
            }
            for i, call in enumerate(step.tool_calls)
        ]
    finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
    return {
        "id": f"chatcmpl-mock-{request_index}",
        "object": "chat.completion",
        "created": CREATED,
        "model": str(body.get("model") or "mock-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": estimate_usage(body, step),
    }


# --- serving it ----------------------------------------------------------------------


class _ScriptedStream:
    """An ASGI response that sends frames and notices a client going away.

    ``complete=False`` returns without finishing the chunked body, so the server
    drops the connection mid-stream (the "cut" fault).
    """

    def __init__(
        self,
        frames: list[Frame],
        record: RequestRecord,
        recorder: Recorder,
        *,
        complete: bool = True,
        start_delay_s: float = 0.0,
    ) -> None:
        self.frames = frames
        self.record = record
        self.recorder = recorder
        self.complete = complete
        self.start_delay_s = start_delay_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    return

        watcher = asyncio.create_task(watch())
        try:
            if self.start_delay_s and await _wait(gone, self.start_delay_s):
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-cache"),
                        (b"x-accel-buffering", b"no"),
                    ],
                }
            )
            for frame in self.frames:
                if frame.delay_s and await _wait(gone, frame.delay_s):
                    return
                if gone.is_set():
                    return
                await send({"type": "http.response.body", "body": frame.data, "more_body": True})
            if self.complete and not gone.is_set():
                watcher.cancel()
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                self.record.completed = True
        finally:
            watcher.cancel()
            if gone.is_set():
                self.record.disconnected = True
            self.recorder.touch()


async def _wait(gone: asyncio.Event, seconds: float) -> bool:
    """Sleep up to ``seconds``; True if the client left meanwhile."""
    try:
        async with asyncio.timeout(seconds):
            await gone.wait()
    except TimeoutError:
        return False
    return True


def _error_response(step: MockStep, fault: str) -> Response:
    kind, default = _DEFAULT_ERRORS[fault]
    headers: dict[str, str] = {}
    if step.retry_after is not None:
        value = step.retry_after
        whole = isinstance(value, float) and value.is_integer()
        headers["retry-after"] = str(int(value)) if whole else str(value)
    if step.retry_after_ms is not None:
        headers["retry-after-ms"] = str(step.retry_after_ms)
    payload = {"error": {"message": step.error_message or default, "type": kind, "code": fault}}
    return JSONResponse(payload, status_code=int(fault), headers=headers)


def create_mock_app(script: MockScript) -> Starlette:
    """The mock server as an ASGI app; its recorder is ``app.state.recorder``."""
    recorder = Recorder()
    state = _ScriptState(script)

    async def chat(request: Request) -> Response:
        raw = await request.body()
        headers = {k: v for k, v in request.headers.items() if k != "authorization"}
        record = RequestRecord(
            index=len(recorder.records),
            path=request.url.path,
            headers=headers,
            auth_present="authorization" in request.headers,
            body=None,
        )
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            record.body = raw.decode("utf-8", errors="replace")
            record.status = 400
            recorder.add(record)
            error = {"message": "mock: body must be a JSON object with messages", "type": "x"}
            return JSONResponse({"error": error}, status_code=400)
        record.body = body
        limit = script.context_limit
        tokens = int(estimate_usage(body, MockStep())["prompt_tokens"])
        if limit is not None and tokens > limit:
            record.status = 400
            record.fault = "context_limit"
            record.completed = True
            recorder.add(record)
            return overflow_response(script.overflow_style, limit, tokens)
        complaint = script.history_error(body["messages"])
        if complaint is not None:
            record.status = 400
            recorder.add(record)
            error = {"message": complaint, "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=400)
        index, step, fault = state.take(body["messages"])
        record.step = index
        record.fault = fault
        recorder.add(record)
        if fault in _DEFAULT_ERRORS:
            assert fault is not None
            record.status = int(fault)
            record.completed = True
            return _error_response(step, fault)
        if step.non_streaming and fault is None:
            record.completed = True
            return JSONResponse(build_completion(step, body, record.index))
        frames, trailer = build_frames(step, body, record.index)
        if fault == "cut":
            keep = step.cut_after if step.cut_after is not None else max(1, len(frames) // 2)
            return _Passthrough(_ScriptedStream(frames[:keep], record, recorder, complete=False))
        if fault == "error_in_stream":
            keep = step.cut_after if step.cut_after is not None else 1
            message = step.error_message or "mock: the model failed while answering"
            error_frame = Frame(_sse({"error": {"message": message, "type": "server_error"}}))
            return _Passthrough(_ScriptedStream([*frames[:keep], error_frame], record, recorder))
        start_delay = step.slow_ms / 1000 if fault == "slow" else 0.0
        stream = _ScriptedStream(frames + trailer, record, recorder, start_delay_s=start_delay)
        return _Passthrough(stream)

    async def requests(_: Request) -> Response:
        return JSONResponse(recorder.to_json())

    async def models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "mock-model", "object": "model"}]})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/_mock/requests", requests, methods=["GET"]),
        ]
    )
    app.state.recorder = recorder
    app.state.script = script
    return app


class _Passthrough(Response):
    """Lets an endpoint return a hand-written ASGI response."""

    def __init__(self, inner: _ScriptedStream) -> None:
        self.inner = inner
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.inner(scope, receive, send)
