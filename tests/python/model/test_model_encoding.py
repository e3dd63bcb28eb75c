"""JsonCache: the history's JSON made once per message, the same text as json.dumps."""

from __future__ import annotations

import json

from agent_shell_bridge.model.encoding import JsonCache


def test_cache_gives_json_dumps_text_and_encodes_a_message_once() -> None:
    cache = JsonCache()
    history: list[dict[str, object]] = [{"role": "user", "content": "修复 “JSON”"}]
    for i in range(50):
        history.append({"role": "assistant", "content": f"第{i}步", "n": [i, None, True]})
        assert cache.array(history) == json.dumps(history, ensure_ascii=False)
        assert cache.chars(history) == len(json.dumps(history, ensure_ascii=False))
    first = cache.text(history[0])
    assert cache.text(history[0]) is first, "an unchanged message is not encoded again"
    # A replaced message (a new object) is encoded anew.
    history[0] = {**history[0], "content": "stub"}
    assert json.loads(cache.array(history))[0]["content"] == "stub"
    assert cache.chars([]) == len(json.dumps([]))


def test_cache_body_is_the_request_json() -> None:
    cache = JsonCache()
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "中"}]}
    assert json.loads(cache.body(body)) == body
    assert "中".encode() in cache.body(body)
    assert json.loads(cache.body({"messages": []})) == {"messages": []}


def test_cache_forgets_messages_no_request_holds() -> None:
    cache = JsonCache()
    for i in range(300):
        cache.array([{"i": i}])
    assert len(cache._texts) < 100
