"""Property: whatever body arrives at ``/rpc``, the answer is well-formed and never a 5xx.

One in-process app with the production method table (no ``debug/*``) serves every
example of a run, so state left behind by one body is seen by the next; the
function-scoped-fixture health check is suppressed on purpose for that reason.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_shell_bridge.errors import BridgeError
from agent_shell_bridge.transport.rpc import parse_message
from agent_shell_bridge.transport.server import ServerSettings, create_app
from conftest import BridgeClient, make_runtime

STANDARD_CODES = {-32700, -32600, -32601, -32602, -32603}
# Every method without debug/*; "shutdown" only sets a flag that nothing acts on here.
METHODS = ["initialize", "ping", "shutdown"]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8), children, max_size=4),
    ),
    max_leaves=12,
)
ids = st.one_of(st.integers(), st.text(max_size=10), json_values)
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.one_of(st.just("2.0"), json_values),
        "id": ids,
        "method": st.one_of(st.sampled_from(METHODS), st.text(max_size=15), json_values),
        "params": st.one_of(
            st.dictionaries(
                st.sampled_from(
                    ["protocolVersion", "clientInfo", "clientCapabilities", "model", "x"]
                ),
                json_values,
            ),
            json_values,
        ),
        "result": json_values,
        "error": st.one_of(
            st.fixed_dictionaries({"code": json_values, "message": json_values}), json_values
        ),
    },
)


def nested(depth: int, kind: str) -> bytes:
    if kind == "array":
        return b"[" * depth + b"]" * depth
    if kind == "object":
        return b'{"a":' * depth + b"1" + b"}" * depth
    inner = b'{"x":' * depth + b"0" + b"}" * depth
    return b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":' + inner + b"}}"


bodies = st.one_of(
    st.binary(max_size=256),
    st.text(max_size=64).map(str.encode),
    json_values.map(lambda v: json.dumps(v).encode()),
    envelopes.map(lambda v: json.dumps(v, ensure_ascii=False).encode()),
    st.builds(
        nested,
        st.integers(min_value=1, max_value=50_000),
        st.sampled_from(["array", "object", "params"]),
    ),
    st.builds(
        lambda head, tail: head + tail,
        envelopes.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=8),
    ),
)


@pytest.fixture
async def prod_client() -> AsyncIterator[BridgeClient]:
    rt = make_runtime(debug_methods=False)
    settings_ = ServerSettings(token="fuzz-token-" + "x" * 21, port=41_000)
    async with BridgeClient(
        transport=httpx.ASGITransport(app=create_app(settings_, rt)),
        base_url="http://127.0.0.1:41000",
        headers={"Authorization": f"Bearer {settings_.token}"},
    ) as client:
        yield client
    await rt.aclose()


def check_reply(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.status_code == 202:
        assert response.content == b""
        return
    assert response.status_code == 200
    reply: dict[str, Any] = response.json()
    assert reply["jsonrpc"] == "2.0"
    assert ("result" in reply) != ("error" in reply)
    assert set(reply) <= {"jsonrpc", "id", "result", "error"}
    rid = reply["id"]
    assert rid is None or isinstance(rid, str) or (type(rid) is int)
    if "error" in reply:
        error = reply["error"]
        assert isinstance(error["code"], int) and isinstance(error["message"], str)
        assert error["code"] in STANDARD_CODES, error


@settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies)
async def test_any_body_gets_a_well_formed_answer(prod_client: BridgeClient, body: bytes) -> None:
    check_reply(await prod_client.post_rpc(body))
    alive = await prod_client.post_rpc({"jsonrpc": "2.0", "id": "alive", "method": "ping"})
    assert alive.json() == {
        "jsonrpc": "2.0",
        "id": "alive",
        "result": {"pong": True, "lastEventId": 0},
    }


@settings(max_examples=50, deadline=None, database=None)
@given(message=envelopes)
def test_parse_message_raises_only_bridge_errors(message: dict[str, Any]) -> None:
    """The parser itself: a message is accepted or refused with a typed error."""
    try:
        parse_message(json.dumps(message).encode())
    except BridgeError as exc:
        assert exc.code in (-32700, -32600)
