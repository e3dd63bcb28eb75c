"""JSON-RPC 2.0 over ``POST /rpc``: envelopes, error codes, notifications, responses.

In-process through ASGITransport (the app's exceptions would surface here rather than
hide behind a 500). After every refusal the server must still answer ``ping``.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import pytest

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.errors import SessionBusy
from agent_shell_bridge.methods import core
from agent_shell_bridge.runtime import Runtime
from agent_shell_bridge.transport.rpc import Dispatcher, parse_message
from agent_shell_bridge.transport.server import ServerSettings, create_app
from agent_shell_bridge.wire import Params
from conftest import BridgeClient


async def post(client: BridgeClient, body: bytes | Any) -> httpx.Response:
    response = await client.post_rpc(body)
    assert "Traceback" not in response.text
    assert response.status_code < 500
    return response


async def error_of(client: BridgeClient, body: bytes | Any) -> dict[str, Any]:
    """POST ``body``; it must be answered 200 with a JSON-RPC error. Returns the envelope."""
    response = await post(client, body)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["jsonrpc"] == "2.0"
    assert set(reply) == {"jsonrpc", "id", "error"}
    assert isinstance(reply["error"]["code"], int)
    assert isinstance(reply["error"]["message"], str)
    assert (await client.result("ping"))["pong"] is True  # still alive
    return dict(reply)


# ------------------------------------------------------------------ -32700


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"nul",
        b"{'a': 1}",
        b"\xff\xfe{}",
        b'{"jsonrpc": "2.0",}',
        b"\x00",
        "中".encode()[:2],
    ],
)
async def test_body_that_is_not_json_is_parse_error(app_client: BridgeClient, body: bytes) -> None:
    reply = await error_of(app_client, body)
    assert reply["error"]["code"] == -32700
    assert reply["id"] is None


async def test_deeply_nested_json_is_parse_error(app_client: BridgeClient) -> None:
    reply = await error_of(app_client, b"[" * 200_000 + b"]" * 200_000)
    assert reply["error"]["code"] == -32700


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
async def test_regression_nan_and_infinity_were_accepted_as_json(
    app_client: BridgeClient, constant: bytes
) -> None:
    """Python's json module took NaN/Infinity, which JSON does not have.

    They got inside the bridge and broke later: a result holding NaN made the response
    renderer raise (HTTP 500), and one published to SSE was not JSON for the client.
    """
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": ' + constant + b"}}"
    reply = await error_of(app_client, body)
    assert reply["error"]["code"] == -32700
    with pytest.raises(Exception, match="Parse error"):
        parse_message(body)


async def test_regression_integer_of_5000_digits_was_a_500(app_client: BridgeClient) -> None:
    """json.loads raises a plain ValueError (Python's int-string limit) for huge integers.

    parse_message only caught JSONDecodeError, so the request crashed with HTTP 500.
    """
    body = b'{"jsonrpc": "2.0", "method": "ping", "id": ' + b"7" * 5000 + b"}"
    reply = await error_of(app_client, body)
    assert reply["error"]["code"] == -32700
    assert reply["id"] is None


# ------------------------------------------------------------------ -32600


async def test_batch_is_invalid_request(app_client: BridgeClient) -> None:
    reply = await error_of(app_client, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert reply["error"]["code"] == -32600
    assert reply["id"] is None


@pytest.mark.parametrize("body", [[], 1, "ping", None, True])
async def test_json_that_is_not_an_object_is_invalid_request(
    app_client: BridgeClient, body: Any
) -> None:
    assert (await error_of(app_client, body))["error"]["code"] == -32600


@pytest.mark.parametrize("version", [None, "1.0", "2", 2.0, 2, ["2.0"]])
async def test_wrong_jsonrpc_version_is_invalid_request_with_the_id(
    app_client: BridgeClient, version: Any
) -> None:
    message: dict[str, Any] = {"id": 7, "method": "ping"}
    if version is not None:
        message["jsonrpc"] = version
    reply = await error_of(app_client, message)
    assert reply["error"]["code"] == -32600
    assert reply["id"] == 7


@pytest.mark.parametrize("rid", [True, False, 1.5, 1.0, -0.5, 1e300, {}, {"a": 1}, [], [1], ["x"]])
async def test_bad_id_type_is_invalid_request_with_null_id(
    app_client: BridgeClient, rid: Any
) -> None:
    """Ids are strings or integers: booleans, floats, objects and arrays are refused."""
    reply = await error_of(app_client, {"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert reply["error"]["code"] == -32600
    assert reply["id"] is None


@pytest.mark.parametrize("params", [[], [1, 2], "x", 3, True, 0.5])
async def test_non_object_params_is_invalid_request(app_client: BridgeClient, params: Any) -> None:
    reply = await error_of(
        app_client, {"jsonrpc": "2.0", "id": "p", "method": "ping", "params": params}
    )
    assert reply["error"]["code"] == -32600
    assert reply["id"] == "p"


@pytest.mark.parametrize("method", ["", 1, None, True, [], {"m": 1}])
async def test_method_that_is_not_a_name_is_invalid_request(
    app_client: BridgeClient, method: Any
) -> None:
    reply = await error_of(app_client, {"jsonrpc": "2.0", "id": 3, "method": method})
    assert reply["error"]["code"] == -32600
    assert reply["id"] == 3


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 4},  # neither method nor result nor error
        {"jsonrpc": "2.0", "id": 4, "result": 1, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 4, "error": "not an object"},
        {"jsonrpc": "2.0", "result": 1},  # a response needs an id
    ],
)
async def test_malformed_response_is_invalid_request(
    app_client: BridgeClient, message: dict[str, Any]
) -> None:
    assert (await error_of(app_client, message))["error"]["code"] == -32600


# ------------------------------------------------------------------ -32601/2


@pytest.mark.parametrize("rid", [1, 0, -5, 2**53 + 1, "abc", "", "请求-1"])
async def test_unknown_method_is_method_not_found_with_the_same_id(
    app_client: BridgeClient, rid: int | str
) -> None:
    reply = await error_of(app_client, {"jsonrpc": "2.0", "id": rid, "method": "no/such"})
    assert reply["error"]["code"] == -32601
    assert reply["id"] == rid
    assert type(reply["id"]) is type(rid)


async def test_invalid_params_is_32602_with_data(app_client: BridgeClient) -> None:
    reply = await error_of(
        app_client,
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "debug/emit",
            "params": {"messages": "x", "count": 0},
        },
    )
    assert reply["id"] == 9
    error = reply["error"]
    assert error["code"] == -32602
    locations = {problem["loc"] for problem in error["data"]}
    assert locations == {"messages", "count"}
    assert all(isinstance(problem["msg"], str) for problem in error["data"])


async def test_invalid_params_never_echo_the_input(app_client: BridgeClient) -> None:
    secret = "sk-" + secrets.token_hex(8)
    reply = await error_of(
        app_client,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "initialize",
            "params": {"model": {"context_window": secret}},
        },
    )
    assert reply["error"]["code"] == -32602
    assert secret not in json.dumps(reply)


async def test_missing_and_null_params_mean_no_params(app_client: BridgeClient) -> None:
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"ignored": [1, 2]}},
    ):
        response = await post(app_client, message)
        assert response.json()["result"]["pong"] is True


# --------------------------------------------------------- notifications


async def test_notification_gets_202_and_no_body(app_client: BridgeClient) -> None:
    response = await post(app_client, {"jsonrpc": "2.0", "method": "ping"})
    assert response.status_code == 202
    assert response.content == b""


async def test_notification_runs_its_method(app_client: BridgeClient, runtime: Runtime) -> None:
    before = runtime.hub.last_id
    response = await post(
        app_client,
        {"jsonrpc": "2.0", "method": "debug/emit", "params": {"messages": [{"n": 1}], "count": 3}},
    )
    assert response.status_code == 202
    assert runtime.hub.last_id == before + 3


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "no/such"},
        {"jsonrpc": "2.0", "method": "debug/emit", "params": {"messages": []}},
    ],
)
async def test_failing_notification_still_gets_202_and_no_body(
    app_client: BridgeClient, message: dict[str, Any]
) -> None:
    response = await post(app_client, message)
    assert response.status_code == 202
    assert response.content == b""


# ---------------------------------------------------------------- responses


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": "b999", "result": {"ok": True}},
        {"jsonrpc": "2.0", "id": 12345, "result": None},
        {"jsonrpc": "2.0", "id": "b1", "error": {"code": -32005, "message": "失败"}},
    ],
)
async def test_response_to_unknown_id_gets_202(
    app_client: BridgeClient, message: dict[str, Any]
) -> None:
    response = await post(app_client, message)
    assert response.status_code == 202
    assert response.content == b""
    assert (await app_client.result("ping"))["pong"] is True


# ---------------------------------------------------------- internal errors


class _Echo(Params):
    text: str


class _Empty(Params):
    pass


async def test_internal_error_is_32603_without_details() -> None:
    """An unexpected exception in a handler reaches the client as a bare -32603."""
    dispatcher: Dispatcher[Runtime] = Dispatcher()
    core.register(dispatcher)

    @dispatcher.method("test/boom", _Empty)
    async def boom(rt: Runtime, p: _Empty) -> None:
        raise RuntimeError("secret 内部 detail in /home/user/.key")

    @dispatcher.method("test/busy", _Empty)
    async def busy(rt: Runtime, p: _Empty) -> None:
        raise SessionBusy("会话忙", data={"sessionId": "s1"})

    rt = Runtime(config=BridgeConfig(), dispatcher=dispatcher)
    settings = ServerSettings(token="t" * 32, port=40_000)
    async with BridgeClient(
        transport=httpx.ASGITransport(app=create_app(settings, rt)),
        base_url="http://127.0.0.1:40000",
        headers={"Authorization": "Bearer " + "t" * 32},
    ) as client:
        reply = await error_of(client, {"jsonrpc": "2.0", "id": 5, "method": "test/boom"})
        assert reply["error"] == {"code": -32603, "message": "Internal error (see the bridge log)"}
        assert "secret" not in json.dumps(reply)
        reply = await error_of(client, {"jsonrpc": "2.0", "id": 6, "method": "test/busy"})
        assert reply["id"] == 6
        assert reply["error"] == {"code": -32002, "message": "会话忙", "data": {"sessionId": "s1"}}
        response = await post(client, {"jsonrpc": "2.0", "method": "test/boom"})
        assert (response.status_code, response.content) == (202, b"")
    await rt.aclose()


async def test_a_lazy_area_loads_with_its_first_call_once_and_is_listed_before() -> None:
    """Declared names are listed and served; the area's loader runs once, on first use."""
    loads: list[str] = []

    def load_echo(d: Dispatcher[Runtime]) -> None:
        loads.append("echo")

        @d.method("test/echo", _Echo)
        async def echo(rt: Runtime, p: _Echo) -> str:
            return p.text

        @d.method("test/echo2", _Echo)
        async def echo2(rt: Runtime, p: _Echo) -> str:
            return p.text * 2

    def load_broken(d: Dispatcher[Runtime]) -> None:
        loads.append("broken")  # declares test/gone but never registers it

    dispatcher: Dispatcher[Runtime] = Dispatcher()
    core.register(dispatcher)  # ping: the helpers check the server still answers
    dispatcher.lazy(["test/echo", "test/echo2"], load_echo)
    dispatcher.lazy(["test/gone"], load_broken)
    with pytest.raises(ValueError, match="twice"):
        dispatcher.lazy(["test/echo"], load_echo)
    ours = lambda: [n for n in dispatcher.names if n.startswith("test/")]  # noqa: E731
    assert ours() == ["test/echo", "test/echo2", "test/gone"]
    assert loads == []
    rt = Runtime(config=BridgeConfig(), dispatcher=dispatcher)
    settings = ServerSettings(token="t" * 32, port=40_000)
    async with BridgeClient(
        transport=httpx.ASGITransport(app=create_app(settings, rt)),
        base_url="http://127.0.0.1:40000",
        headers={"Authorization": "Bearer " + "t" * 32},
    ) as client:
        reply = await error_of(
            client, {"jsonrpc": "2.0", "id": 1, "method": "test/echo", "params": {"text": 3}}
        )
        assert reply["error"]["code"] == -32602  # validated by the model the loader brought
        for rid, method, want in ((2, "test/echo", "中文"), (3, "test/echo2", "中文中文")):
            body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"text": "中文"}}
            response = await post(client, body)
            assert response.json()["result"] == want
        assert loads == ["echo"]
        reply = await error_of(client, {"jsonrpc": "2.0", "id": 4, "method": "test/gone"})
        assert reply["error"]["code"] == -32601
        reply = await error_of(client, {"jsonrpc": "2.0", "id": 5, "method": "test/gone"})
        assert reply["error"]["code"] == -32601
        assert loads == ["echo", "broken"]
    assert ours() == ["test/echo", "test/echo2"]
    await rt.aclose()


async def test_responses_are_utf8_json_with_chinese_unescaped_or_escaped_equally(
    app_client: BridgeClient,
) -> None:
    reply = await error_of(app_client, {"jsonrpc": "2.0", "id": "编号", "method": "不存在"})
    assert reply["id"] == "编号"
    assert "不存在" in reply["error"]["message"]


async def test_a_lazy_area_that_fails_to_load_says_so_at_every_call_until_it_loads() -> None:
    """A failed import is an internal error each time (never "method not found"), and
    what it registered before failing does not block the next attempt."""
    attempts: list[int] = []

    def load_flaky(d: Dispatcher[Runtime]) -> None:
        attempts.append(len(attempts))

        @d.method("test/first", _Echo)
        async def first(rt: Runtime, p: _Echo) -> str:
            return p.text

        if len(attempts) < 3:
            raise ImportError("模块缺失")

        @d.method("test/second", _Echo)
        async def second(rt: Runtime, p: _Echo) -> str:
            return p.text * 2

    dispatcher: Dispatcher[Runtime] = Dispatcher()
    core.register(dispatcher)
    dispatcher.lazy(["test/first", "test/second"], load_flaky)
    rt = Runtime(config=BridgeConfig(), dispatcher=dispatcher)
    settings = ServerSettings(token="t" * 32, port=40_000)
    async with BridgeClient(
        transport=httpx.ASGITransport(app=create_app(settings, rt)),
        base_url="http://127.0.0.1:40000",
        headers={"Authorization": "Bearer " + "t" * 32},
    ) as client:
        for rid, method in ((1, "test/second"), (2, "test/first")):
            body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"text": "字"}}
            reply = await error_of(client, body)
            assert reply["error"]["code"] == -32603
        body = {"jsonrpc": "2.0", "id": 3, "method": "test/second", "params": {"text": "字"}}
        assert (await post(client, body)).json()["result"] == "字字"
        assert attempts == [0, 1, 2]
        assert sorted(n for n in dispatcher.names if n.startswith("test/")) == [
            "test/first",
            "test/second",
        ]
    await rt.aclose()
