"""Plans through the real transport: propose, edit, approve or reject, verify steps.

The model is scripted; the bridge runs on 127.0.0.1 and the test plays the client,
answering ``session/request_plan`` the way Emacs does (with the edited plan).
Verification commands run as real subprocesses in a temp git project.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import (
    AgentRig,
    EventStream,
    make_project,
    reject,
    running_rig,
    start_rig,
    tool_messages,
)
from agent_shell_bridge.agent.session.store import SessionStore
from agent_shell_bridge.agent.turn.plan import Plan, PlanStep, parse_plan_answer, plan_checklist

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

STEPS = [
    {"title": "读配置 read the config", "files": ["conf.py"], "expected": "known", "verify": None},
    {
        "title": "Fix add",
        "files": ["calc.py"],
        "expected": "add works",
        "verify": "echo '2 passed'",
    },
    {
        "title": "更新文档",
        "files": ["README.md"],
        "expected": "docs",
        "verify": "test -f README.md",
    },
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "proj",
        {"calc.py": "def add(a, b):\n    return a + b\n", "README.md": "# 演示\n"},
    )


def propose(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    args = {"goal": "修好 add", "steps": steps, "risks": ["可能破坏 API"], **extra}
    return {"tool_calls": [{"name": "propose_plan", "arguments": args, "id": "call_plan"}]}


def complete(step: int, call_id: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "complete_step", "arguments": {"step": step}, "id": call_id}]}


def plan_answerer(rig: AgentRig, answer: dict[str, Any] | None, seen: list[dict[str, Any]]) -> Any:
    """An on_message hook answering session/request_plan with ``answer`` (None: -32601)."""

    async def on_message(message: dict[str, Any], _stream: EventStream) -> None:
        if message.get("method") != "session/request_plan":
            return
        seen.append(message["params"])
        if answer is None:
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "session/request_plan is not handled"},
            }
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer}
        response = await rig.client.post_rpc(reply)
        assert response.status_code == 202

    return on_message


def result_of(request_body: dict[str, Any], index: int = -1) -> dict[str, Any]:
    """The JSON payload of a framed tool result the model received."""
    framed = tool_messages(request_body)[index]
    return json.loads(framed.split("\n", 1)[1].rsplit("\n", 1)[0])  # type: ignore[no-any-return]


def checkpoint(root: Path, sid: str) -> dict[str, Any]:
    return SessionStore(root).read(sid)


async def test_plan_edited_before_approval_is_followed_as_edited(
    serve_app: Any, project: Path
) -> None:
    """A step removed and two reordered: the model gets that plan, numbers follow it."""
    rig, stop = await start_rig(
        serve_app,
        project,
        [propose(STEPS), complete(1, "c1"), complete(2, "c2"), {"text": "完成"}],
    )
    # The user deletes step 1 and puts step 3 before step 2, editing a title.
    edited = {
        "goal": "修好 add",
        "steps": [dict(STEPS[2], title="先更新文档"), STEPS[1]],
        "risks": [],
    }
    seen: list[dict[str, Any]] = []
    try:
        sid = await rig.new_session()
        turn = await rig.turn(
            sid,
            "fix add and document it",
            on_message=plan_answerer(rig, {"outcome": "approved", "plan": edited}, seen),
        )
        assert turn.end["stopReason"] == "end_turn"
        # The request carried the proposal and the plan update came before it.
        assert [s["title"] for s in seen[0]["steps"]] == [s["title"] for s in STEPS]
        assert seen[0]["planId"].startswith("p")
        first_plan = turn.updates("plan")[0]
        assert [e["status"] for e in first_plan["entries"]] == ["pending"] * 3
        assert first_plan["entries"][0]["content"] == "读配置 read the config"

        proposal = result_of(rig.requests[1])
        assert proposal["outcome"] == "approved" and proposal["edited"] is True
        numbered = [(s["number"], s["title"]) for s in proposal["plan"]["steps"]]
        assert numbered == [(1, "先更新文档"), (2, "Fix add")]
        assert "Follow exactly this plan" in proposal["instruction"]

        # complete_step 1 verified the edited step 1 (the docs), not the proposal's.
        one = result_of(rig.requests[2])
        assert one["title"] == "先更新文档" and one["status"] == "completed"
        assert one["verification"]["command"] == "test -f README.md"
        two = result_of(rig.requests[3])
        assert two["title"] == "Fix add" and two["status"] == "completed"
        assert two["progress"] == "2/2 steps done"

        last = turn.updates("plan")[-1]
        assert [s["title"] for s in last["steps"]] == ["先更新文档", "Fix add"]
        assert [e["status"] for e in last["entries"]] == ["completed", "completed"]
        assert last["outcome"] == "done"

        stored = checkpoint(project, sid)["plan"]
        assert [s["title"] for s in stored["steps"]] == ["先更新文档", "Fix add"]
        assert stored["edited"] is True

        log = Path(checkpoint(project, sid)["log_path"]).read_text(encoding="utf-8")
        assert "Plan: 修好 add" in log
        assert "- [ ] 1. 读配置 read the config" in log  # the proposal as a checklist
        assert "- [ ] 1. 先更新文档" in log  # the edited plan
        assert "- [X] 2. Fix add: done" in log
        assert ":OUTCOME: approved" in log
    finally:
        await stop()


async def test_plan_step_with_failing_verification_is_failed(serve_app: Any, project: Path) -> None:
    """Exit 1 fails a step; so does exit 0 with "1 failed" in the output."""
    steps = [
        {"title": "exit one", "verify": "false"},
        {"title": "exit zero but a failure", "verify": "echo '== 1 failed, 3 passed in 0.1s =='"},
        {"title": "passes", "verify": "echo '3 passed in 0.1s'"},
    ]
    async with running_rig(
        serve_app,
        project,
        [propose(steps), complete(1, "c1"), complete(2, "c2"), complete(3, "c3"), {"text": "ok"}],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(
            sid, "do it", on_message=plan_answerer(rig, {"outcome": "approved"}, [])
        )
        results = [result_of(rig.requests[i]) for i in (2, 3, 4)]
        assert [r["status"] for r in results] == ["failed", "failed", "completed"]
        assert "not done" in results[0]["error"]
        assert results[1]["verification"]["exit_code"] == 0
        assert results[1]["verification"]["summary"]["failed"] == 1
        # The tool call itself is reported failed, and the plan update says so.
        statuses = {u["toolCallId"]: u["status"] for u in turn.tool_results()}
        assert statuses["c1"] == statuses["c2"] == "failed" and statuses["c3"] == "completed"
        last = turn.updates("plan")[-1]
        assert [e["status"] for e in last["entries"]] == ["failed", "failed", "completed"]
        assert last["outcome"] == "approved"  # not done: two steps failed
        log = Path(checkpoint(project, sid)["log_path"]).read_text(encoding="utf-8")
        assert "- [ ] 2. exit zero but a failure: FAILED" in log


async def test_plan_verification_goes_through_the_policy(serve_app: Any, project: Path) -> None:
    """deny fails the step without running; confirm asks the user like run_command."""
    steps = [
        {"title": "dangerous", "verify": "rm -rf /"},
        {"title": "needs approval", "verify": 'python3 -c \'open("made.txt", "w")\''},
    ]
    async with running_rig(
        serve_app,
        project,
        [propose(steps), complete(1, "c1"), complete(2, "c2"), {"text": "ok"}],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(
            sid,
            "do it",
            answer=reject("不要运行"),
            on_message=plan_answerer(rig, {"outcome": "approved"}, []),
        )
        denied, refused = result_of(rig.requests[2]), result_of(rig.requests[3])
        assert denied["status"] == "failed" and denied["verification"]["status"] == "denied"
        assert refused["status"] == "failed" and refused["verification"]["status"] == "rejected"
        assert "不要运行" in refused["verification"]["detail"]
        # Only the second verification asked; it was the same permission request.
        assert len(turn.permission_requests) == 1
        assert turn.permission_requests[0]["toolCall"]["title"].startswith("run_test python3")
        assert not (project / "made.txt").exists()


async def test_plan_rejected_is_not_followed(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app, project, [propose(STEPS), complete(1, "c1"), {"text": "好的"}]
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(
            sid,
            "do it",
            on_message=plan_answerer(rig, {"outcome": "rejected", "reason": "太冒险了"}, []),
        )
        rejected = result_of(rig.requests[1])
        assert rejected["outcome"] == "rejected" and rejected["user_reason"] == "太冒险了"
        assert "Do not carry it out" in rejected["instruction"]
        assert "not approved" in tool_messages(rig.requests[2])[-1]
        assert turn.updates("plan")[-1]["outcome"] == "rejected"
        assert checkpoint(project, sid)["plan"]["outcome"] == "rejected"
        log = Path(checkpoint(project, sid)["log_path"]).read_text(encoding="utf-8")
        assert "REJECTED" in log and "Rejected: 太冒险了" in log


@pytest.mark.parametrize("approve", [True, False])
async def test_plan_without_a_plan_editor_asks_permission(
    serve_app: Any, project: Path, approve: bool
) -> None:
    """A client answering -32601 is asked through session/request_permission instead."""
    async with running_rig(serve_app, project, [propose(STEPS), {"text": "ok"}]) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(
            sid,
            "do it",
            answer=(lambda _p: {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
            if approve
            else reject("not approved (--approve none)"),
            on_message=plan_answerer(rig, None, []),
        )
        assert len(turn.permission_requests) == 1
        assert "- [ ] 2. Fix add" in turn.permission_requests[0]["diff"]
        outcome = result_of(rig.requests[1])
        if approve:
            assert outcome["outcome"] == "approved" and outcome["edited"] is False
        else:
            assert outcome["outcome"] == "rejected"
            assert "--approve writes" in outcome["user_reason"]


async def test_plan_tools_are_refused_in_ask_mode(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, [propose(STEPS), {"text": "ok"}]) as rig:
        sid = await rig.new_session(mode="ask")
        await rig.turn(sid, "plan it")
        offered = {t["function"]["name"] for t in rig.requests[0]["tools"]}
        assert "propose_plan" not in offered and "complete_step" not in offered
        assert "ask mode" in tool_messages(rig.requests[1])[-1]


def test_plan_answer_malformed_counts_as_rejection() -> None:
    proposed = Plan("p1", "目标", [PlanStep("一")])
    for bad in (None, [], {"outcome": "maybe"}, {"outcome": "approved", "plan": {"goal": "g"}}):
        answer = parse_plan_answer(bad, proposed)
        assert not answer.approved and "malformed" in answer.reason
    ok = parse_plan_answer(
        {"outcome": "approved", "plan": {"goal": " g ", "steps": [{"title": "二", "verify": " "}]}},
        proposed,
    )
    assert ok.approved and ok.plan is not None
    assert ok.plan.steps[0].verify is None and ok.plan.goal == "g"


def test_plan_checklist_cannot_fake_org_structure() -> None:
    plan = Plan("p1", "goal\n* fake heading", [PlanStep("step\n#+END_SRC", verify="a\nb")])
    text = plan_checklist(plan)
    assert all(not line.startswith(("*", "#")) for line in text.splitlines())
    assert "- [ ] 1. step #+END_SRC" in text
