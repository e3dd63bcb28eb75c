"""JSON-RPC 2.0: envelope parsing, method dispatch and error objects.

One body carries one message (batches are refused). Incoming messages are either
requests/notifications for the bridge, or responses to requests the bridge sent to
the client over SSE (``tool/call``, ``session/request_permission``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import BridgeError, InvalidParams, InvalidRequest, MethodNotFound, RpcParseError
from ..types import JSONObject

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "Dispatcher",
    "IncomingRequest",
    "IncomingResponse",
    "error_response",
    "parse_message",
    "success_response",
]

log = logging.getLogger(__name__)

RequestId = int | str
P = TypeVar("P", bound="BaseModel")
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class IncomingRequest:
    """A request (``id`` set) or a notification (``id`` None) addressed to the bridge."""

    method: str
    params: JSONObject
    id: RequestId | None

    @property
    def is_notification(self) -> bool:
        return self.id is None


@dataclass(frozen=True, slots=True)
class IncomingResponse:
    """The client's answer to a request the bridge sent over SSE."""

    id: RequestId
    result: Any
    error: JSONObject | None


def _valid_id(value: object) -> bool:
    # bool is an int subclass; JSON-RPC ids are strings or numbers, never booleans.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _recoverable_id(obj: object) -> RequestId | None:
    if isinstance(obj, dict):
        value = obj.get("id")
        if _valid_id(value):
            return value
    return None


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; let in, they break the response and SSE encoders.
    raise ValueError(f"{name} is not valid JSON")


def parse_message(body: bytes) -> IncomingRequest | IncomingResponse:
    """Decode one JSON-RPC message.

    Raises RpcParseError for bytes that are not JSON and InvalidRequest (whose
    ``data`` carries the id when it could be read) for anything else malformed.
    """
    try:
        obj = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        # ValueError covers UnicodeDecodeError, JSONDecodeError, NaN/Infinity and
        # integers past Python's int-string digit limit.
        raise RpcParseError("Parse error: the body is not valid UTF-8 JSON") from exc
    if isinstance(obj, list):
        raise InvalidRequest("Invalid request: batches are not supported")
    if not isinstance(obj, dict):
        raise InvalidRequest("Invalid request: expected a JSON object")
    rid = _recoverable_id(obj)
    if obj.get("jsonrpc") != "2.0":
        raise InvalidRequest('Invalid request: "jsonrpc" must be "2.0"', data={"id": rid})
    if "id" in obj and obj["id"] is not None and not _valid_id(obj["id"]):
        raise InvalidRequest("Invalid request: id must be a string or an integer")
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            raise InvalidRequest("Invalid request: method must be a string", data={"id": rid})
        params = obj.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise InvalidRequest(
                "Invalid request: params must be an object (by-name parameters)",
                data={"id": rid},
            )
        return IncomingRequest(method=method, params=params, id=rid)
    if ("result" in obj) != ("error" in obj) and rid is not None:
        error = obj.get("error")
        if error is not None and not isinstance(error, dict):
            raise InvalidRequest("Invalid response: error must be an object", data={"id": rid})
        return IncomingResponse(id=rid, result=obj.get("result"), error=error)
    raise InvalidRequest("Invalid request: neither a request nor a response", data={"id": rid})


def success_response(rid: RequestId, result: Any) -> JSONObject:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_response(rid: RequestId | None, error: BridgeError) -> JSONObject:
    return {"jsonrpc": "2.0", "id": rid, "error": error.to_error_object()}


Handler = Callable[[C, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class _Method(Generic[C]):
    params_model: type[BaseModel]
    handler: Handler[C]


class Dispatcher(Generic[C]):
    """Maps method names to typed handlers ``async (context, params_model) -> result``.

    A method area may be declared with :meth:`lazy` instead: its names are known (and
    listed) from the start, and its module, with its pydantic models, is imported by
    the first call of any of them.
    """

    def __init__(self) -> None:
        self._methods: dict[str, _Method[C]] = {}
        self._pending: dict[str, Callable[[Dispatcher[C]], None]] = {}

    def method(
        self, name: str, params_model: type[P]
    ) -> Callable[[Callable[[C, P], Awaitable[Any]]], Callable[[C, P], Awaitable[Any]]]:
        def decorate(fn: Callable[[C, P], Awaitable[Any]]) -> Callable[[C, P], Awaitable[Any]]:
            if name in self._methods:
                raise ValueError(f"method {name!r} registered twice")
            self._methods[name] = _Method(params_model, fn)
            return fn

        return decorate

    def lazy(self, names: Iterable[str], load: Callable[[Dispatcher[C]], None]) -> None:
        """Declare ``names`` as registered by ``load``, which runs at the first call of one."""
        for name in names:
            if name in self._methods or name in self._pending:
                raise ValueError(f"method {name!r} registered twice")
            self._pending[name] = load

    def load_all(self) -> None:
        """Run every pending ``load`` now (tests; a front end that wants no first-call cost)."""
        while self._pending:
            self._load(next(iter(self._pending)))

    def _load(self, name: str) -> None:
        load = self._pending[name]
        before = set(self._methods)
        try:
            load(self)
        except BaseException:
            # A failed import stays pending, so the next call reports it again
            # instead of "method not found"; what it registered halfway is undone.
            for added in set(self._methods) - before:
                del self._methods[added]
            raise
        for other in [n for n, fn in self._pending.items() if fn is load]:
            del self._pending[other]

    @property
    def names(self) -> list[str]:
        return sorted({*self._methods, *self._pending})

    async def dispatch(self, context: C, request: IncomingRequest) -> JSONObject | None:
        """Run one request; return its response (None for a notification)."""
        try:
            result = await self._call(context, request)
        except BridgeError as exc:
            if request.is_notification:
                log.warning("notification %s failed: %s", request.method, exc.message)
                return None
            return error_response(request.id, exc)
        except Exception:
            log.exception("internal error in %s", request.method)
            if request.is_notification:
                return None
            return error_response(request.id, BridgeError("Internal error (see the bridge log)"))
        if request.id is None:
            return None
        return success_response(request.id, result)

    async def _call(self, context: C, request: IncomingRequest) -> Any:
        if request.method in self._pending:
            self._load(request.method)
        entry = self._methods.get(request.method)
        if entry is None:
            raise MethodNotFound(f"Method not found: {request.method}")
        from pydantic import ValidationError  # loaded by then: the handler's models use it

        try:
            params = entry.params_model.model_validate(request.params)
        except ValidationError as exc:
            problems = [
                {"loc": ".".join(str(p) for p in err["loc"]), "msg": err["msg"]}
                for err in exc.errors(include_url=False, include_input=False)
            ]
            raise InvalidParams(f"Invalid params for {request.method}", data=problems) from exc
        return await entry.handler(context, params)
