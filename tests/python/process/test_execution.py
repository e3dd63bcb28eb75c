"""The process runner against real bash children: groups, limits, env, bounded output."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from agent_shell_bridge.process.runner import (
    ExecLimits,
    ProcessRunner,
    default_timeout,
    looks_like_credential,
    scrubbed_environment,
)


async def wait_until(predicate, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.01)


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


@pytest.fixture
def runner(tmp_path: Path) -> ProcessRunner:
    return ProcessRunner(tmp_path / "logs", secrets=["hunter2-secret-value"])


async def test_timeout_kills_the_whole_group(runner: ProcessRunner, tmp_path: Path) -> None:
    started = time.monotonic()
    result = await runner.run_shell(
        "echo $$; sleep 100 & sleep 100; wait", cwd=tmp_path, timeout_s=0.5
    )
    assert result.timed_out
    assert result.exit_code is None
    assert time.monotonic() - started < 10
    pgid = int(result.stdout.splitlines()[0])
    await wait_until(lambda: group_gone(pgid))


async def test_cancel_kills_the_group(runner: ProcessRunner, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(
        runner.run_shell(
            f"echo $$ > {pidfile}; sleep 100 & sleep 100; wait", cwd=tmp_path, timeout_s=60
        )
    )
    await wait_until(lambda: read_pid(pidfile) is not None)
    pgid = read_pid(pidfile)
    assert pgid is not None and not group_gone(pgid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    await wait_until(lambda: group_gone(pgid))


async def test_kill_all_ends_running_children(runner: ProcessRunner, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(
        runner.run_shell(f"echo $$ > {pidfile}; exec sleep 100", cwd=tmp_path, timeout_s=60)
    )
    await wait_until(lambda: read_pid(pidfile) is not None)
    pgid = read_pid(pidfile)
    assert pgid is not None
    await runner.kill_all()
    result = await asyncio.wait_for(task, 10)
    assert result.cancelled and result.exit_code is None
    await wait_until(lambda: group_gone(pgid))


async def test_background_child_holding_the_pipe_does_not_hang(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    result = await runner.run_shell("echo $$; sleep 100 & echo done", cwd=tmp_path, timeout_s=30)
    assert result.exit_code == 0 and not result.timed_out
    assert result.stdout.splitlines()[-1] == "done"
    await wait_until(lambda: group_gone(int(result.stdout.splitlines()[0])))


async def test_child_never_sees_a_secret(
    runner: ProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOO_API_KEY", "key-value-1")
    monkeypatch.setenv("GITHUB_TOKEN", "token-value-2")
    monkeypatch.setenv("db_password", "pw-value-3")
    monkeypatch.setenv("AWS_CREDENTIALS_FILE", "cred-value-4")
    monkeypatch.setenv("INNOCENT_NAME", "hunter2-secret-value")
    monkeypatch.setenv("KEEP_ME", "visible")
    result = await runner.run_shell("env", cwd=tmp_path, timeout_s=10, env={"EXTRA": "x"})
    for leaked in ("key-value-1", "token-value-2", "pw-value-3", "cred-value-4", "hunter2"):
        assert leaked not in result.stdout
    assert "KEEP_ME=visible" in result.stdout
    assert "EXTRA=x" in result.stdout
    assert result.log_path is not None
    assert b"hunter2" not in result.log_path.read_bytes()


# Made-up credentials in the shapes their issuers use (none of them is real).
CREDENTIAL_VALUES = {
    "DATABASE_URL": "postgres://app:s3cret-pw@db.internal:5432/app",
    "REDIS_URL": "redis://:hunter2@cache:6379/0",
    "GITHUB_PAT": "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
    "GH_INSTALL": "ghs_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa",
    "FINE": "github_pat_11AAAAAAA0" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTu",
    "GL": "glpat-" + "xY7zW3vU9tS1rQ5pO2nM",
    "SLACK_HOOK_AUTH": "xoxb-1234567890123-1234567890123-aBcDeFgHiJkLmNoPqRsTuVwX",
    "OPENAI": "sk-proj-" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7As9Df1Gh3",
    "ANTHROPIC": "sk-ant-api03-" + "Kq8Lw2Me4Nr6Ot8Pu0Qv2Rw4Sx6Ty8Uz0Va2Wb4Xc6Yd8Ze0Af2Bg4",
    "DEEPSEEK": "sk-" + "0123456789abcdef0123456789abcdef",
    "AWS_ID": "AKIAIOSFODNN7EXAMPLE",
    "GOOGLE": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "NPM": "npm_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
    "PYPI": "pypi-AgEIcHlwaS5vcmc" + "CJDk2ZmQ3YzA5LWQ4ZjEtNDc1Mi1hYjQ0LWVmMTI3ZjE5OWQ3ZgACKl",
    "HF": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH",
    "ID": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
    "DEPLOY": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
    "CURL_HEADER": "Authorization: Bearer abcDEF123ghiJKL456mnoPQR789",
    "INSIDE_TEXT": "clone with https://x-access-token:ghs_abc@github.com/o/r.git please",
}
# Values that only resemble one: paths, package names, words, a proxy without a password.
ORDINARY_VALUES = {
    "PATH": "/opt/sk-tools/bin:/home/u/.local/bin:/usr/bin",
    "TOOL_DIR": "/opt/sk-learn-toolkit-for-python-3/lib",
    "NAME": "sk-tools",
    "WORD": "sk-abcdefghijklmnopqrstuvwxyz",
    "npm_config_cache": "/home/u/.npm",
    "HF_HOME": "/home/u/.cache/huggingface",
    "http_proxy": "http://proxy.corp:3128",
    "REGISTRY": "https://registry.npmjs.org:443/@scope/pkg",
    "REMOTE": "git@github.com:owner/repo.git",
    "TZ": "Asia/Shanghai",
    "GREETING": "你好，世界 sk-",
    "LS_COLORS": "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35" * 20,
    "PASSAGE": "a passage",
}


def test_credential_shaped_values_are_recognised_whatever_the_name() -> None:
    for name, value in CREDENTIAL_VALUES.items():
        assert looks_like_credential(value), name
    for name, value in ORDINARY_VALUES.items():
        assert not looks_like_credential(value), name
    env = scrubbed_environment({**CREDENTIAL_VALUES, **ORDINARY_VALUES}, [])
    assert env == ORDINARY_VALUES


def test_scrubbing_by_value_stays_fast() -> None:
    """It runs for every child: a typical environment takes well under a millisecond."""
    base = {f"VAR_{i}": f"/usr/lib/x86_64-linux-gnu/pkg{i}:/opt/tool-{i}/bin" for i in range(80)}
    base.update(ORDINARY_VALUES)
    started = time.perf_counter()
    for _ in range(200):
        scrubbed_environment(base, ["known-secret"])
    per_child = (time.perf_counter() - started) / 200
    assert per_child < 2e-3, f"{per_child * 1e3:.2f} ms per environment"


async def test_a_child_never_sees_a_credential_under_an_innocent_name(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    result = await runner.run_shell(
        "env", cwd=tmp_path, timeout_s=10, env={**CREDENTIAL_VALUES, **ORDINARY_VALUES}
    )
    for name in CREDENTIAL_VALUES:
        assert f"{name}=" not in result.stdout, name
    for name, value in ORDINARY_VALUES.items():
        assert f"{name}={value}" in result.stdout, name


def test_scrubbed_environment_rules() -> None:
    env = scrubbed_environment(
        {"Api_Key": "1", "x_secret": "2", "PATH": "/bin", "URL": "https://u:s3cr3t@h", "A": ""},
        ["s3cr3t", ""],
    )
    assert env == {"PATH": "/bin", "A": ""}


async def test_stdin_is_dev_null_and_own_session(runner: ProcessRunner, tmp_path: Path) -> None:
    result = await runner.run_shell(
        "readlink /proc/self/fd/0; cat; ps -o pgid= -p $$; echo $$", cwd=tmp_path, timeout_s=10
    )
    lines = [ln.strip() for ln in result.stdout.splitlines()]
    assert lines[0] == "/dev/null"
    assert lines[1] == lines[2]


async def test_resource_limits_apply(tmp_path: Path) -> None:
    runner = ProcessRunner(
        tmp_path / "logs", limits=ExecLimits(cpu_seconds=7, file_size_bytes=1024 * 1024)
    )
    result = await runner.run_shell("ulimit -t; ulimit -f; ulimit -c", cwd=tmp_path, timeout_s=10)
    assert result.stdout.splitlines() == ["7", "1024", "0"]
    big = await runner.run_shell("head -c 2000000 /dev/zero > big.bin", cwd=tmp_path, timeout_s=10)
    assert big.exit_code != 0
    assert (tmp_path / "big.bin").stat().st_size <= 1024 * 1024


async def test_non_utf8_output_is_replaced(runner: ProcessRunner, tmp_path: Path) -> None:
    result = await runner.run_shell(r"printf 'ok \xff\xfe end\n' >&2", cwd=tmp_path, timeout_s=10)
    assert result.stderr == "ok \ufffd\ufffd end"
    assert result.log_path is not None
    assert result.log_path.read_bytes() == b"ok \xff\xfe end\n"


async def test_head_and_tail_with_full_log(runner: ProcessRunner, tmp_path: Path) -> None:
    result = await runner.run_shell("seq 1 1000", cwd=tmp_path, timeout_s=10)
    lines = result.stdout.splitlines()
    assert lines[:200] == [str(i) for i in range(1, 201)]
    assert lines[200] == "[... 700 lines omitted ...]"
    assert lines[201:] == [str(i) for i in range(901, 1001)]
    assert result.truncated and result.omitted_lines == 700
    assert result.log_path is not None
    expected = "".join(f"{i}\n" for i in range(1, 1001)).encode()
    assert result.log_path.read_bytes() == expected


async def test_short_output_is_not_truncated(runner: ProcessRunner, tmp_path: Path) -> None:
    result = await runner.run_shell("seq 1 300; echo err >&2", cwd=tmp_path, timeout_s=10)
    assert not result.truncated and result.omitted_lines == 0
    assert result.stdout.splitlines()[-1] == "300" and result.stderr == "err"


async def test_chinese_output_is_byte_exact(runner: ProcessRunner, tmp_path: Path) -> None:
    text = "中文输出：测试通过 ✓\n第二行\n"
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    result = await runner.run_argv(["cat", "in.txt"], cwd=tmp_path, timeout_s=10)
    assert result.stdout == text.rstrip("\n")
    assert result.log_path is not None
    assert result.log_path.read_bytes() == text.encode("utf-8")


async def test_run_argv_uses_no_shell(runner: ProcessRunner, tmp_path: Path) -> None:
    result = await runner.run_argv(["printf", "%s|%s", "$HOME", "a;b"], cwd=tmp_path, timeout_s=10)
    assert result.stdout == "$HOME|a;b"
    assert result.exit_code == 0


async def test_exit_code_and_duration(runner: ProcessRunner, tmp_path: Path) -> None:
    result = await runner.run_shell("exit 3", cwd=tmp_path, timeout_s=10)
    assert result.exit_code == 3 and result.duration_ms >= 0
    assert not result.timed_out and not result.cancelled


async def test_large_output_streams_to_disk(runner: ProcessRunner, tmp_path: Path) -> None:
    # Memory use is measured in `make bench` (output_rss); here: all bytes reach the
    # log and only the bounded head and tail are kept.
    size = 200_000_000
    line = "y" * 99
    result = await runner.run_shell(f"yes {line} | head -c {size}", cwd=tmp_path, timeout_s=60)
    assert result.exit_code == 0
    assert result.log_path is not None and result.log_path.stat().st_size == size
    assert result.omitted_lines == size // 100 - 300
    kept = result.stdout.split("\n")
    assert len(kept) == 301 and kept[200] == f"[... {result.omitted_lines} lines omitted ...]"


def test_default_timeouts() -> None:
    assert default_timeout("command") == 60
    assert default_timeout("test") == 180
    assert default_timeout("build") == 300


async def test_setsid_descendants_do_not_outlive_a_timeout(tmp_path: Path) -> None:
    """Regression: a child that left the process group with setsid survived the kill."""
    runner = ProcessRunner(tmp_path / "logs")
    pidfile = tmp_path / "pid"
    command = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' & wait"
    result = await runner.run_shell(command, cwd=tmp_path, timeout_s=1)
    assert result.timed_out
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 15  # PID 1 may reap orphans only now and then
    while _process_alive(pid):
        assert time.monotonic() < deadline, f"setsid child {pid} survived"
        await asyncio.sleep(0.05)


def _process_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_setsid_descendants_do_not_outlive_a_finished_command(tmp_path: Path) -> None:
    """A daemon detached from the group and the pipes is ended with its command."""
    runner = ProcessRunner(tmp_path / "logs")
    pidfile = tmp_path / "pid"
    command = (
        f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' < /dev/null > /dev/null 2>&1 & "
        f"while [ ! -s {pidfile} ]; do :; done; echo started"
    )
    result = await runner.run_shell(command, cwd=tmp_path, timeout_s=30)
    assert result.exit_code == 0 and "started" in result.stdout
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 15  # PID 1 may reap orphans only now and then
    while _process_alive(pid):
        assert time.monotonic() < deadline, f"detached child {pid} survived"
        await asyncio.sleep(0.05)


_RSS_CHILD = """
import asyncio, json, sys
from pathlib import Path
from agent_shell_bridge.process.runner import ProcessRunner

def kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

async def main(command, work):
    runner = ProcessRunner(Path(work) / "logs")
    before = kib("VmRSS")
    result = await runner.run_shell(command, cwd=Path(work), timeout_s=600)
    print(json.dumps({
        "growth_kib": kib("VmHWM") - before,
        "log_bytes": result.log_path.stat().st_size,
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "omitted": result.omitted_lines,
    }))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_memory_stays_bounded_whatever_the_lines(tmp_path: Path) -> None:
    """Both streams loud at once, one in short lines, the other in 50 KB lines and then
    one line of 48 MiB: the peak resident set of a fresh bridge process grows by far
    less than what was printed, and every byte reaches the log."""
    mib = 1024 * 1024
    command = (
        f"yes 'short line' | head -c {96 * mib} & "
        f"{{ yes \"$(head -c 50000 /dev/zero | tr '\\0' y)\" | head -c {48 * mib}; "
        f"head -c {48 * mib} /dev/zero | tr '\\0' z; }} >&2; wait"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RSS_CHILD, command, str(tmp_path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    report = json.loads(out)
    assert report["exit_code"] == 0
    assert report["log_bytes"] == 192 * mib
    assert report["growth_kib"] <= 64 * 1024, report["growth_kib"]
    full, rest = divmod(96 * mib, len("short line\n"))
    assert report["stdout"].split("\n")[-1] == "short line"[:rest]
    long_lines, ys = divmod(48 * mib, 50_001)  # then the z's go on the last y line
    last = ("y" * ys + "z" * 4000)[:4000] + " [... line cut ...]"
    assert report["stderr"].split("\n")[-1] == last
    assert report["omitted"] == (full + 1 - 300) + (long_lines + 1 - 300)


async def test_stdout_and_stderr_stay_apart_and_the_log_keeps_both(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    command = 'for i in $(seq 1 3000); do echo "out $i 中"; echo "err $i 文" >&2; done'
    result = await runner.run_shell(command, cwd=tmp_path, timeout_s=60)
    out = [f"out {i} 中" for i in range(1, 3001)]
    err = [f"err {i} 文" for i in range(1, 3001)]
    for shown, lines in ((result.stdout, out), (result.stderr, err)):
        kept = shown.split("\n")
        assert kept[:200] == lines[:200] and kept[-100:] == lines[-100:]
        assert kept[200] == "[... 2700 lines omitted ...]"
    assert result.omitted_lines == 2 * 2700
    assert result.log_path is not None
    logged = result.log_path.read_text(encoding="utf-8").splitlines()
    # Each echo is one small write, so the streams interleave by whole lines.
    assert [ln for ln in logged if ln.startswith("out ")] == out
    assert [ln for ln in logged if ln.startswith("err ")] == err
    assert len(logged) == 6000


async def test_chinese_split_across_reads_survives_byte_for_byte(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    """Several MiB of Chinese in lines of every length, read in pieces that cut
    characters, and characters written a byte at a time: head, tail, log exact."""
    lines = [f"第{n}行：" + "中文输出测试" * (n % 700) for n in range(6000)]
    text = "\n".join(lines) + "\n" + "尾" * 3000
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    result = await runner.run_shell(
        "cat in.txt; printf '\\xe4'; printf '\\xb8'; printf '\\xad\\n' >&2; printf '\\xad'",
        cwd=tmp_path,
        timeout_s=60,
    )
    data = text.encode("utf-8")
    expected = "\n".join(
        [*lines[:200], "[... 5701 lines omitted ...]", *lines[5901:], "尾" * 3000 + "中"]
    )
    assert result.stdout == expected
    assert result.stderr == "\ufffd"  # a lone continuation byte
    assert result.log_path is not None
    logged = result.log_path.read_bytes()
    # The stderr write lands somewhere among stdout's; without it, stdout's bytes.
    assert logged.count(b"\xad\n") == 1
    assert logged.replace(b"\xad\n", b"", 1) == data + "中".encode()


async def test_a_detached_holder_of_the_pipes_does_not_hold_the_call(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    """A process that left the group and cleared its environment (so no kill can find
    it) keeps the output pipes open: the call still returns with what was read."""
    pidfile = tmp_path / "pid"
    command = f"setsid env -i sh -c 'echo $$ > {pidfile}; exec sleep 120' & echo done"
    try:
        result = await runner.run_shell(command, cwd=tmp_path, timeout_s=120)
        assert result.exit_code == 0 and not result.timed_out
        assert result.stdout == "done"
    finally:
        pid = read_pid(pidfile)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


_FULL_DISK_CHILD = """
import asyncio, json, resource, sys
from pathlib import Path
from agent_shell_bridge.process.runner import ProcessRunner

async def main(work):
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # the log's "disk"
    runner = ProcessRunner(Path(work) / "logs")
    command = "for i in $(seq 1 120000); do echo \\"line $i 中文\\"; done; echo 完"
    result = await runner.run_shell(command, cwd=Path(work), timeout_s=120)
    print(json.dumps({
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "log_bytes": result.log_path.stat().st_size,
    }))

asyncio.run(main(sys.argv[1]))
"""


async def test_a_log_that_cannot_be_written_loses_nothing_else(tmp_path: Path) -> None:
    """The log stops at a file-size limit (as at a full disk): the command still runs
    to its end, its head and tail are all there, and the cut log is named."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _FULL_DISK_CHILD, str(tmp_path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    report = json.loads(out)
    assert report["exit_code"] == 0
    kept = report["stdout"].split("\n")
    assert kept[0] == "line 1 中文" and kept[-1] == "完" and kept[-2] == "line 120000 中文"
    assert kept[200] == "[... 119701 lines omitted ...]"
    assert report["log_bytes"] <= 1 << 20
    assert report["stderr"].startswith("[... the full output could not be saved (File too large)")
