"""The bridge's exception tree and its JSON-RPC error codes.

Every error the bridge reports to a client is one of these; lower-level errors are
translated with ``raise Mapped(...) from exc`` so no stack trace reaches the wire.

    BridgeError                      -32603  internal error
    ├── RpcParseError                -32700  body is not JSON
    ├── InvalidRequest               -32600  not a JSON-RPC 2.0 envelope
    ├── MethodNotFound               -32601  unknown method
    ├── InvalidParams                -32602  params failed validation
    ├── SessionNotFound              -32001  unknown session id
    ├── SessionBusy                  -32002  a turn is already running
    ├── PolicyDenied                 -32003  the safety policy refused an action
    ├── PathNotAllowed               -32004  a path escapes the allowed roots
    ├── ToolFailed                   -32005  a tool ran and failed
    │   └── NotWritten               -32005  the editor refused a write, nothing changed
    ├── RootNotAllowed               -32006  $HOME or / (or above $HOME) as a project root
    ├── ModelError                   -32010  the model API failed
    │   ├── ModelHTTPError           -32011  non-retryable HTTP status
    │   │   └── ModelContextLimit    -32014  the provider refused the request as too long
    │   ├── ModelStreamError         -32012  error object or cut inside a stream
    │   ├── ModelUnavailable         -32013  retries exhausted / connection refused
    │   └── ContextTooLarge          -32015  no compaction makes the request fit the window
    ├── MemoryError_                 -32020  memory index or experience file problem
    ├── Cancelled                    -32030  the operation was cancelled
    ├── ClientGone                   -32031  no client to answer an Emacs-side request
    ├── Unauthorized                 -32040  missing or wrong bearer token (HTTP 401)
    ├── Forbidden                    -32041  bad Host or a browser Origin (HTTP 403)
    └── PayloadTooLarge              -32042  body over the size limit (HTTP 413)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "BridgeError",
    "Cancelled",
    "ClientGone",
    "ContextTooLarge",
    "Forbidden",
    "InvalidParams",
    "InvalidRequest",
    "MemoryError_",
    "MethodNotFound",
    "ModelContextLimit",
    "ModelError",
    "ModelHTTPError",
    "ModelStreamError",
    "ModelUnavailable",
    "NotWritten",
    "PathNotAllowed",
    "PayloadTooLarge",
    "PolicyDenied",
    "RootNotAllowed",
    "RpcParseError",
    "SessionBusy",
    "SessionNotFound",
    "ToolFailed",
    "Unauthorized",
]


class BridgeError(Exception):
    """Base of every error the bridge reports; ``code`` is its JSON-RPC code."""

    code: ClassVar[int] = -32603

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_error_object(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class RpcParseError(BridgeError):
    code = -32700


class InvalidRequest(BridgeError):
    code = -32600


class MethodNotFound(BridgeError):
    code = -32601


class InvalidParams(BridgeError):
    code = -32602


class SessionNotFound(BridgeError):
    code = -32001


class SessionBusy(BridgeError):
    code = -32002


class PolicyDenied(BridgeError):
    code = -32003


class PathNotAllowed(BridgeError):
    code = -32004


class ToolFailed(BridgeError):
    code = -32005


class NotWritten(ToolFailed):
    """The editor refused a write before changing anything (a buffer holding the
    user's unsaved edits): the edit's undo snapshot is taken back."""


class RootNotAllowed(BridgeError):
    """A session root that is ``$HOME``, ``/`` or a folder holding ``$HOME``.

    Such a root would make every dotfile and secret project content; the client asks
    the user for a project directory, or sends ``allow_wide_root`` once they confirm.
    """

    code = -32006


class ModelError(BridgeError):
    code = -32010


class ModelHTTPError(ModelError):
    """The provider answered with a status that retrying will not fix."""

    code = -32011

    def __init__(self, message: str, *, status: int, data: Any = None) -> None:
        super().__init__(message, data=data)
        self.status = status


class ModelContextLimit(ModelHTTPError):
    """The provider said the request is over the model's context length.

    ``limit`` is the window the provider named in its message, when it named one.
    """

    code = -32014

    def __init__(
        self, message: str, *, status: int, limit: int | None = None, data: Any = None
    ) -> None:
        super().__init__(message, status=status, data=data)
        self.limit = limit


class ContextTooLarge(ModelError):
    """Even after compaction the next request would not fit the model's window."""

    code = -32015


class ModelStreamError(ModelError):
    code = -32012


class ModelUnavailable(ModelError):
    code = -32013


class MemoryError_(BridgeError):
    code = -32020


class Cancelled(BridgeError):
    code = -32030


class ClientGone(BridgeError):
    code = -32031


class Unauthorized(BridgeError):
    code = -32040


class Forbidden(BridgeError):
    code = -32041


class PayloadTooLarge(BridgeError):
    code = -32042
