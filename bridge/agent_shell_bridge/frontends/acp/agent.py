"""agent-shell as an Agent Client Protocol agent: a second front end on the same core.

The core runs in this process exactly as under ``serve``: the same method table,
sessions, loop, policy, sandbox, org log, memory and checkpoints. This class only
translates. ACP requests become calls on the core's dispatcher; the core's
``session/update`` notifications and its requests to the client (permissions, plans)
are read from the event hub and relayed to the ACP client.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    ForkSessionResponse,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    SessionNotification,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)
from pydantic import BaseModel

from ... import __version__
from ...config import KEY_ENV_VARS
from ...errors import BridgeError, MethodNotFound, ToolFailed
from ...runtime import Runtime
from ...transport.rpc import IncomingRequest
from ...types import JSONObject
from .attachments import prompt_parts
from .cards import end_update, merge, start_update
from .commands import POLL_S, CommandWatch
from .mapping import (
    STOP_REASONS,
    final_words,
    history_updates,
    map_update,
    message,
    permission_options,
    prompt_usage,
)
from .permissions import permission_tool_call, plan_markdown

__all__ = ["AcpFrontEnd"]

log = logging.getLogger(__name__)

MODES = [
    {"id": "act", "name": "Act", "description": "Edit files and run commands; risky steps ask."},
    {"id": "ask", "name": "Ask", "description": "Answer questions only: no edits, no commands."},
]


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def mcp_servers_param(servers: list[Any] | None) -> list[JSONObject]:
    """ACP's MCP servers (stdio, http, sse) in the shape ``session/new`` takes.

    Other kinds (ACP's own MCP-over-ACP) are refused with the server's name.
    """
    out: list[JSONObject] = []
    for server in _dump(servers or []):
        if not isinstance(server, dict):
            continue
        kind = server.get("type")
        if kind in ("http", "sse"):
            out.append(
                {
                    "type": kind,
                    "name": server.get("name"),
                    "url": server.get("url"),
                    "headers": server.get("headers") or [],
                }
            )
            continue
        if "command" not in server:
            raise RequestError.invalid_params(
                {
                    "message": f"MCP server {server.get('name')!r}: only stdio, http and sse "
                    "servers are supported"
                }
            )
        out.append(
            {
                "name": server.get("name"),
                "command": server.get("command"),
                "args": server.get("args") or [],
                "env": server.get("env") or [],
            }
        )
    return out


class AcpFiles:
    """File reads and writes through the ACP client (``fs/read_text_file`` and
    ``fs/write_text_file``): the agent sees and edits the editor's buffers."""

    def __init__(self, front: AcpFrontEnd) -> None:
        self.front = front

    async def read(self, session_id: str, path: Path) -> str | None:
        # A file neither on disk nor known to the client is new; ask only for the rest.
        if not await asyncio.to_thread(path.exists):
            return None
        assert self.front.conn is not None
        try:
            reply = await self.front.conn.read_text_file(session_id=session_id, path=str(path))
        except RequestError as exc:
            raise ToolFailed(f"the editor could not read {path}: {exc}") from exc
        return str(reply.content)

    async def write(self, session_id: str, path: Path, text: str) -> None:
        assert self.front.conn is not None
        try:
            await self.front.conn.write_text_file(
                session_id=session_id, path=str(path), content=text
            )
        except RequestError as exc:
            raise ToolFailed(f"the editor could not write {path}: {exc}") from exc


class AcpFrontEnd:
    """The ACP ``Agent``: each method maps to the core's JSON-RPC method of the same idea."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.conn: Client | None = None
        self._ids = itertools.count(1)
        self._turn_ends: dict[str, asyncio.Queue[JSONObject]] = {}
        # A prompt sent while the session's turn runs waits here for its turn.
        self._prompt_locks: dict[str, asyncio.Lock] = {}
        # Cancels per session so far: a prompt waiting behind the running turn when
        # one arrives is answered "cancelled" and never runs.
        self._cancels: dict[str, int] = {}
        self._roots: dict[str, Path] = {}
        # Tool-call titles the user rejected "always", per session.
        self._rejected: dict[str, set[str]] = {}
        # The calls in progress, per session: each one's updates merged (see cards).
        self._views: dict[str, dict[str, JSONObject]] = {}
        self._commands: dict[str, CommandWatch] = {}
        self.commands_poll_s = POLL_S
        self._pump: asyncio.Task[None] | None = None
        self._requests: set[asyncio.Task[None]] = set()

    # -- plumbing ---------------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def _call(self, method: str, params: JSONObject) -> Any:
        """Run one of the core's methods; its JSON-RPC error becomes ACP's."""
        request = IncomingRequest(method=method, params=params, id=next(self._ids))
        reply = await self.rt.dispatcher.dispatch(self.rt, request)
        assert reply is not None  # a request (with an id) always gets a response
        if "error" in reply:
            error = reply["error"]
            raise RequestError(int(error["code"]), str(error["message"]), error.get("data"))
        return reply["result"]

    def _start_pump(self) -> None:
        if self._pump is None:
            self._pump = asyncio.create_task(self._relay(self.rt.hub.last_id), name="acp-relay")

    async def aclose(self) -> None:
        for watch in self._commands.values():
            await watch.stop()
        for task in [*self._requests, *([self._pump] if self._pump else [])]:
            task.cancel()
        await asyncio.gather(*self._requests, return_exceptions=True)
        if self._pump is not None:
            await asyncio.gather(self._pump, return_exceptions=True)

    async def _relay(self, after: int) -> None:
        """Forward the core's events in order; its requests each get their own task."""
        async for event in self.rt.hub.subscribe(after):
            message = json.loads(event.data)
            try:
                if "id" in message and "method" in message:
                    task = asyncio.create_task(self._answer(message))
                    self._requests.add(task)
                    task.add_done_callback(self._requests.discard)
                elif message.get("method") == "session/update":
                    await self._forward_update(message.get("params") or {})
                elif message.get("method") == "log/entry":
                    await self._notice(message.get("params") or {})
            except Exception:
                log.exception("could not relay %s", message.get("method"))

    async def _send(self, session_id: str, update: JSONObject) -> None:
        assert self.conn is not None
        note = SessionNotification.model_validate({"sessionId": session_id, "update": update})
        await self.conn.session_update(session_id=session_id, update=note.update)

    async def _forward_update(self, params: JSONObject) -> None:
        session_id = str(params.get("sessionId"))
        update = params.get("update") or {}
        kind = update.get("sessionUpdate")
        root = self._roots.get(session_id)
        if kind == "turn_end":
            if root is not None:
                for words in final_words(update):
                    await self._send(session_id, words)
            queue = self._turn_ends.get(session_id)
            if queue is not None:
                queue.put_nowait(update)
            return
        if root is None:
            return  # a session this client did not open
        if kind in ("tool_call", "tool_call_update"):
            mapped = self._tool_update(session_id, root, update)
        else:
            mapped = map_update(update)
        if mapped is not None:
            await self._send(session_id, mapped)

    def _tool_update(self, session_id: str, root: Path, update: JSONObject) -> JSONObject | None:
        """A call's updates folded into its view; the view, once finished, as its card."""
        views = self._views.setdefault(session_id, {})
        call_id = str(update.get("toolCallId"))
        if update.get("sessionUpdate") == "tool_call":
            view: JSONObject = {}
            merge(view, update)
            views[call_id] = view
            return start_update(root, view)
        view = views.setdefault(call_id, {"toolCallId": call_id})
        merge(view, update)
        if view.get("status") in ("completed", "failed"):
            del views[call_id]
            return end_update(root, view)
        return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}

    async def _notice(self, params: JSONObject) -> None:
        """A log entry the user should read in the conversation too (a compaction)."""
        session_id = str(params.get("session_id"))
        title = str(params.get("title") or "")
        known = session_id in self._roots and params.get("source") == "bridge"
        if known and title.startswith("Compacted "):
            await self._send(session_id, message(f"\n[{title}]\n"))

    # -- requests from the core to the client -------------------------------------

    async def _answer(self, message: JSONObject) -> None:
        method = message["method"]
        params = message.get("params") or {}
        try:
            if method == "session/request_permission":
                result: Any = await self._permission(params)
            elif method == "session/request_plan":
                result = await self._plan(params)
            elif method == "session/ask_user":
                result = await self._question(params)
            else:  # tool/call: this front end hands no tools to the client
                self.rt.hub.resolve(
                    message["id"],
                    None,
                    {"code": MethodNotFound.code, "message": f"{method} is not available over ACP"},
                )
                return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("the client did not answer %s: %s", method, exc)
            result = {"outcome": {"outcome": "cancelled"}}
        self.rt.hub.resolve(message["id"], result, None)

    async def _permission(self, params: JSONObject) -> JSONObject:
        assert self.conn is not None
        session_id = str(params.get("sessionId"))
        call = dict(params.get("toolCall") or {})
        title = str(call.get("title") or "")
        if title and title in self._rejected.get(session_id, set()):
            return {
                "outcome": {"outcome": "selected", "optionId": "reject_once"},
                "reason": "rejected for this session",
            }
        root = self._roots.get(session_id, Path.cwd())
        tool_call = ToolCallUpdate.model_validate(permission_tool_call(root, params))
        options = permission_options(params.get("options") or [])
        answer: RequestPermissionResponse = await self.conn.request_permission(
            session_id=session_id,
            tool_call=tool_call,
            options=[PermissionOption.model_validate(o) for o in options],
        )
        outcome = _dump(answer.outcome)
        if outcome.get("outcome") != "selected":
            return {"outcome": {"outcome": "cancelled"}}
        chosen = str(outcome.get("optionId"))
        if chosen == "reject_always":
            self._rejected.setdefault(session_id, set()).add(title)
            chosen = "reject_once"
        return {"outcome": {"outcome": "selected", "optionId": chosen}}

    async def _question(self, params: JSONObject) -> JSONObject:
        """``ask_user`` as a permission request whose options are the answers (ACP
        has no free-text question, so only the options can be chosen)."""
        assert self.conn is not None
        options = [str(o) for o in params.get("options") or []]
        question = str(params.get("question") or "")
        tool_call = ToolCallUpdate.model_validate(
            {
                "toolCallId": str(params.get("toolCallId")),
                "title": f"Question: {question.splitlines()[0] if question else '?'}",
                "kind": "think",
                "status": "pending",
                "rawInput": {"question": question, "options": options},
                "content": [{"type": "content", "content": {"type": "text", "text": question}}],
            }
        )
        answer: RequestPermissionResponse = await self.conn.request_permission(
            session_id=str(params.get("sessionId")),
            tool_call=tool_call,
            options=[
                PermissionOption.model_validate(
                    {"optionId": f"answer_{n}", "name": option, "kind": "allow_once"}
                )
                for n, option in enumerate(options, start=1)
            ],
        )
        outcome = _dump(answer.outcome)
        chosen = str(outcome.get("optionId") or "")
        if outcome.get("outcome") != "selected" or not chosen.startswith("answer_"):
            return {"outcome": "cancelled"}
        return {"option": int(chosen.removeprefix("answer_"))}

    async def _plan(self, params: JSONObject) -> JSONObject:
        """ACP has no plan editor: the plan is shown as a plan update and approved as is."""
        steps = [s for s in params.get("steps") or [] if isinstance(s, dict)]
        plan = plan_markdown(str(params.get("goal")), steps, params.get("risks") or [])
        answer = await self._permission(
            {
                "sessionId": params.get("sessionId"),
                "toolCall": {
                    "toolCallId": params.get("toolCallId"),
                    "title": f"Plan: {params.get('goal')}",
                    "kind": "think",
                    "rawInput": {"plan": plan, "goal": params.get("goal"), "steps": steps},
                },
                "options": [{"optionId": "allow_once"}, {"optionId": "reject_once"}],
            }
        )
        chosen = answer["outcome"].get("optionId")
        return {"outcome": "approved" if chosen == "allow_once" else "rejected"}

    # -- the ACP agent methods ----------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_: Any,
    ) -> InitializeResponse:
        await self._call(
            "initialize",
            {"protocolVersion": 1, "clientInfo": _dump(client_info) or {}},
        )
        fs = (_dump(client_capabilities) or {}).get("fs") or {}
        if fs.get("readTextFile") and fs.get("writeTextFile"):
            self.rt.client_files = AcpFiles(self)
        self._start_pump()
        return InitializeResponse.model_validate(
            {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": True,
                    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                    "mcpCapabilities": {"http": True, "sse": True},
                    "sessionCapabilities": {"list": {}, "fork": {}},
                },
                "agentInfo": {
                    "name": "agent-shell",
                    "title": "agent-shell",
                    "version": __version__,
                },
                "authMethods": [
                    {
                        "type": "env_var",
                        "id": "api-key-env",
                        "name": "API key in the environment",
                        "description": "Set one of "
                        + ", ".join(KEY_ENV_VARS)
                        + " (and AGENT_SHELL_API_BASE / AGENT_SHELL_MODEL for another provider).",
                        "vars": [{"name": KEY_ENV_VARS[0], "label": "API key"}],
                    }
                ],
            }
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        return None  # the key comes from the environment; nothing to do interactively

    def _watch(self, result: JSONObject) -> str:
        """Follow a session opened by this client; its command list goes out just
        after the response (the response is queued first: see the SDK's sender)."""
        session_id = str(result["sessionId"])
        root = Path(str(result["root"]))
        self._roots[session_id] = root
        self._turn_ends.setdefault(session_id, asyncio.Queue())
        if session_id not in self._commands:

            async def send(update: JSONObject) -> None:
                await self._send(session_id, update)

            watch = CommandWatch(self.rt, root, send, self.commands_poll_s)
            self._commands[session_id] = watch
            self._spawn(watch.publish())
            watch.start()
        else:
            self._spawn(self._commands[session_id].publish())
        return session_id

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    @staticmethod
    def _modes(current: str) -> JSONObject:
        return {"currentModeId": current, "availableModes": MODES}

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        params: JSONObject = {"cwd": cwd}
        servers = mcp_servers_param(mcp_servers)
        if servers:
            params["mcpServers"] = servers
        result = await self._call("session/new", params)
        session_id = self._watch(result)
        return NewSessionResponse.model_validate(
            {"sessionId": session_id, "modes": self._modes(str(result.get("mode", "act")))}
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        params: JSONObject = {"sessionId": session_id, "cwd": cwd}
        servers = mcp_servers_param(mcp_servers)
        if servers:  # the editor's servers, as for a new session
            params["mcpServers"] = servers
        result = await self._call("session/resume", params)
        root = Path(str(result["root"]))
        for update in history_updates(root, result.get("history") or []):
            await self._send(session_id, update)
        self._watch(result)
        return LoadSessionResponse.model_validate(
            {"modes": self._modes(str(result.get("mode", "act")))}
        )

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ForkSessionResponse:
        """A new session with this one's whole history, its own log and checkpoints,
        and the editor's MCP servers (as for a new session)."""
        params: JSONObject = {"sessionId": session_id}
        servers = mcp_servers_param(mcp_servers)
        if servers:
            params["mcpServers"] = servers
        result = await self._call("session/fork", params)
        fork_id = self._watch(result)
        return ForkSessionResponse.model_validate(
            {"sessionId": fork_id, "modes": self._modes(str(result.get("mode", "act")))}
        )

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        """``model``: another model at the same API base, from the next request on."""
        if config_id != "model" or not isinstance(value, str) or not value.strip():
            raise RequestError.invalid_params({"message": f"unknown option {config_id!r}"})
        live = self.rt.sessions.get(session_id)
        if live is None:
            raise RequestError.invalid_params({"message": f"unknown session {session_id!r}"})
        await self._call(
            "session/set_model",
            {
                "sessionId": session_id,
                "name": value,
                "model": {"api_base": live.config.api_base, "model": value},
            },
        )
        option = {
            "id": "model",
            "name": "Model",
            "type": "select",
            "currentValue": value,
            "options": [{"value": value, "name": value}],
        }
        return SetSessionConfigOptionResponse.model_validate({"configOptions": [option]})

    async def list_sessions(self, cwd: str | None = None, **_: Any) -> ListSessionsResponse:
        result = await self._call("session/list", {"cwd": cwd} if cwd else {})
        return ListSessionsResponse.model_validate(
            {
                "sessions": [
                    {
                        "sessionId": s["sessionId"],
                        "cwd": s.get("root") or cwd or "",
                        "title": s.get("title") or None,
                        "updatedAt": s.get("updated"),
                    }
                    for s in result.get("sessions", [])
                ]
            }
        )

    async def set_session_mode(
        self, mode_id: str, session_id: str, **_: Any
    ) -> SetSessionModeResponse:
        if mode_id not in ("act", "ask"):
            raise RequestError.invalid_params({"message": f"unknown mode {mode_id!r}"})
        await self._call("session/set_mode", {"sessionId": session_id, "mode": mode_id})
        return SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        text, attachments = prompt_parts(_dump(prompt))
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt has no text"})
        # Queued behind the running turn, in the order sent: each runs as its own turn,
        # unless the client cancels meanwhile (a cancel ends all the session's work).
        cancels = self._cancels.get(session_id, 0)
        async with self._prompt_locks.setdefault(session_id, asyncio.Lock()):
            if self._cancels.get(session_id, 0) != cancels:
                return PromptResponse.model_validate({"stopReason": "cancelled"})
            return await self._run_prompt(session_id, text, attachments)

    async def _run_prompt(
        self, session_id: str, text: str, attachments: list[JSONObject]
    ) -> PromptResponse:
        queue = self._turn_ends.setdefault(session_id, asyncio.Queue())
        while not queue.empty():  # turn_ends of earlier, already answered turns
            queue.get_nowait()
        started = await self._call(
            "session/prompt",
            {"sessionId": session_id, "prompt": text, "attachments": attachments},
        )
        while True:
            end = await queue.get()
            if end.get("turnId") == started["turnId"]:
                break
        reason = str(end.get("stopReason"))
        if reason in STOP_REASONS:
            usage = prompt_usage(end)
            return PromptResponse.model_validate(
                {"stopReason": reason, **({"usage": usage} if usage else {})}
            )
        # The client has read why (final_words); the request fails with the same error.
        error = end.get("error") or {}
        raise RequestError(
            int(error.get("code", BridgeError.code)), str(error.get("message", reason))
        )

    async def cancel(self, session_id: str, **_: Any) -> None:
        self._cancels[session_id] = self._cancels.get(session_id, 0) + 1
        try:
            await self._call("session/cancel", {"sessionId": session_id})
        except RequestError as exc:
            log.info("cancel of %s: %s", session_id, exc)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None
