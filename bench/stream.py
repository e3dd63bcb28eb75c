"""End-to-end streaming: a long reply from the model into a real shell buffer.

The scripted model (in this process) answers with 208,000 characters of mixed
Chinese and ASCII in 20,000 SSE deltas, the shape a DeepSeek-style provider sends a
long answer in. A batch Emacs (see ``agent-shell-stream-bench.el``) measures, in
the same run:

* the direct consumer: curl reading the model's SSE, ``json-parse-string`` per
  event, an insert at a marker (what gptel does) -- the baseline;
* agent-shell: ``agent-shell-send`` in a real ``*agent-shell: NAME*`` buffer until
  the last character is in it, through a real bridge process;
* the same with megabytes of history already in the shell buffer.

Batch Emacs does no redisplay, so those figures cover the Lisp side. One more run
uses an interactive Emacs in a tmux terminal, where redisplay runs as it does for a
user: a timer ticking every 10 ms measures how late it runs while the reply streams
into a displayed buffer -- about as long as a key typed meanwhile would wait.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from agent_shell_bridge.model.mock_script import MockScript, MockStep
from agent_shell_bridge.model.mock_server import MockServer

from .common import Figure, Scale, clean_env, emacs_args

__all__ = ["reply_chunks", "run"]

PREFIX = b"BENCH-JSON "
# A paragraph of about 200 characters, Chinese and ASCII, ending a line.
SENTENCE = (
    "流式输出要快，Emacs must not freeze while the answer streams in. 中文与 ASCII 混排。" * 3
)[:-1] + "\n"


def reply_chunks(chars: int, deltas: int) -> list[str]:
    """``deltas`` pieces of mixed text adding up to exactly ``chars`` characters."""
    text = (SENTENCE * (chars // len(SENTENCE) + 1))[:chars]
    base, extra = divmod(chars, deltas)
    pieces: list[str] = []
    pos = 0
    for i in range(deltas):
        size = base + (1 if i < extra else 0)
        pieces.append(text[pos : pos + size])
        pos += size
    return pieces


def _step(pieces: list[str]) -> MockStep:
    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def sse(obj: dict[str, object]) -> str:
        return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"

    # Serialised here, once: the mock then only encodes each event, so its own cost
    # before the first byte stays small and the first-character figure shows ours.
    raw: list[str] = [sse(chunk({"role": "assistant", "content": ""}))]
    raw += [sse(chunk({"content": p})) for p in pieces]
    raw.append(sse(chunk({}, "stop")))
    raw.append("data: [DONE]\n\n")
    return MockStep.model_validate({"raw_chunks": raw})


def _project(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "README.md").write_text("bench\n", encoding="utf-8")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=directory, check=True)
    subprocess.run([*git, "add", "-A"], cwd=directory, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=directory, check=True)
    return directory


async def _interactive(
    emacs: str, api_base: str, root: Path, chars: int, work: Path, env: dict[str, str]
) -> dict[str, dict[str, float]]:
    """Run ``agent-shell-stream-bench-interactive`` in a terminal Emacs under tmux."""
    if shutil.which("tmux") is None:
        raise RuntimeError("tmux is needed for the interactive run (make system-deps)")
    out = work / "interactive.json"
    fresh = await asyncio.to_thread(_project, work / "project-interactive")
    form = (
        f"(agent-shell-stream-bench-interactive {json.dumps(api_base)}"
        f" '({json.dumps(str(fresh) + '/')}) {chars} {json.dumps(str(out))})"
    )
    command = shlex.join(
        emacs_args(emacs, "agent-shell-stream-bench.el", _settings(work), form, terminal=True)
    )
    socket = f"agent-shell-bench-{os.getpid()}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    env = {**env, "TERM": "xterm-256color"}
    # When Emacs exits, the pane's shell signals the channel the bench waits on.
    signal = shlex.join([*tmux, "wait-for", "-S", "bench-done"])
    await asyncio.to_thread(
        subprocess.run,
        [*tmux, "new-session", "-d", "-x", "160", "-y", "48", f"{command}; {signal}"],
        env=env,
        cwd=root,
        check=True,
    )
    try:
        waiter = await asyncio.create_subprocess_exec(*tmux, "wait-for", "bench-done")
        try:
            async with asyncio.timeout(330):
                await waiter.wait()
        except TimeoutError:
            waiter.kill()
            await waiter.wait()
        if not out.exists():
            raise RuntimeError("the interactive Emacs wrote no result")
        data: dict[str, dict[str, float]] = json.loads(out.read_text(encoding="utf-8"))
    finally:
        await asyncio.to_thread(
            subprocess.run, [*tmux, "kill-server"], capture_output=True, check=False
        )
    if "error" in data:
        raise RuntimeError(f"the interactive run failed: {data['error']}")
    return data


def _settings(work: Path) -> str:
    """The bench Emacs's memory directory, and a window no reply comes near."""
    memory = json.dumps(str(work / "memory"))
    return f"(setq agent-shell-memory-dir {memory} agent-shell-context-window 10000000)"


async def run(scale: Scale, work: Path) -> list[Figure]:
    if shutil.which("curl") is None:
        raise RuntimeError("curl is needed for the direct consumer (make system-deps)")
    emacs = os.environ.get("BENCH_EMACS", "emacs")
    chars, deltas, reps = scale.stream_chars, scale.stream_deltas, scale.stream_reps
    step = _step(reply_chunks(chars, deltas))
    # Warm-up (two), then direct, empty and history per rep; spares for safety.
    mock = MockServer(MockScript(steps=[step] * (3 * reps + 6)))
    # One project (hence one session and one shell buffer) per measured reply.
    projects = [
        await asyncio.to_thread(_project, work / f"project-{i}") for i in range(2 * reps + 1)
    ]
    project = projects[0]
    home = work / "home"
    home.mkdir()
    await mock.start()
    try:
        form = (
            f"(agent-shell-stream-bench-batch {json.dumps(mock.api_base)}"
            f" '({' '.join(json.dumps(str(p) + '/') for p in projects)})"
            f" {chars} {scale.emacs_history_bytes} {reps})"
        )
        env = clean_env(
            HOME=str(home),
            AGENT_SHELL_API_KEY="sk-bench",
            AGENT_SHELL_MODEL="mock-model",
            AGENT_SHELL_TEST_BRIDGE=str(Path(sys.executable).parent / "agent-shell-bridge"),
        )
        process = await asyncio.create_subprocess_exec(
            *emacs_args(emacs, "agent-shell-stream-bench.el", _settings(work), form),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=project,
            env=env,
        )
        out, err = await process.communicate()
        lag = await _interactive(emacs, mock.api_base, projects[-1], chars, work, env)
    finally:
        await mock.stop()
    lines = [line for line in out.splitlines() if line.startswith(PREFIX)]
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"emacs failed ({process.returncode}): {err.decode(errors='replace')}")
    data = json.loads(lines[-1][len(PREFIX) :])
    mib = scale.emacs_history_bytes / 1024**2
    shape = {"chars": chars, "deltas": deltas, "runs": reps}
    # Emacs's own work on the stream (filter and dispatch), and its longest single
    # stretch: how long a key typed meanwhile could wait.
    busy = {
        f"{who}_{what}_ms": round(data[f"{who}_{what}"] * 1000, 2)
        for who in ("direct", "empty", "history")
        for what in ("busy", "longest")
    }
    return [
        Figure(
            key="stream_input_lag_p99",
            title="Stream: how late a 10 ms timer runs (p99), interactive Emacs",
            unit="ms",
            value=lag["shell"]["lag_p99_ms"],
            baseline=lag["direct"]["lag_p99_ms"],
            baseline_label="the same while curl + json-parse-string streams the reply",
            better="lower",
            details={**shape, "runs": 1, "shell": lag["shell"], "direct": lag["direct"]},
        ),
        Figure(
            key="stream_end_to_end",
            title="Stream: long reply to its last character in the shell buffer",
            unit="s",
            value=data["empty_total"],
            baseline=data["direct_total"],
            baseline_label="curl + json-parse-string + insert, in the same Emacs",
            better="lower",
            details={**shape, **busy, "runs_s": data["runs"]},
        ),
        Figure(
            key="stream_end_to_end_history",
            title=f"Stream: the same with {mib:g} MiB of history in the buffer",
            unit="s",
            value=data["history_total"],
            baseline=data["empty_total"],
            baseline_label="same reply into an empty shell buffer",
            better="lower",
            details={**shape, "history_chars": data["history_chars"], "runs_s": data["runs"]},
        ),
        Figure(
            key="stream_first_char",
            title="Stream: time to the first character",
            unit="s",
            value=data["empty_first"],
            baseline=data["direct_first"],
            baseline_label="curl + json-parse-string + insert, in the same Emacs",
            better="lower",
            details=shape,
        ),
    ]
