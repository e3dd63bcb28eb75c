"""Background jobs: ``run_command`` with ``background``, ``job_output``, ``job_kill``.

Real bridge under uvicorn on 127.0.0.1, real HTTP + SSE client, real subprocesses
(inside bubblewrap where the machine has it) in a temporary git project; only the
model is scripted. The project's ``make test`` is the job: it prints a numbered
tick every few milliseconds, serves a token on a free loopback port and keeps a
child process; ``make check`` is the next command: it waits (with a deadline) until
the job has ticked three more times, then fetches the token from the job's server.
No step of the test sleeps: each waits for a condition.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from agent_rig import AgentRig, make_project, payload_of, running_rig, tool_messages
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

GONE_S = 15.0

JOB = """\
import os, socket, subprocess, sys, threading, time
os.makedirs(".job", exist_ok=True)
token = open("token.txt").read().strip()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", sys.argv[1]])
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
def serve():
    while True:
        conn, _ = server.accept()
        conn.sendall(token.encode())
        conn.close()
threading.Thread(target=serve, daemon=True).start()
tmp = ".job/tmp-" + os.urandom(6).hex()  # several jobs may run at once
def put(name, value):
    with open(tmp, "w") as fh:
        fh.write(str(value))
    os.replace(tmp, ".job/" + name)
put("port", server.getsockname()[1])
n = 0
while True:
    n += 1
    print(f"tick {n} 心跳", flush=True)
    put("count", n)
    time.sleep(0.01)
"""

PROBE = """\
import os, socket, sys, time
def read(name, default=""):
    try:
        return open(name).read().strip() or default
    except OSError:
        return default
seen = int(read(".job/seen", "0"))
deadline = time.monotonic() + 20
while int(read(".job/count", "0")) < seen + 3:
    if time.monotonic() > deadline:
        sys.exit("PROBE the job never ticked")
    time.sleep(0.02)
count = int(read(".job/count"))
with open(".job/seen", "w") as fh:
    fh.write(str(count))
try:
    with socket.create_connection(("127.0.0.1", int(read(".job/port"))), timeout=5) as conn:
        print("PROBE got", conn.recv(100).decode())
except OSError as exc:
    print("PROBE unreachable", exc)
"""


def _project(tmp_path: Path) -> tuple[Path, str]:
    marker = "jobmark-" + secrets.token_hex(6)
    makefile = f"test:\n\tpython3 job.py {marker}\ncheck:\n\tpython3 probe.py\n"
    root = make_project(
        tmp_path / "proj",
        {"Makefile": makefile, "job.py": JOB, "probe.py": PROBE, ".gitignore": ".job/\n"},
    )
    (root / "token.txt").write_text(secrets.token_hex(8), encoding="utf-8")
    return root, marker


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


START = call("run_command", command="make -s test", background=True)
CHECK = call("run_command", command="make -s check")


def _marked(marker: str) -> set[int]:
    """Live processes whose command line carries ``marker``."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.add(int(entry))
    return found


async def _gone(marker: str) -> None:
    deadline = time.monotonic() + GONE_S
    while left := _marked(marker):
        assert time.monotonic() < deadline, left
        await asyncio.sleep(0.05)  # polling /proc, within the deadline


async def _count(marker: str, least: int) -> None:
    """Wait until ``least`` marked processes run (the first call), or, once more ran,
    until they are down to ``least``."""
    deadline = time.monotonic() + GONE_S
    while len(_marked(marker)) != least:
        assert time.monotonic() < deadline, _marked(marker)
        await asyncio.sleep(0.05)  # polling /proc, within the deadline


def _ticks(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"^tick (\d+) 心跳$", text, re.MULTILINE)]


def _job_events(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"]["job"] for m in messages if m.get("method") == "session/job"]


def _reach_from_outside(root: Path) -> bytes | None:
    port = int((root / ".job" / "port").read_text())
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            return conn.recv(100)
    except OSError:
        return None


async def _sandboxed(rig: AgentRig, sid: str) -> bool:
    del sid
    return bool(rig.runtime.sandbox.available)


async def test_a_job_runs_past_its_turn_is_read_in_pieces_and_killed_whole(
    serve_app: Any, tmp_path: Path
) -> None:
    root, marker = _project(tmp_path)
    token = (root / "token.txt").read_text()
    steps = [START, CHECK, call("job_output", job_id="job-1"), CHECK]
    steps += [call("job_output", job_id="job-1"), {"text": "running"}]
    steps += [call("job_kill", job_id="job-1"), call("job_output", job_id="job-1")]
    steps += [{"text": "killed"}]
    async with running_rig(serve_app, root, steps) as rig:
        sid = await rig.new_session()
        sandboxed = await _sandboxed(rig, sid)
        first = await rig.turn(sid, "start the server")
        results = [payload_of(m) for m in tool_messages(rig.requests[-1])]
        started, probe1, read1, probe2, read2 = results
        assert started["job_id"] == "job-1" and started["state"] == "running"
        assert started["sandbox"] == ("bubblewrap" if sandboxed else "none")
        # Each read gives what came since the last, from the first tick on, and the
        # job went on between them.
        one, two = _ticks(read1["output"]), _ticks(read2["output"])
        assert one[0] == 1 and one == list(range(1, len(one) + 1)), read1
        assert two and two[0] == one[-1] + 1 and two == list(range(two[0], two[-1] + 1)), read2
        assert read1["running"] is True and read2["exit_code"] is None
        # The next command of the session reaches the job's server.
        assert f"PROBE got {token}" in probe1["stdout"], probe1
        assert f"PROBE got {token}" in probe2["stdout"], probe2
        outside = _reach_from_outside(root)
        if sandboxed:
            assert first.permission_requests == []  # unasked, as in the foreground
            assert "reachable by this session's later sandboxed commands" in started["network"]
            assert outside != token.encode()  # nothing outside the session gets in
        else:
            assert started["network"].startswith("No sandbox")
            assert outside == token.encode()
            # Asked about as in the foreground, the question says it keeps running.
            asked = first.permission_requests[0]
            assert asked["note"].startswith("As a background job: it goes on running"), asked
        # The turn is over; the job and its child still run.
        await _count(marker, 2)
        events = _job_events(first.messages)
        assert [e["state"] for e in events] == ["running"]
        assert events[0]["command"] == "make -s test" and events[0]["id"] == "job-1"
        # Each start and read is an entry of the org log, in the file too.
        titles = [e["title"] for e in first.log_entries()]
        assert titles.count("job_output job-1") == 2, titles
        assert "run_command make -s test (background)" in titles, titles
        log_file = rig.runtime.sessions[sid].reporter.writer.path
        assert "job_output job-1" in log_file.read_text(encoding="utf-8")

        second = await rig.turn(sid, "stop it")
        killed, after = (payload_of(m) for m in tool_messages(rig.requests[-1])[-2:])
        assert killed == {"job_id": "job-1", "state": "killed", "exit_code": None}
        assert after["running"] is False and after["state"] == "killed"
        await _gone(marker)
        assert [e["state"] for e in _job_events(second.messages)] == ["killed"]
        assert "job_kill job-1" in [e["title"] for e in second.log_entries()]
        listed = await rig.client.result("session/jobs", {"sessionId": sid})
        assert [j["state"] for j in listed["jobs"]] == ["killed"]


async def test_a_job_ends_with_its_session_and_the_cap_is_said(
    serve_app: Any, tmp_path: Path
) -> None:
    root, marker = _project(tmp_path)
    denied = call("run_command", command="rm -rf ~", background=True)
    steps = [denied, *[START] * 5, call("job_output", job_id="job-9"), {"text": "five"}]
    async with running_rig(serve_app, root, steps) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "start five")
        wide, *ok, refused, unknown = tool_messages(rig.requests[-1])
        # The policy judges a job as it judges the command in the foreground.
        assert "status=denied" in wide.splitlines()[0] and "rm of '~'" in wide, wide
        assert [payload_of(m)["job_id"] for m in ok] == ["job-1", "job-2", "job-3", "job-4"]
        assert "already runs 4 background jobs" in refused and "job_kill" in refused
        assert "no job 'job-9'" in unknown
        await _count(marker, 8)  # four jobs, each with its child
        # The user ends one from the client; the session's end ends the rest.
        by_user = await rig.client.result("session/kill_job", {"sessionId": sid, "jobId": "job-1"})
        assert by_user["job"]["state"] == "killed"
        await _count(marker, 6)
        closed = await rig.client.result("session/close", {"sessionId": sid})
        assert closed == {"closed": True, "jobsKilled": 3}
        await _gone(marker)


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    left = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.add(pid)
    return left


async def test_after_kill_9_of_the_bridge_no_job_process_remains(
    start_bridge: Any, tmp_path: Path
) -> None:
    root, marker = _project(tmp_path)
    script = MockScript.model_validate({"steps": [START, {"text": "started"}]})
    async with MockServer(script) as model:
        bridge = start_bridge(
            env={
                "AGENT_SHELL_API_BASE": model.api_base,
                "AGENT_SHELL_API_KEY": "sk-jobs",
                "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
            }
        )
        async with bridge.client() as client:
            sid = (await client.result("session/new", {"cwd": str(root)}))["sessionId"]
            async with client.events(from_now=True) as stream:
                await client.result("session/prompt", {"sessionId": sid, "prompt": "go"})
                async with asyncio.timeout(30):
                    while True:
                        message = (await stream.next_event(timeout=30)).json()
                        if message.get("method") == "session/request_permission":
                            answer = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
                            await client.post_rpc(
                                {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                            )
                        update = (message.get("params") or {}).get("update") or {}
                        if update.get("sessionUpdate") == "turn_end":
                            break
        await _count(marker, 2)  # the job and its child, after its turn
        kids = _alive(_descendants(bridge.pid))
        assert _marked(marker) <= kids
        bridge.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(bridge.process.wait, 10)
        deadline = time.monotonic() + GONE_S
        while left := _alive(kids):
            assert time.monotonic() < deadline, left
            await asyncio.sleep(0.05)  # polling /proc, within the deadline
        assert _marked(marker) == set()
