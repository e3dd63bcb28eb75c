"""MCP servers through ``agent-shell-bridge run``, against real third-party servers.

``mcp-server-time`` and ``mcp-server-git`` (PyPI, test dependencies) run as real
processes; only the model is scripted. Each test's servers carry a unique marker in
their environment, so a scan of /proc finds any process a run left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_rig import make_project
from conftest import bridge_command

BIN = Path(sys.executable).parent
TIME_SERVER = str(BIN / "mcp-server-time")
GIT_SERVER = str(BIN / "mcp-server-git")
CHINESE = "提交：中文消息 ✓ 第二行"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_SHELL_", "DEEPSEEK"))}
    env.update(
        {
            "AGENT_SHELL_API_KEY": "sk-mcp-secret",
            "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


class MockModel:
    def __init__(self, api_base: str) -> None:
        self.api_base = api_base

    def requests(self) -> list[dict[str, Any]]:
        base = self.api_base.rsplit("/v1", 1)[0]
        response = httpx.get(f"{base}/_mock/requests", timeout=10, trust_env=False)
        response.raise_for_status()
        records: list[dict[str, Any]] = response.json()
        return [r for r in records if "messages" in (r.get("body") or {})]


@pytest.fixture
def mock_model(mock_model_process: Any) -> Any:
    """Factory starting the scripted model; returns a handle on its request log."""

    def start(steps: list[dict[str, Any]]) -> MockModel:
        return MockModel(mock_model_process(steps))

    return start


@pytest.fixture
def marker() -> str:
    return "mcp-test-" + uuid.uuid4().hex


def _processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries ``marker``."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _config(tmp_path: Path, servers: dict[str, Any], marker: str) -> Path:
    for server in servers.values():
        server.setdefault("env", {})["AGENT_SHELL_TEST_MARK"] = marker
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, ensure_ascii=False), encoding="utf-8")
    return path


def _run(
    tmp_path: Path, root: Path, model: MockModel, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*bridge_command(), "run", "--root", str(root), "--api-base", model.api_base, *extra],
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _log(root: Path) -> str:
    return next((root / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")


def _tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["body"]["messages"] if m.get("role") == "tool"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj", {"README.md": "hello\n"})
    for key, value in (("user.name", "t"), ("user.email", "t@example.invalid")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    return root


def test_read_only_tool_runs_unasked_and_its_output_reaches_the_model(
    tmp_path: Path, project: Path, mock_model: Any, marker: str
) -> None:
    # The server leaves a grandchild that would outlive it unless its group is ended.
    launch = f"sleep 300 & exec {TIME_SERVER} --local-timezone Asia/Shanghai"
    config = _config(tmp_path, {"time": {"command": "sh", "args": ["-c", launch]}}, marker)
    model = mock_model(
        [
            {
                "tool_calls": [
                    {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
                ]
            },
            {"text": "东京时间已知。"},
        ]
    )
    # No --approve and no terminal: anything that asked would be rejected.
    result = _run(tmp_path, project, model, "--mcp-config", str(config), "现在几点")
    assert result.returncode == 0, result.stderr
    assert "东京时间已知。" in result.stdout
    first, second = model.requests()[:2]
    offered = {t["function"]["name"]: t["function"] for t in first["body"]["tools"]}
    tool = offered["mcp__time__get_current_time"]
    assert "Get current time in a specific timezone" in tool["description"]
    assert "timezone" in tool["parameters"]["properties"]
    assert "mcp__time__convert_time" in offered
    # The server's answer is in the tool result the model got next, framed.
    [answer] = _tool_messages(second)
    assert "status=completed" in answer
    assert "Asia/Tokyo" in answer and "+09:00" in answer
    log = _log(project)
    assert ":SERVER: time" in log and ":TOOL: get_current_time" in log
    assert ":DECISION: allow" in log
    assert _processes_with(marker) == []


GIT_STEPS = [
    {"tool_calls": [{"name": "mcp__git__git_add", "arguments": {"files": ["new.txt"]}}]},
    {"tool_calls": [{"name": "mcp__git__git_commit", "arguments": {"message": CHINESE}}]},
    {"text": "done"},
]


def _git_steps(repo: Path) -> list[dict[str, Any]]:
    steps = json.loads(json.dumps(GIT_STEPS))
    for step in steps[:2]:
        step["tool_calls"][0]["arguments"]["repo_path"] = str(repo)
    return steps


def _git_config(tmp_path: Path, repo: Path, marker: str) -> Path:
    return _config(
        tmp_path, {"git": {"command": GIT_SERVER, "args": ["--repository", str(repo)]}}, marker
    )


def _commits(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--format=%B%x00"], cwd=repo, capture_output=True, check=True
    ).stdout.decode("utf-8")
    return [c.strip() for c in out.split("\x00") if c.strip()]


def test_write_tool_asks_and_does_not_run_without_approval(
    tmp_path: Path, project: Path, mock_model: Any, marker: str
) -> None:
    (project / "new.txt").write_text("新文件\n", encoding="utf-8")
    model = mock_model(_git_steps(project))
    config = _git_config(tmp_path, project, marker)
    result = _run(tmp_path, project, model, "--mcp-config", str(config), "commit it")
    assert result.returncode == 0, result.stderr
    assert _commits(project) == ["init"]
    requests = model.requests()
    rejected = _tool_messages(requests[2])[-1]
    assert "status=rejected" in rejected
    log = _log(project)
    assert "REJECTED [" in log and ":TOOL: git_commit" in log and ":SERVER: git" in log
    assert CHINESE in log  # the arguments were shown to the user
    assert _processes_with(marker) == []


def test_write_tool_runs_with_approval_and_chinese_round_trips(
    tmp_path: Path, project: Path, mock_model: Any, marker: str
) -> None:
    (project / "new.txt").write_text("新文件\n", encoding="utf-8")
    model = mock_model(_git_steps(project))
    config = _git_config(tmp_path, project, marker)
    result = _run(
        tmp_path, project, model, "--mcp-config", str(config), "--approve", "writes", "提交"
    )
    assert result.returncode == 0, result.stderr
    assert _commits(project) == [CHINESE, "init"]
    answer = _tool_messages(model.requests()[2])[-1]
    assert "status=completed" in answer and "committed successfully" in answer
    log = _log(project)
    assert ":DECISION: approved" in log
    assert _processes_with(marker) == []


def test_a_server_that_cannot_start_is_named_while_another_works(
    tmp_path: Path, project: Path, mock_model: Any, marker: str
) -> None:
    config = _config(
        tmp_path,
        {
            "ghost": {"command": "agent-shell-no-such-mcp-server"},
            "time": {"command": TIME_SERVER},
        },
        marker,
    )
    model = mock_model(
        [
            {
                "tool_calls": [
                    {"name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}}
                ]
            },
            {"text": "ok"},
        ]
    )
    result = _run(tmp_path, project, model, "--mcp-config", str(config), "time?")
    assert result.returncode == 0, result.stderr
    assert "MCP server ghost could not start" in result.stderr
    assert "agent-shell-no-such-mcp-server" in result.stderr
    assert "status=completed" in _tool_messages(model.requests()[1])[0]
    offered = {t["function"]["name"] for t in model.requests()[0]["body"]["tools"]}
    assert not any(name.startswith("mcp__ghost") for name in offered)
    log = _log(project)
    assert "MCP: 1 of 2 server(s) connected" in log and "ghost: command not found" in log


def test_no_server_survives_a_sigkilled_bridge(
    tmp_path: Path, project: Path, mock_model: Any, marker: str
) -> None:
    config = _config(
        tmp_path,
        {
            "time": {"command": TIME_SERVER},
            # A launcher's child (like npx's node) that ignores its stdin closing.
            "git": {"command": "sh", "args": ["-c", f"sleep 300 & exec {GIT_SERVER}"]},
        },
        marker,
    )
    model = mock_model([{"text": "slow", "delay_ms": 60_000}])
    bridge = subprocess.Popen(
        [
            *bridge_command(),
            *("run", "--root", str(project), "--api-base", model.api_base),
            *("--mcp-config", str(config), "wait"),
        ],
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The first model request is sent after every server has connected.
        _wait_until(lambda: len(model.requests()) >= 1, 60, "the first model request")
        # Two servers, each a supervisor and the server itself, and the sleep.
        assert len(_processes_with(marker)) >= 5
        bridge.send_signal(signal.SIGKILL)
        bridge.wait(timeout=10)
        _wait_until(lambda: _processes_with(marker) == [], 10, "the servers to die")
    finally:
        if bridge.poll() is None:
            bridge.kill()
            bridge.wait()


def test_a_missing_config_file_is_reported_and_nothing_runs(
    tmp_path: Path, project: Path, mock_model: Any
) -> None:
    model = mock_model([{"text": "x"}])
    result = _run(tmp_path, project, model, "--mcp-config", str(tmp_path / "nope.json"), "task")
    assert result.returncode == 2
    assert "cannot read MCP configuration" in result.stderr and "nope.json" in result.stderr
    assert "Traceback" not in result.stderr
    assert model.requests() == []
