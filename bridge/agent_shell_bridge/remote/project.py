"""A remote project, connected: its target, connection, probe, runner and files.

:meth:`RemoteProject.connect` opens the connection, probes the host once, and
resolves the project root there (a root that is not a directory, or ``/`` or the
remote ``$HOME`` itself, is refused as a local one would be), and copies the
project's ``AGENTS.md`` (or ``CLAUDE.md``) and its ``.agent-shell/`` settings into
the mirror (:mod:`.shipped`), where the session reads them as a local one does;
:meth:`RemoteProject.reconnect` does the same after a drop, for a resumed session.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RootNotAllowed
from ..process.runner import ProcessRunner
from ..process.test_summary import detect_test_command
from .connection import RemoteConnection
from .errors import RemoteFailed
from .files import RemoteFiles
from .mirror import open_mirror
from .probe import RemoteProbe, probe_host
from .runner import RemoteRunner
from .shipped import sync_shipped
from .target import RemoteTarget

__all__ = ["RemoteProject"]

_SKIP = (".git", "node_modules", "__pycache__", ".venv", ".mypy_cache")


@dataclass
class RemoteProject:
    target: RemoteTarget
    connection: RemoteConnection
    probe: RemoteProbe
    root: str
    mirror: Path
    runner: RemoteRunner
    files: RemoteFiles
    # The project's TRAMP name as the client gave it (Emacs's buffers visit its files
    # under it), without a trailing slash.
    tramp: str = ""

    @classmethod
    async def connect(
        cls,
        target: RemoteTarget,
        *,
        runtime_dir: Path,
        ssh_options: Sequence[str] = (),
        secrets: Sequence[str] = (),
        mirror: Path | None = None,
        tramp: str | None = None,
    ) -> RemoteProject:
        connection = RemoteConnection(target, runtime_dir, ssh_options=ssh_options)
        await connection.open()
        try:
            probe = await probe_host(connection)
            answer = await connection.call_json({"op": "realpath", "path": target.path})
        except BaseException:
            await connection.close()
            raise
        root = str(answer["path"])
        if not answer.get("dir"):
            await connection.close()
            raise RemoteFailed(f"{target.tramp_name(target.path)} is not a directory there")
        if root in ("/", probe.home.rstrip("/")) or probe.home.startswith(root.rstrip("/") + "/"):
            await connection.close()
            raise RootNotAllowed(f"{root} on {target.label} is / or a home, not a project")
        mirror = mirror or open_mirror(target)
        files = RemoteFiles(connection, root)
        try:
            await sync_shipped(files, mirror)
        except BaseException:
            await connection.close()
            raise
        local = ProcessRunner(mirror / ".agent-shell" / "outputs" / "remote-raw", secrets=secrets)
        runner = RemoteRunner(connection, probe, root, local, local_cwd=mirror)
        name = (tramp or target.tramp_name(target.path)).rstrip("/")
        return cls(target, connection, probe, root, mirror, runner, files, name)

    async def test_command(self) -> str | None:
        """The project's test command, guessed there as locally
        (:func:`..process.test_summary.detect_test_command`): from the names at the
        root and in ``tests/``/``test/``, and the Makefile's and package.json's text."""
        listing = await self.files.list(".", depth=2, skip=_SKIP)
        entries = [str(e) for e in _as_list(listing.get("entries"))]
        with tempfile.TemporaryDirectory(prefix="agent-shell-detect-") as scratch:
            here = Path(scratch)
            for entry in entries:
                nested = "/" in entry and not entry.startswith(("tests/", "test/"))
                if entry.endswith("/") or nested or ".." in entry.split("/"):
                    continue
                (here / entry).parent.mkdir(parents=True, exist_ok=True)
                (here / entry).touch()
            for name in ("Makefile", "package.json"):
                if name in entries:
                    (here / name).write_bytes(await self.files.read(name))
            return detect_test_command(here)

    def localize(self, path: str) -> str:
        """PATH with the remote root's absolute name (or its TRAMP name) replaced by
        the mirror's, so the host's names of project files are confined like
        relative ones; any other PATH unchanged (and judged as it is)."""
        for prefix in (self.target.tramp_name(self.root), self.root):
            if path == prefix:
                return str(self.mirror)
            if path.startswith(prefix.rstrip("/") + "/"):
                return str(self.mirror / path[len(prefix.rstrip("/")) + 1 :])
        return path

    def describe(self) -> dict[str, object]:
        """What ``session/new`` tells the client of the remote side."""
        return {
            "tramp": self.target.tramp_name(self.root),
            "host": self.target.label,
            "root": self.root,
            "mirror": str(self.mirror),
            "sandbox": self.probe.label,
        }

    async def ready(self) -> None:
        """Connected for a turn: connect again when the last one dropped."""
        if self.connection.dropped is not None or not self.connection.alive():
            await self.connection.open()

    async def reconnect(self) -> None:
        """Connect again after a drop (the probe and root are those of the first time)."""
        await self.connection.open()

    async def aclose(self) -> None:
        await self.connection.close()


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
