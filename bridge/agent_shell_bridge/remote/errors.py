"""What goes wrong with a remote project, as the bridge's typed errors."""

from __future__ import annotations

from ..errors import InvalidParams, PathNotAllowed, ToolFailed

__all__ = ["RemoteDisconnected", "RemoteEscape", "RemoteFailed", "RemoteRefused"]


class RemoteRefused(InvalidParams):
    """A TRAMP path this bridge cannot work on (its method runs no processes)."""


class RemoteFailed(ToolFailed):
    """The remote side answered, but not as asked (no python3, a helper error)."""


class RemoteDisconnected(ToolFailed):
    """The connection to the host is gone: the turn ends, nothing runs until it is back."""


class RemoteEscape(PathNotAllowed):
    """A remote path that resolves out of the remote project (a symlink out of it)."""
