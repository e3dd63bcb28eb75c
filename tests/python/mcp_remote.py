"""The fixture MCP server as a real subprocess serving HTTP on 127.0.0.1.

``mcp_fixture_server.py RECORD --http|--sse`` binds port 0 itself and prints the port
on its first stdout line, so the test learns it without a race; the server process
group is killed when the ``with`` block ends (or earlier, by ``Remote.kill``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conftest import read_line_with_deadline

FIXTURE = str(Path(__file__).with_name("mcp_fixture_server.py"))


@dataclass
class Remote:
    process: subprocess.Popen[bytes]
    port: int
    transport: str
    record: Path

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def kill(self) -> None:
        """End the server for good (the parent holding the socket and its child)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def headers_seen(self) -> list[str]:
        if not self.record.exists():
            return []
        lines = self.record.read_text(encoding="utf-8").splitlines()
        return [line.removeprefix("header ") for line in lines if line.startswith("header ")]


@contextlib.contextmanager
def remote_fixture(record: Path, transport: str = "http") -> Iterator[Remote]:
    process = subprocess.Popen(
        [sys.executable, FIXTURE, str(record), f"--{transport}"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        first = read_line_with_deadline(process.stdout, 60).decode()
        assert first.strip().isdigit(), f"fixture did not print its port: {first!r}"
        yield Remote(process, int(first), transport, record)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound by us, never listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
    finally:
        sock.close()
