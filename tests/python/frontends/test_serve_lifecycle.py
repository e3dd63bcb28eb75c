"""``agent-shell-bridge serve`` as Emacs runs it: ready line, loopback only, and exit.

Each test starts its own real subprocess. Exits are measured with
``proc.wait(timeout=...)`` from the moment of the trigger, with an event stream open
so that a stream that never ends cannot hold the process up unnoticed.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_shell_bridge import __version__
from agent_shell_bridge.frontends.serve import listening_socket
from conftest import BridgeProcess

EXIT_DEADLINE_S = 2.0
StartBridge = Callable[..., BridgeProcess]


@contextmanager
def open_event_stream(bridge: BridgeProcess) -> Iterator[socket.socket]:
    """A raw ``GET /events`` whose response headers have arrived."""
    with socket.create_connection(("127.0.0.1", bridge.port), timeout=5) as sock:
        sock.sendall(
            b"GET /events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n\r\n"
            % (bridge.port, bridge.token.encode())
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            assert chunk, "stream closed before its headers"
            head += chunk
        assert head.startswith(b"HTTP/1.1 200"), head
        yield sock


def read_to_eof(sock: socket.socket, timeout: float = EXIT_DEADLINE_S) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def post(bridge: BridgeProcess, message: dict[str, object]) -> dict[str, object]:
    body = json.dumps(message).encode()
    reply = bridge.raw_request(
        b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (bridge.port, bridge.token.encode(), len(body), body)
    )
    assert reply.status == 200, reply
    result: dict[str, object] = reply.json()
    return result


def rest_of_stdout(bridge: BridgeProcess) -> bytes:
    assert bridge.process.stdout is not None
    return bridge.process.stdout.read()


# ------------------------------------------------------------------ the ready line


def test_ready_line_is_one_json_line_with_the_documented_keys(start_bridge: StartBridge) -> None:
    bridge = start_bridge()
    line = bridge.ready_line
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    ready = json.loads(line)
    assert set(ready) == {"ready", "port", "token", "pid", "version"}
    assert ready["ready"] is True
    assert isinstance(ready["port"], int) and 1024 <= ready["port"] <= 65535
    assert ready["pid"] == bridge.process.pid
    assert ready["version"] == __version__
    assert re.fullmatch(r"[A-Za-z0-9_-]{32,}", ready["token"])
    # The socket listens before the line is printed: the first request needs no retry.
    reply = post(bridge, {"jsonrpc": "2.0", "id": "r", "method": "ping"})
    assert reply == {"jsonrpc": "2.0", "id": "r", "result": {"pong": True, "lastEventId": 0}}
    # Nothing else ever goes to stdout, not even while shutting down: the log is on stderr.
    bridge.close_stdin()
    assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0
    assert rest_of_stdout(bridge) == b""
    assert "shutting down" in bridge.stderr_text()


def test_each_launch_has_its_own_token_and_port(
    start_bridge: StartBridge, shared_bridge: BridgeProcess
) -> None:
    bridge = start_bridge()
    assert bridge.token != shared_bridge.token
    assert bridge.port != shared_bridge.port
    # One bridge's token is worthless at the other.
    refused = bridge.raw_request(
        b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
        b"Content-Length: 2\r\n\r\n{}" % (bridge.port, shared_bridge.token.encode())
    )
    assert refused.status == 401


# ----------------------------------------------------------------- exiting


def test_stdin_eof_ends_the_bridge_within_2_s(live_bridge: BridgeProcess) -> None:
    """Emacs dying closes the pipe; the bridge must not outlive it."""
    bridge = live_bridge
    with open_event_stream(bridge) as stream:
        bridge.close_stdin()
        assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0
        read_to_eof(stream)  # the event stream was ended, not left hanging


def test_sigterm_ends_the_bridge_within_2_s(start_bridge: StartBridge) -> None:
    bridge = start_bridge()
    with open_event_stream(bridge) as stream:
        bridge.process.send_signal(signal.SIGTERM)
        assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0
        read_to_eof(stream)
    assert "shutting down" in bridge.stderr_text()
    assert rest_of_stdout(bridge) == b""


def test_sigint_ends_the_bridge_within_2_s(start_bridge: StartBridge) -> None:
    bridge = start_bridge()
    with open_event_stream(bridge) as stream:
        bridge.process.send_signal(signal.SIGINT)
        assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0
        read_to_eof(stream)


def test_regression_sigterm_right_after_the_ready_line_skipped_the_shutdown(
    start_bridge: StartBridge,
) -> None:
    """The ready line was printed before any signal handler existed.

    A SIGTERM arriving before uvicorn installed its handlers took the default action:
    the bridge died at once (status -15) without closing the runtime, which is where
    child process groups are killed.
    """
    bridge = start_bridge()
    bridge.process.send_signal(signal.SIGTERM)
    assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0
    assert "shutting down" in bridge.stderr_text()


def test_shutdown_method_ends_the_bridge_within_2_s(start_bridge: StartBridge) -> None:
    bridge = start_bridge()
    with open_event_stream(bridge) as stream:
        reply = post(bridge, {"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
        assert reply == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
        assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0
        read_to_eof(stream)


async def test_shutdown_fails_pending_client_requests_with_client_gone(
    start_bridge: StartBridge,
) -> None:
    """A request waiting on Emacs is answered -32031 rather than left hanging."""
    bridge = start_bridge()
    async with bridge.client() as client, client.events() as stream:
        pending = asyncio.create_task(
            client.rpc("debug/client_request", {"method": "tool/call", "timeout_s": 60})
        )
        assert (await stream.next_event()).json()["method"] == "tool/call"
        assert await client.result("shutdown") == {"ok": True}
        reply = await asyncio.wait_for(pending, EXIT_DEADLINE_S)
        assert reply["error"]["code"] == -32031
    assert bridge.process.wait(timeout=EXIT_DEADLINE_S) == 0


# ----------------------------------------------------------- loopback only


def local_addresses() -> set[str]:
    """Addresses of this machine other than 127.0.0.1, IPv4 and IPv6."""
    found = {"127.0.0.2", "::1"}
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except socket.gaierror:
        infos = []
    found.update(str(info[4][0]) for info in infos)
    # The address of the default route, without sending anything.
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect((target, 9))
                found.add(probe.getsockname()[0])
        except OSError:
            pass
    found.discard("127.0.0.1")
    return found


def listening_sockets(port: int) -> list[tuple[str, str]]:
    """(table, local address) of every listening TCP socket on ``port`` (Linux /proc)."""
    rows = []
    for table in ("tcp", "tcp6"):
        path = Path("/proc/net") / table
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].rpartition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A = LISTEN
                rows.append((table, address))
    return rows


def test_only_127_0_0_1_is_bound(start_bridge: StartBridge) -> None:
    bridge = start_bridge(debug=False)
    # The only listening socket on the port is IPv4 127.0.0.1 (0100007F, little-endian hex).
    assert listening_sockets(bridge.port) == [("tcp", "0100007F")]
    others = local_addresses()
    assert "127.0.0.2" in others
    for address in sorted(others):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            with pytest.raises(OSError):
                sock.connect((address, bridge.port))
    # ...while 127.0.0.1 itself answers, without the debug methods in this mode.
    assert post(bridge, {"jsonrpc": "2.0", "id": 1, "method": "ping"})["id"] == 1
    reply = post(bridge, {"jsonrpc": "2.0", "id": 2, "method": "debug/emit", "params": {}})
    assert reply["error"] == {"code": -32601, "message": "Method not found: debug/emit"}


def test_the_listener_is_tcp_without_nagle() -> None:
    """Accepted connections inherit TCP_NODELAY, and asyncio sees a TCP socket (it
    sets the option itself only for those): a keep-alive client gets each response
    body at once instead of after the peer's delayed acknowledgement."""
    with listening_socket(0) as listener:
        assert listener.proto == socket.IPPROTO_TCP
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        with socket.create_connection(listener.getsockname()) as _client:
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_a_keep_alive_client_is_answered_on_one_connection(live_bridge: BridgeProcess) -> None:
    """Twenty requests on one kept-alive connection, each answered in full."""
    conn = http.client.HTTPConnection("127.0.0.1", live_bridge.port, timeout=10)
    headers = {"Authorization": f"Bearer {live_bridge.token}", "Content-Type": "application/json"}
    try:
        first_socket = None
        for n in range(20):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping", "params": {}})
            conn.request("POST", "/rpc", body=body, headers=headers)
            reply = conn.getresponse()
            assert reply.status == 200
            assert json.loads(reply.read())["result"]["pong"] is True
            first_socket = first_socket or conn.sock
            assert conn.sock is first_socket  # never reconnected
    finally:
        conn.close()
