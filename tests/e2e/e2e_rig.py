"""Shared parts of the end-to-end tests: the mock model, the project, tmux, the org log.

Everything is real except the remote model API: the bridge's own ``mock-model``
command serves a scripted model on loopback, Emacs runs the package from this
checkout and starts the real bridge, commands run in a temporary git project.
HOME (and so ``user-emacs-directory``) points into a temporary directory, API keys
are scrubbed from the environment, and waiting is always on a condition with a
deadline.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

CHECKOUT = Path(__file__).resolve().parents[2]
DEMO = CHECKOUT / "demo"
ELISP = CHECKOUT / "elisp"
BRIDGE = CHECKOUT / ".venv" / "bin" / "agent-shell-bridge"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EMACS = os.environ.get("EMACS", "emacs")

# What the demo's task and follow-up look like; the demo script answers them.
TASK = (
    "Fix the failing test: glossary.export_json turns 智能体 into \\u escapes. "
    "Run the tests before and after the fix."
)
FOLLOW_UP = "Next I want a CSV export of the glossary too — anything to remember?"
FIXED_LINE = "    return json.dumps(entries, ensure_ascii=False, indent=2, sort_keys=True)"
EXTRACTION_MARK = "You write the long-term memory of a coding agent"

SECRET_VARS = ("AGENT_SHELL_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")

T = TypeVar("T")


def wait_for(what: str, predicate: Callable[[], T | None], timeout: float = 20.0) -> T:
    """Poll ``predicate`` until it returns a true value; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(delay)  # polling interval, not synchronisation
        delay = min(delay * 1.5, 0.2)


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of everything the tests start: private HOME, no keys, UTF-8."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS and not k.startswith("TMUX")}
    for var in (
        "AGENT_SHELL_API_BASE",
        "AGENT_SHELL_MODEL",
        "AGENT_SHELL_MEMORY_DIR",
        "EMACSLOADPATH",
    ):
        env.pop(var, None)
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
        AGENT_SHELL_TEST_BRIDGE=str(BRIDGE),
        E2E_MARKER=str(home),
    )
    env.update(extra)
    return env


def sandboxed(env: dict[str, str]) -> bool:
    """Whether a bridge started with ``env`` runs the demo's tests in its sandbox.

    Without one (``AGENT_SHELL_SANDBOX=off`` or no working bubblewrap) each test run
    waits for a yes, which the walkthroughs then give with C-c C-y in the shell.
    """
    from agent_shell_bridge.sandbox import detect_sandbox

    return detect_sandbox(env).available


def make_project(parent: Path, env: dict[str, str]) -> Path:
    """A copy of the demo's sample project as a git repository with one commit."""
    root = parent / "glossary"
    shutil.copytree(DEMO / "project", root, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "初始提交"]):
        subprocess.run([*git, *args], cwd=root, env=env, check=True)
    return root


@dataclass
class MockModel:
    """``agent-shell-bridge mock-model`` as a subprocess; it exits when its stdin closes."""

    proc: subprocess.Popen[bytes]
    api_base: str

    @classmethod
    @contextmanager
    def running(cls, script: Path, env: dict[str, str]) -> Iterator[MockModel]:
        proc = subprocess.Popen(
            [str(BRIDGE), "mock-model", "--script", str(script), "--port", "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, "the mock model printed no ready line within 30s"
            line = json.loads(proc.stdout.readline())
            assert line["ready"] is True
            yield cls(proc, str(line["api_base"]))
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()

    def requests(self) -> list[dict[str, Any]]:
        """The chat bodies the model received, in order."""
        root = self.api_base.rsplit("/v1", 1)[0]
        response = httpx.get(f"{root}/_mock/requests", timeout=10, trust_env=False)
        response.raise_for_status()
        data = response.json()
        records = data["requests"] if isinstance(data, dict) else data
        return [r["body"] or {} for r in records]


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        str(m.get("content") or "")
        for m in body.get("messages", [])
        if m.get("role") in ("system", "developer")
    )


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def recording_exit(exit_file: Path, *argv: str) -> list[str]:
    """Run ``argv`` under sh so that its exit status lands in ``exit_file``.

    (tmux's pane_dead_status races with the pty closing and is sometimes empty.)
    """
    script = 'prog=$1; shift; "$prog" "$@"; echo $? > "$E2E_EXIT_FILE"'
    return ["env", f"E2E_EXIT_FILE={exit_file}", "sh", "-c", script, "sh", *argv]


def emacs_command(exit_file: Path, *args: str) -> list[str]:
    return recording_exit(exit_file, EMACS, *args)


def exit_status(exit_file: Path) -> str | None:
    text = exit_file.read_text() if exit_file.exists() else ""
    return text.strip() or None


def write_init(path: Path, api_base: str) -> Path:
    """An init file that loads the package and points it at the mock, as a user would."""
    path.write_text(
        f""";;; e2e init  -*- lexical-binding: t; -*-
(setq inhibit-startup-screen t
      native-comp-deferred-compilation nil)  ; no background compiles on 2 cores
(add-to-list 'load-path {json.dumps(str(ELISP))})
(require 'agent-shell)
(setq agent-shell-api-base {json.dumps(api_base)}
      agent-shell-model "e2e-mock")
""",
        encoding="utf-8",
    )
    return path


# -- the org action log --------------------------------------------------------

_HEADING = re.compile(r"^(\*+) (?:(WAIT|APPROVED|REJECTED|DONE|FAILED) )?(\[[^]]*\] )?(.*)$")


@dataclass
class OrgEntry:
    level: int
    todo: str | None
    title: str
    properties: dict[str, str] = field(default_factory=dict)
    body: str = ""


def parse_org_log(path: Path) -> list[OrgEntry]:
    """The log's steps in their last state: each heading with its TODO keyword,
    properties drawer and body text, and the update headings the append-only file
    holds (``LOG_UPDATE``) folded into the step they name; continuation and other
    headings of the bridge's own (no ``LOG_ID``) left out."""
    headings = _org_headings(path)
    steps = {e.properties["LOG_ID"]: e for e in headings if "LOG_ID" in e.properties}
    for update in headings:
        target = steps.get(update.properties.get("LOG_UPDATE", ""))
        if target is None:
            continue
        target.todo = update.todo or target.todo
        target.properties.update(
            {k: v for k, v in update.properties.items() if k not in ("SOURCE", "LOG_UPDATE")}
        )
        target.body += update.body
    return [e for e in headings if "LOG_ID" in e.properties]


def _org_headings(path: Path) -> list[OrgEntry]:
    """Headings with their TODO keyword, properties drawer and body text."""
    entries: list[OrgEntry] = []
    in_drawer = False
    for line in path.read_text(encoding="utf-8").split("\n"):
        m = _HEADING.match(line)
        if m:
            entries.append(OrgEntry(len(m.group(1)), m.group(2), m.group(4)))
            in_drawer = False
            continue
        if not entries:
            continue
        entry = entries[-1]
        if line == ":PROPERTIES:":
            in_drawer = True
        elif line == ":END:" and in_drawer:
            in_drawer = False
        elif in_drawer:
            pm = re.match(r"^:([^:]+):\s*(.*)$", line)
            if pm:
                entry.properties[pm.group(1)] = pm.group(2)
        else:
            entry.body += line + "\n"
    return entries


def log_files(root: Path) -> list[Path]:
    return sorted((root / ".agent-shell" / "logs").glob("*.org"))


def memory_files(root: Path) -> list[Path]:
    return sorted((root / ".agent-shell" / "memory").glob("*.md"))


def check_first_task(root: Path, mock: MockModel | None) -> OrgEntry:
    """What the demo's first task must leave behind: the fix, the log, a memory.

    Returns the memory's summary line for the second-session check.
    """
    source = (root / "glossary.py").read_text(encoding="utf-8")
    assert FIXED_LINE in source
    tests = subprocess.run(
        ["python3", "-m", "unittest", "-q"], cwd=root, capture_output=True, text=True, check=False
    )
    assert tests.returncode == 0, tests.stderr

    logs = log_files(root)
    assert len(logs) == 1, logs
    entries = parse_org_log(logs[0])
    text = logs[0].read_text(encoding="utf-8")
    assert "#+TODO: WAIT | APPROVED REJECTED DONE FAILED" in text
    (task,) = [e for e in entries if e.properties.get("SOURCE") == "user"]
    assert (task.level, task.todo) == (1, "DONE")
    assert "智能体" in task.title  # Chinese survives keyboard → Emacs → bridge → file

    def tool(name: str) -> list[OrgEntry]:
        return [e for e in entries if e.properties.get("TOOL") == name]

    assert [e.todo for e in tool("project_status")] == ["DONE"]
    assert [e.todo for e in tool("read_file")] == ["DONE"]
    assert [e.todo for e in tool("run_test")] == ["FAILED", "DONE"]
    (denied,) = tool("run_command")
    assert denied.todo == "REJECTED"
    assert denied.properties["DECISION"] == "deny"
    assert denied.properties["RISK"] == "dangerous"
    assert "rm -rf ~" in denied.body
    (edit,) = tool("replace_region")
    assert edit.todo == "DONE" and edit.properties["DECISION"] == "approved"
    assert "+" + FIXED_LINE in edit.body  # the diff the user approved
    assert [e.todo for e in tool("task_complete")] == ["DONE"]
    assert not [e for e in entries if e.todo == "WAIT"]
    memory_entries = [e for e in entries if e.properties.get("SOURCE") == "memory"]
    assert [e.properties.get("DECISION") for e in memory_entries][:1] == ["extract"]
    assert any(e.title.startswith("Memory: wrote ") for e in memory_entries)

    (memory,) = memory_files(root)
    doc = memory.read_text(encoding="utf-8")
    summary = next(ln for ln in doc.split("\n") if ln.startswith("summary:"))
    assert "ensure_ascii=False" in summary and "智能体" in summary
    assert "trigger: fail→fix→pass" in doc  # the trigger comes from the bridge

    if mock is not None:
        bodies = mock.requests()
        extraction = [b for b in bodies if EXTRACTION_MARK in system_text(b)]
        assert len(extraction) == 1
        assert "rm -rf ~" in json.dumps(extraction[0], ensure_ascii=False)  # transcript sent
        # The first run_test (unittest: 3 run, 1 failure) reached the model with its counts.
        runs = [
            str(m["content"])
            for b in bodies
            for m in b["messages"]
            if m["role"] == "tool" and "name=run_test" in str(m["content"])
        ]
        assert runs, "no run_test result reached the model"
        assert '"passed": 2, "failed": 1, "errors": 0, "runner": "unittest"' in runs[0]
    return OrgEntry(0, None, summary.removeprefix("summary:").strip())


def check_second_session(mock: MockModel, first_new: int, summary: str) -> None:
    """The first request of a later session carries the remembered summary."""
    bodies = mock.requests()
    assert len(bodies) > first_new
    first = bodies[first_new]
    assert FOLLOW_UP in last_user_text(first)
    assert summary[:120] in system_text(first)


# -- tmux ----------------------------------------------------------------------


@dataclass
class Tmux:
    """A private tmux server with one fixed-size session; screens saved as artifacts."""

    env: dict[str, str]
    artifacts: Path
    socket: str = field(default_factory=lambda: f"agent-shell-e2e-{os.getpid()}")
    width: int = 160
    height: int = 50
    shots: int = 0

    def run(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )
        if proc.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def start(self, name: str, cwd: Path, command: list[str]) -> None:
        if self.run_ok("has-session", "-t", "=keep"):
            self.run("new-window", "-d", "-t", "keep", "-n", name, "-c", str(cwd), *command)
        else:
            self.run(
                "new-session", "-d", "-s", "keep", "-n", name,
                "-x", str(self.width), "-y", str(self.height), "-c", str(cwd), *command,
            )  # fmt: skip
            self.run("set-option", "-g", "remain-on-exit", "on")
            # (window-size manual would be simpler, but tmux 3.3a crashes on new-window.)
            self.run("set-option", "-g", "default-size", f"{self.width}x{self.height}")
        self.run("set-option", "-w", "-t", f"keep:{name}", "remain-on-exit", "on")

    def run_ok(self, *args: str) -> bool:
        return (
            subprocess.run(
                ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                env=self.env,
                capture_output=True,
                check=False,
                timeout=20,
            ).returncode
            == 0
        )

    def keys(self, window: str, *keys: str) -> None:
        """Press keys by tmux name: "M-x", "C-c", "Enter", "y" …"""
        for key in keys:
            self.run("send-keys", "-t", f"keep:{window}", key)

    def type(self, window: str, text: str) -> None:
        """Type text literally, as a user types it (Chinese included)."""
        self.run("send-keys", "-t", f"keep:{window}", "-l", text)

    def screen(self, window: str) -> str:
        return self.run("capture-pane", "-p", "-t", f"keep:{window}")

    def wait_screen(self, window: str, pattern: str, timeout: float = 20.0) -> str:
        regex = re.compile(pattern, re.M)
        last = [""]

        def seen() -> str | None:
            last[0] = self.screen(window)
            return last[0] if regex.search(last[0]) else None

        try:
            return wait_for(f"/{pattern}/ on the screen", seen, timeout)
        except AssertionError:
            self.shot(window, f"timeout-{re.sub(r'[^a-z]+', '-', pattern.lower())[:30]}")
            raise AssertionError(
                f"timed out waiting for /{pattern}/ on screen:\n{last[0]}"
            ) from None

    def shot(self, window: str, moment: str) -> str:
        """Save the current screen as NN-moment.txt under the artifacts directory."""
        self.shots += 1
        screen = self.screen(window)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        (self.artifacts / f"{self.shots:02d}-{moment}.txt").write_text(screen, encoding="utf-8")
        return screen

    def kill(self) -> None:
        self.run_ok("kill-server")


def processes_with_marker(marker: str) -> list[int]:
    """Pids whose environment carries E2E_MARKER=marker (leak detection)."""
    needle = f"E2E_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def artifact_dir(name: str) -> Path:
    path = ARTIFACTS / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    return path
