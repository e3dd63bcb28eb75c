"""symbol_search without Emacs: ripgrep in the bridge, stopped once it has enough."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_rig import make_project, payload_of, running_rig, tool_messages


def _search(symbol: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "symbol_search", "arguments": {"symbol": symbol}}]}


async def test_symbol_search_shows_fifty_and_says_there_were_more(
    serve_app: Any, tmp_path: Path
) -> None:
    files = {
        f"pkg/m{n:03d}.py": f"# 模块 {n}\nvalue = render_widget({n})  # 调用\nrender_widget_x = 1\n"
        for n in range(80)
    }
    files["one.py"] = "def only_once():\n    return '唯一'\n"
    root = make_project(tmp_path / "proj", files)
    steps = [_search("render_widget"), _search("only_once"), {"text": "done"}]
    async with running_rig(serve_app, root, steps) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "find render_widget 找")
        assert turn.end["stopReason"] == "end_turn", turn.end
        many = payload_of(tool_messages(rig.requests[1])[-1])
        one = payload_of(tool_messages(rig.requests[2])[-1])
    assert many["backend"] == "ripgrep" and many["truncated"] is True
    matches = many["matches"]
    assert len(matches) == 50
    assert len({m["path"] for m in matches}) == 50  # one line a file: the longer name is not it
    for m in matches:
        n = int(m["path"][len("pkg/m") : -len(".py")])
        assert m == {
            "path": f"pkg/m{n:03d}.py",
            "line": 2,
            "text": f"value = render_widget({n})  # 调用",
        }
    assert one["matches"] == [{"path": "one.py", "line": 1, "text": "def only_once():"}]
    assert "truncated" not in one
