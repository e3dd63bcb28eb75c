"""The gate on a real ``agent-shell-bridge serve``, with hand-written HTTP on a socket.

httpx always sends one well-formed Host; a browser under DNS rebinding, or a hostile
local process, sends what it likes. These requests go byte for byte as written, and
the bridge must still answer ``ping`` after each.
"""

from __future__ import annotations

import json
import select
import socket

import pytest

from conftest import BridgeProcess, RawResponse, read_raw_response

LIMIT = 8 * 1024 * 1024
PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


def request(
    bridge: BridgeProcess,
    headers: list[str],
    body: bytes = PING,
    *,
    version: str = "HTTP/1.1",
    target: str = "POST /rpc",
) -> RawResponse:
    head = "\r\n".join([f"{target} {version}", *headers, f"Content-Length: {len(body)}", "", ""])
    return bridge.raw_request(head.encode("latin-1") + body)


def host(bridge: BridgeProcess) -> str:
    return f"Host: 127.0.0.1:{bridge.port}"


def auth(bridge: BridgeProcess) -> str:
    return f"Authorization: Bearer {bridge.token}"


def assert_refused(response: RawResponse, status: int, code: int) -> None:
    assert response.status == status, response
    assert b"Traceback" not in response.body
    body = response.json()
    assert body == {"jsonrpc": "2.0", "id": None, "error": body["error"]}
    assert body["error"]["code"] == code


def assert_alive(bridge: BridgeProcess) -> None:
    response = request(bridge, [host(bridge), auth(bridge)])
    assert response.status == 200
    assert response.json()["result"]["pong"] is True


def test_well_formed_request_is_served(shared_bridge: BridgeProcess) -> None:
    assert_alive(shared_bridge)


def test_missing_token_and_wrong_token_are_401(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    assert_refused(request(bridge, [host(bridge)]), 401, -32040)
    assert_refused(request(bridge, [host(bridge), "Authorization: Bearer x"]), 401, -32040)
    prefix = f"Authorization: Bearer {bridge.token[:-1]}"
    assert_refused(request(bridge, [host(bridge), prefix]), 401, -32040)
    assert_alive(bridge)


@pytest.mark.parametrize(
    "value", ["evil.com:{port}", "127.0.0.1:{other}", "localhost", "attacker.test", "[::1]:{port}"]
)
def test_rebinding_host_is_403(shared_bridge: BridgeProcess, value: str) -> None:
    bridge = shared_bridge
    header = "Host: " + value.format(port=bridge.port, other=bridge.port + 1)
    assert_refused(request(bridge, [header, auth(bridge)]), 403, -32041)
    assert_alive(bridge)


def test_localhost_host_is_accepted(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    response = request(bridge, [f"Host: localhost:{bridge.port}", auth(bridge)])
    assert response.status == 200
    assert response.json()["result"]["pong"] is True


def test_missing_host_is_refused(shared_bridge: BridgeProcess) -> None:
    """HTTP/1.0 may omit Host and gets our 403; HTTP/1.1 without one is a 400 from h11."""
    bridge = shared_bridge
    assert_refused(request(bridge, [auth(bridge)], version="HTTP/1.0"), 403, -32041)
    assert request(bridge, [auth(bridge)]).status in (400, 403)
    assert_alive(bridge)


def test_repeated_authorization_is_403(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    for second in (auth(bridge), "Authorization: Bearer x"):
        assert_refused(request(bridge, [host(bridge), auth(bridge), second]), 403, -32041)
        assert_refused(request(bridge, [host(bridge), second, auth(bridge)]), 403, -32041)
    assert_alive(bridge)


def test_repeated_host_is_refused(shared_bridge: BridgeProcess) -> None:
    """h11 already answers 400 here; the gate's own 403 is covered in-process."""
    bridge = shared_bridge
    for second in (host(bridge), "Host: evil.com"):
        response = request(bridge, [host(bridge), second, auth(bridge)])
        assert response.status in (400, 403), response
        assert b"pong" not in response.body
    assert_alive(bridge)


@pytest.mark.parametrize("origin", ["https://evil.com", "null", "http://127.0.0.1:{port}"])
def test_origin_is_403(shared_bridge: BridgeProcess, origin: str) -> None:
    bridge = shared_bridge
    header = "Origin: " + origin.format(port=bridge.port)
    assert_refused(request(bridge, [host(bridge), auth(bridge), header]), 403, -32041)


def test_event_stream_is_gated(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    events = "GET /events"
    assert_refused(request(bridge, [host(bridge)], b"", target=events), 401, -32040)
    assert_refused(
        request(bridge, ["Host: evil.com", auth(bridge)], b"", target=events), 403, -32041
    )


def test_content_length_over_8_mib_is_413_before_the_body_is_sent(
    shared_bridge: BridgeProcess,
) -> None:
    bridge = shared_bridge
    head = (
        f"POST /rpc HTTP/1.1\r\n{host(bridge)}\r\n{auth(bridge)}\r\n"
        f"Content-Length: {LIMIT + 1}\r\n\r\n"
    )
    response = bridge.raw_request(head.encode())  # no body follows: the answer must not wait
    assert_refused(response, 413, -32042)
    assert_alive(bridge)


def test_body_of_exactly_8_mib_is_read(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    body = PING + b" " * (LIMIT - len(PING))
    response = request(bridge, [host(bridge), auth(bridge)], body)
    assert response.status == 200
    assert response.json()["result"]["pong"] is True


def send_chunked(bridge: BridgeProcess, chunks: int, chunk_size: int) -> RawResponse:
    """Stream a chunked body, stopping early once the server has answered."""
    head = (
        f"POST /rpc HTTP/1.1\r\n{host(bridge)}\r\n{auth(bridge)}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = f"{chunk_size:x}\r\n".encode() + b" " * chunk_size + b"\r\n"
    with socket.create_connection(("127.0.0.1", bridge.port), timeout=10) as sock:
        sock.sendall(head.encode())
        for _ in range(chunks):
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        else:
            sock.sendall(b"0\r\n\r\n")
        return read_raw_response(sock)


def test_chunked_body_over_8_mib_is_413(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    response = send_chunked(bridge, chunks=12, chunk_size=1024 * 1024)
    assert_refused(response, 413, -32042)
    assert_alive(bridge)


def test_small_chunked_body_is_served(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    head = (
        f"POST /rpc HTTP/1.1\r\n{host(bridge)}\r\n{auth(bridge)}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(PING), PING)
    response = bridge.raw_request(head.encode() + body)
    assert response.status == 200
    assert json.loads(response.body)["result"]["pong"] is True


def test_garbage_request_line_does_not_hurt_the_bridge(shared_bridge: BridgeProcess) -> None:
    bridge = shared_bridge
    with socket.create_connection(("127.0.0.1", bridge.port), timeout=5) as sock:
        sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello?\r\n\r\n")
        sock.recv(65536)  # whatever h11 says, or nothing
    assert_alive(bridge)
