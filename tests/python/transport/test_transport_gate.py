"""The gate in front of every route: token, Host, Origin, repeated headers, body size.

In-process through ASGITransport, so each refusal is checked against exactly the
headers the app receives. The same rules over real sockets are in test_serve_gate.py.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agent_shell_bridge.transport.server import ServerSettings
from conftest import BridgeClient

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
LIMIT = 8 * 1024 * 1024


def assert_refusal(response: httpx.Response, status: int, code: int) -> None:
    """A refusal is the given HTTP status carrying a JSON-RPC error object, no trace."""
    assert response.status_code == status, response.text
    assert "Traceback" not in response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert "result" not in body


async def assert_alive(client: BridgeClient) -> None:
    assert (await client.result("ping"))["pong"] is True


async def send(
    client: BridgeClient,
    headers: list[tuple[str, str | bytes]],
    *,
    drop: tuple[str, ...] = (),
    method: str = "POST",
    path: str = "/rpc",
    body: bytes | None = None,
) -> httpx.Response:
    """Send with exactly these extra headers (repeats kept) and without ``drop``."""
    request = client.build_request(
        method, path, content=json.dumps(PING).encode() if body is None else body
    )
    kept = [(k, v) for k, v in request.headers.multi_items() if k.lower() not in drop]
    raw = [
        (k.encode(), v if isinstance(v, bytes) else v.encode("latin-1")) for k, v in kept + headers
    ]
    request.headers = httpx.Headers(raw)
    return await client.send(request)


@pytest.fixture
async def anonymous(app: Any, server_settings: ServerSettings) -> AsyncIterator[BridgeClient]:
    """A client with the right Host and no token."""
    async with BridgeClient(
        transport=httpx.ASGITransport(app=app), base_url=f"http://127.0.0.1:{server_settings.port}"
    ) as client:
        yield client


# ------------------------------------------------------------------- the token


async def test_valid_token_and_host_reach_the_method(app_client: BridgeClient) -> None:
    response = await app_client.post_rpc(PING)
    assert response.status_code == 200
    assert response.json()["result"]["pong"] is True


async def test_missing_token_is_401(anonymous: BridgeClient, app_client: BridgeClient) -> None:
    assert_refusal(await anonymous.post_rpc(PING), 401, -32040)
    await assert_alive(app_client)


@pytest.mark.parametrize(
    "value",
    [
        "Bearer wrong",
        "Bearer ",
        "Bearer",
        "",
        "Basic dXNlcjpwYXNz",
        "{token}",  # the token without the scheme
        "Bearer  {token}",
        "Bearer {token} ",
        "Bearer {token}x",
        "Bearer {prefix}",  # a prefix of the token must not pass
    ],
)
async def test_wrong_token_is_401(
    anonymous: BridgeClient, app_client: BridgeClient, server_settings: ServerSettings, value: str
) -> None:
    token = server_settings.token
    header = value.format(token=token, prefix=token[:-1])
    response = await anonymous.post_rpc(PING, headers={"Authorization": header})
    assert_refusal(response, 401, -32040)
    await assert_alive(app_client)


async def test_token_is_compared_in_constant_time(
    app_client: BridgeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison goes through hmac.compare_digest, not ``==`` on strings."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    await assert_alive(app_client)
    response = await app_client.post_rpc(PING, headers={"Authorization": "Bearer nope"})
    assert_refusal(response, 401, -32040)
    assert [a for a, _ in calls] == [
        app_client.headers["authorization"].encode(),
        b"Bearer nope",
    ]


async def test_non_ascii_token_is_401(anonymous: BridgeClient) -> None:
    response = await send(anonymous, [("Authorization", "Bearer 令牌".encode())])
    assert_refusal(response, 401, -32040)


# -------------------------------------------------------------------- the Host


@pytest.mark.parametrize(
    "host",
    [
        "evil.com:{port}",
        "127.0.0.1:{other}",
        "localhost:{other}",
        "127.0.0.1",
        "localhost",
        "LOCALHOST:{port}",
        "127.0.0.1:{port}.evil.com",
        "evil.com:{port}@127.0.0.1:{port}",
        "[::1]:{port}",
        "0.0.0.0:{port}",
        "127.1:{port}",
        " 127.0.0.1:{port}",
        "",
    ],
)
async def test_host_other_than_loopback_and_our_port_is_403(
    app_client: BridgeClient, server_settings: ServerSettings, host: str
) -> None:
    """The DNS-rebinding guard: a page on evil.com resolving to 127.0.0.1 gets nothing."""
    port = server_settings.port
    value = host.format(port=port, other=port + 1)
    response = await send(app_client, [("Host", value)], drop=("host",))
    assert_refusal(response, 403, -32041)
    await assert_alive(app_client)


async def test_missing_host_is_403(app_client: BridgeClient) -> None:
    response = await send(app_client, [], drop=("host",))
    assert_refusal(response, 403, -32041)
    await assert_alive(app_client)


async def test_localhost_with_our_port_is_accepted(
    app_client: BridgeClient, server_settings: ServerSettings
) -> None:
    response = await send(
        app_client, [("Host", f"localhost:{server_settings.port}")], drop=("host",)
    )
    assert response.status_code == 200
    assert response.json()["result"]["pong"] is True


async def test_bad_host_is_refused_before_the_token_is_looked_at(
    anonymous: BridgeClient,
) -> None:
    """A rebinding page learns nothing about the token: 403 whatever it sends."""
    response = await send(anonymous, [("Host", "evil.com")], drop=("host",))
    assert_refusal(response, 403, -32041)


# ------------------------------------------------------------------ the Origin


@pytest.mark.parametrize(
    "origin",
    ["https://evil.com", "null", "http://127.0.0.1:{port}", "http://localhost:{port}", ""],
)
async def test_any_origin_is_403(
    app_client: BridgeClient, server_settings: ServerSettings, origin: str
) -> None:
    """Browsers send Origin; Emacs never does. Even our own origin is refused."""
    value = origin.format(port=server_settings.port)
    assert_refusal(await send(app_client, [("Origin", value)]), 403, -32041)
    await assert_alive(app_client)


async def test_origin_on_the_event_stream_is_403(app_client: BridgeClient) -> None:
    response = await send(
        app_client, [("Origin", "https://evil.com")], method="GET", path="/events"
    )
    assert_refusal(response, 403, -32041)


# ----------------------------------------------------------- repeated headers


async def test_repeated_authorization_is_403_even_when_both_are_right(
    app_client: BridgeClient,
) -> None:
    token = app_client.headers["authorization"]
    response = await send(app_client, [("Authorization", token)])
    assert_refusal(response, 403, -32041)
    await assert_alive(app_client)


async def test_repeated_authorization_wrong_then_right_is_refused(
    app_client: BridgeClient,
) -> None:
    token = app_client.headers["authorization"]
    response = await send(
        app_client,
        [("Authorization", "Bearer x"), ("Authorization", token)],
        drop=("authorization",),
    )
    assert response.status_code in (401, 403)
    assert_refusal(response, response.status_code, {401: -32040, 403: -32041}[response.status_code])


async def test_repeated_host_is_403_even_when_both_are_right(
    app_client: BridgeClient, server_settings: ServerSettings
) -> None:
    response = await send(app_client, [("Host", f"127.0.0.1:{server_settings.port}")])
    assert_refusal(response, 403, -32041)


async def test_repeated_host_good_then_evil_is_403(
    app_client: BridgeClient, server_settings: ServerSettings
) -> None:
    response = await send(app_client, [("Host", "evil.com")])
    assert_refusal(response, 403, -32041)


async def test_repeated_origin_is_403(app_client: BridgeClient) -> None:
    response = await send(app_client, [("Origin", "null"), ("Origin", "null")])
    assert_refusal(response, 403, -32041)


# -------------------------------------------------------------- body size


async def test_body_over_8_mib_with_content_length_is_413(app_client: BridgeClient) -> None:
    response = await app_client.post_rpc(b" " * (LIMIT + 1))
    assert_refusal(response, 413, -32042)
    await assert_alive(app_client)


async def test_body_of_exactly_8_mib_is_read(app_client: BridgeClient) -> None:
    """The limit is inclusive: 8 MiB of whitespace is read and is a parse error."""
    response = await app_client.post_rpc(b" " * LIMIT)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32700


async def test_padded_request_just_under_the_limit_is_served(app_client: BridgeClient) -> None:
    body = json.dumps(PING).encode()
    response = await app_client.post_rpc(body + b" " * (LIMIT - len(body)))
    assert response.status_code == 200
    assert response.json()["result"]["pong"] is True


async def test_chunked_body_over_8_mib_is_413(app_client: BridgeClient) -> None:
    """Without Content-Length the limit is enforced while the body streams in."""
    chunk = b" " * (1024 * 1024)

    async def body() -> AsyncIterator[bytes]:
        for _ in range(9):
            yield chunk

    response = await app_client.post("/rpc", content=body())
    assert "content-length" not in response.request.headers
    assert_refusal(response, 413, -32042)
    await assert_alive(app_client)


@pytest.mark.parametrize("value", ["abc", "1e3", "99999999999999999999999"])
async def test_unreadable_or_huge_content_length_is_413(
    app_client: BridgeClient, value: str
) -> None:
    response = await send(app_client, [("Content-Length", value)], drop=("content-length",))
    assert_refusal(response, 413, -32042)


# ----------------------------------------------------------------- routes


async def test_event_stream_needs_the_token(anonymous: BridgeClient) -> None:
    response = await anonymous.get("/events")
    assert_refusal(response, 401, -32040)


async def test_unknown_path_is_gated_before_routing(anonymous: BridgeClient) -> None:
    """Without the token even the existence of a route is not revealed."""
    assert_refusal(await anonymous.get("/nope"), 401, -32040)


async def test_unknown_path_with_token_is_404(app_client: BridgeClient) -> None:
    response = await app_client.get("/nope")
    assert response.status_code == 404
    assert "Traceback" not in response.text


async def test_get_rpc_is_405(app_client: BridgeClient) -> None:
    response = await app_client.get("/rpc")
    assert response.status_code == 405
    await assert_alive(app_client)


async def test_websocket_scopes_are_refused_before_routing() -> None:
    """Regression: the gate passed websocket scopes through unchecked."""
    from agent_shell_bridge.transport.server import GateMiddleware, ServerSettings

    reached: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    gate = GateMiddleware(inner, ServerSettings(token="t", port=1))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await gate({"type": "websocket", "headers": []}, receive, send)
    assert reached == []
    assert sent == [{"type": "websocket.close", "code": 1008}]
