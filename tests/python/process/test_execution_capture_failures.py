"""The output capture under stress, with a real bash child: a capture thread that
cannot start, a log file that stalls past the end of the command."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from agent_shell_bridge.process.capture import CaptureStartFailed, OutputPump
from agent_shell_bridge.process.runner import ProcessRunner


def marked_processes(mark: str) -> list[int]:
    """Live processes whose environment carries ``CAPTURE_TEST_MARK=mark``."""
    needle = f"CAPTURE_TEST_MARK={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def capture_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("agent-shell-")]


@pytest.mark.parametrize("failing", ["stdout", "stderr", "log"])
async def test_a_capture_thread_that_cannot_start_fails_the_call_cleanly(
    failing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As under a process limit ("can't start new thread"): the call raises a typed
    error instead of hanging, closes every descriptor, ends its threads, kills the
    child."""
    runner = ProcessRunner(tmp_path / "logs")
    mark = uuid.uuid4().hex
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name == f"agent-shell-{failing}":
            raise RuntimeError("can't start new thread")
        real_start(self)

    await asyncio.to_thread(lambda: None)  # the loop's executor thread exists before
    fds_before = sorted(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(threading.Thread, "start", start)
    run = runner.run_shell(
        "echo started; echo 错误 >&2; exec sleep 300",
        cwd=tmp_path,
        timeout_s=300,
        env={"CAPTURE_TEST_MARK": mark},
    )
    with pytest.raises(CaptureStartFailed, match=f"could not start the {failing} output"):
        await asyncio.wait_for(run, 60)  # a guard against a hang, not a timing check
    monkeypatch.undo()
    for thread in capture_threads():
        thread.join(30)
    assert capture_threads() == []
    assert sorted(os.listdir("/proc/self/fd")) == fds_before
    assert marked_processes(mark) == []


async def test_a_log_that_stalls_past_the_end_of_the_command_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log file is slow (an NFS home, a busy disk), and stalls once the command
    has written its last byte until the runner stops the readers: every byte still in
    the pipes is read all the same, so the tail ends with the last line and the log
    holds the whole output."""
    written = tmp_path / "written"  # made by bash once its last byte is in the pipe
    stopped = threading.Event()
    real_stop = OutputPump.stop
    real_write = OutputPump._write_all

    def stop(self: OutputPump) -> None:
        stopped.set()
        real_stop(self)

    def slow_write(self: OutputPump, data: memoryview) -> None:
        time.sleep(0.1)  # a slow disk: the readers' buffers stay full
        real_write(self, data)
        if written.exists() and not stopped.is_set():
            stopped.wait(120)  # the stall: nothing moves until the readers are told to stop

    monkeypatch.setattr(OutputPump, "stop", stop)
    monkeypatch.setattr(OutputPump, "_write_all", slow_write)
    runner = ProcessRunner(tmp_path / "logs")
    command = f"seq 1 700000; echo '最后一行 the end'; : > {written}"
    result = await asyncio.wait_for(runner.run_shell(command, cwd=tmp_path, timeout_s=300), 240)
    expected = "".join(f"{i}\n" for i in range(1, 700001)) + "最后一行 the end\n"
    assert len(expected) > 4_000_000
    lines = result.stdout.split("\n")
    assert lines[-2:] == ["700000", "最后一行 the end"]
    assert lines[0] == "1" and result.stderr == ""
    assert result.exit_code == 0 and not result.timed_out
    assert result.log_path is not None
    assert result.log_path.read_bytes() == expected.encode()
