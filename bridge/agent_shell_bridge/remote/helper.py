"""The remote side: a small program sent with every request, standard library only.

Run on the remote host as ``python3 -I -S -c SOURCE REQUEST`` (REQUEST is one JSON
argument), never installed there. Its operations:

- ``probe``: what the host offers (user, home, python, bubblewrap and whether it
  works, how the system directories are laid out);
- ``run``: a command in its own session and process group, with the environment
  cleared of the addresses of the user's sessions and of secret-looking variables.
  It is the command's watchdog: when its standard input closes (the ssh channel
  went away: a dropped connection, a killed client, a dead bridge) it kills the
  command's group and anything carrying the run's mark, then exits. When the
  command ends it kills what the command left behind too;
- ``kill``: a run's processes (those carrying its mark) and their process groups,
  until none is left (a background job ended on request);
- ``git_before`` and ``set_aside``: the host's clock and the root's own ``.git``
  before a sandboxed run, and after it the git metadata the run planted in the
  project, renamed out of git's way by the bridge's own walk
  (``sandbox/git_metadata.py``, whose source comes with the request);
- ``realpath``, ``read``, ``write``, ``list``: files, each confined to the project
  root after every link is resolved on that host;
- ``project_files``: several small files the project ships (its settings, its
  ``AGENTS.md`` files) in one answer, each said to be absent, a regular file, a link
  (read only when it stays inside the project), or something else; at most ``max``
  bytes of each, opened without blocking (a FIFO there never hangs the helper).

Exit status 120 with one JSON line ``{"error": …}`` on stderr is the helper's own
refusal; anything else is the command's.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import glob
import json
import os
import pwd
import re
import signal
import stat
import subprocess
import sys
import threading
import time
import types
from typing import Any

HELPER_FAILED = 120
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")


def _fail(message: str) -> None:
    sys.stderr.write(json.dumps({"error": message}) + "\n")
    sys.stderr.flush()
    os._exit(HELPER_FAILED)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _confined(path: str, root: str) -> str:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if not _inside(real, real_root):
        _fail(f"{path} resolves to {real}, outside the project {real_root}")
    return real


def _toolchains(home: str, request: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The toolchain directories under HOME (relative names), and the credential
    files or folders inside them (absolute), both as the request lists them."""
    shown = [
        rel
        for rel in request.get("toolchains", [])
        if os.path.isdir(os.path.join(home, rel)) and not os.path.islink(os.path.join(home, rel))
    ]
    masked = []
    for entry in request.get("secrets", []):
        if any(entry == rel or entry.startswith(rel + "/") for rel in shown):
            masked.extend(sorted(glob.glob(os.path.join(home, entry))))
    return shown, masked


def _user_name() -> str:
    """The user's name from the password file (a container's exec sets no $USER)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return ""


def _probe(request: dict[str, Any]) -> None:
    bwrap = None
    for d in [*os.environ.get("PATH", "/usr/bin:/bin").split(":"), "/usr/bin", "/bin"]:
        candidate = os.path.join(d or ".", "bwrap")
        if os.access(candidate, os.X_OK):
            bwrap = candidate
            break
    works, detail = False, "bubblewrap is not installed"
    if bwrap is not None:
        argv = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/"]
        argv += ["--proc", "/proc", "--dev", "/dev", "true"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=15, check=False)
            works = done.returncode == 0
            detail = "works" if works else done.stderr.decode(errors="replace").strip()[:300]
        except (OSError, subprocess.TimeoutExpired) as exc:
            detail = str(exc)
    system = {}
    for d in _SYSTEM:
        if os.path.islink(d):
            system[d] = "link:" + os.readlink(d)
        elif os.path.isdir(d):
            system[d] = "dir"
    home = os.path.expanduser("~")
    shown, masked = _toolchains(home, request)
    print(
        json.dumps(
            {
                "toolchains": shown,
                "masked": [[p, "dir" if os.path.isdir(p) else "file"] for p in masked],
                "uid": os.getuid(),
                "user": os.environ.get("USER") or os.environ.get("LOGNAME") or _user_name(),
                "home": home,
                "python": sys.version.split()[0],
                "bwrap": bwrap,
                "bwrap_works": works,
                "bwrap_detail": detail,
                "system": system,
                "path": os.environ.get("PATH", ""),
            }
        )
    )


def _kill_marked(mark: str) -> None:
    me = os.getpid()
    for pid in _marked(mark):
        if pid != me:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _marked(mark: str) -> list[int]:
    """The processes carrying MARK (what a run started, setsid'd ones included)."""
    needle = ("AGENT_SHELL_RUN=" + mark).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _kill(request: dict[str, Any]) -> None:
    mark = str(request["mark"])
    if len(mark) < 16:
        _fail("a run's mark is too short to name it")
    deadline = time.monotonic() + float(request.get("wait_s", 10))
    killed = 0
    while True:
        pids = _marked(mark)
        if not pids:
            break
        for pid in pids:  # its group too: what left the mark behind in its environment
            with contextlib.suppress(OSError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        killed += len(pids)
        if time.monotonic() > deadline:
            _fail(f"processes of the run are still there: {pids}")
        time.sleep(0.02)
    print(json.dumps({"killed": killed}))


def _git_before(request: dict[str, Any]) -> None:
    root = _confined(str(request["root"]), str(request["root"]))
    dotgit = os.path.join(root, ".git")
    protected = [dotgit] if os.path.lexists(dotgit) else []
    print(json.dumps({"now_ns": time.time_ns(), "protected": protected}))


def _set_aside(request: dict[str, Any]) -> None:
    from pathlib import Path

    root = _confined(str(request["root"]), str(request["root"]))
    module = types.ModuleType("agent_shell_git_metadata")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    try:
        exec(compile(str(request["module"]), "git_metadata.py", "exec"), module.__dict__)  # noqa: S102 - the bridge's own walk
    except (SyntaxError, TypeError) as exc:  # a python3 older than the walk's
        _fail(f"the git metadata check needs a newer python3 there ({exc})")
    notes = module.set_aside_after_run(
        [Path(root)],
        since_ns=int(request["since_ns"]),
        protected=[Path(str(p)) for p in request.get("protected", [])],
        display=Path(root),
    )
    print(json.dumps({"notes": [str(n) for n in notes]}))


def _run(request: dict[str, Any]) -> None:
    argv = [str(a) for a in request["argv"]]
    cwd = str(request["cwd"])
    mark = str(request["mark"])
    drop = set(request.get("drop", []))
    secret = re.compile(str(request.get("secret_re", "(?!)")), re.IGNORECASE)
    env = {k: v for k, v in os.environ.items() if k not in drop and not secret.search(k)}
    env.update({str(k): str(v) for k, v in request.get("set", {}).items()})
    env["AGENT_SHELL_RUN"] = mark
    root = request.get("root")
    if root is not None:
        cwd = _confined(cwd, str(root))
    try:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            restore_signals=True,
        )
    except OSError as exc:
        _fail(f"{argv[0]}: {exc.strerror}")
        return

    def kill_all() -> None:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        _kill_marked(mark)

    def watch() -> None:  # the channel: EOF (or an error) means the other end is gone
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        kill_all()
        os._exit(137)

    threading.Thread(target=watch, daemon=True).start()
    code = child.wait()
    kill_all()  # nothing of the run outlives it
    sys.stdout.flush()
    os._exit(code if code >= 0 else 128 - code)


def _realpath(request: dict[str, Any]) -> None:
    path = os.path.realpath(str(request["path"]))
    print(json.dumps({"path": path, "exists": os.path.exists(path), "dir": os.path.isdir(path)}))


def _read(request: dict[str, Any]) -> None:
    real = _confined(str(request["path"]), str(request["root"]))
    try:
        with open(real, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        _fail(f"{request['path']}: {exc.strerror}")
        return
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def _project_file(rel: str, root: str, limit: int) -> dict[str, Any]:
    """One file the project ships: what it is and (when readable) its first bytes."""
    answer: dict[str, Any] = {"path": rel, "state": "absent"}
    if not rel or rel.startswith("/") or "\0" in rel or ".." in rel.split("/"):
        answer["state"] = "other"
        return answer
    path = os.path.join(root, rel)
    try:
        link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return answer  # absent, or under something that is not a directory
    real = os.path.realpath(path)
    if not _inside(real, root):
        answer["state"] = "escape"
        return answer
    answer["state"] = "link" if link else "other"
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
    try:
        fd = os.open(real, flags)  # a link swapped in since: ELOOP, not followed
    except OSError:
        return answer
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return answer
        try:
            data = fh.read(limit + 1)
        except OSError:
            return answer
    answer["state"] = "link" if link else "file"
    answer["data"] = base64.b64encode(data[:limit]).decode("ascii")
    answer["truncated"] = len(data) > limit
    return answer


def _project_files(request: dict[str, Any]) -> None:
    root = os.path.realpath(str(request["root"]))
    limit = max(0, int(request.get("max", 1_000_000)))
    paths = [str(p) for p in request.get("paths", [])][:200]
    print(json.dumps({"files": [_project_file(p, root, limit) for p in paths]}))


def _write(request: dict[str, Any]) -> None:
    path, root = str(request["path"]), str(request["root"])
    parent = _confined(os.path.dirname(path) or ".", root)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        _fail(f"{os.path.dirname(path)}: {exc.strerror}")
    parent = _confined(parent, root)  # again, now that it exists
    target = os.path.join(parent, os.path.basename(path))
    if os.path.islink(target):
        _confined(target, root)
    data = sys.stdin.buffer.read()
    tmp = os.path.join(parent, f".{os.path.basename(path)}.agent-shell-{os.getpid()}")
    try:
        mode = os.stat(target).st_mode & 0o7777 if os.path.exists(target) else 0o644
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, os.path.realpath(target) if os.path.islink(target) else target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _fail(f"{path}: {exc.strerror}")
    print(json.dumps({"written": len(data)}))


def _list(request: dict[str, Any]) -> None:
    real = _confined(str(request["path"]), str(request["root"]))
    depth = max(1, int(request.get("depth", 1)))
    skip = set(request.get("skip", []))
    limit = int(request.get("limit", 2000))
    if not os.path.isdir(real):
        _fail(f"{request['path']} is not a directory")
    entries = []
    truncated = False
    for current, dirs, files in os.walk(real):  # links are listed, never followed
        level = current[len(real) :].count("/")
        dirs[:] = sorted(d for d in dirs if d not in skip)
        shown = [d + "/" for d in dirs] + sorted(files)
        if level + 1 >= depth:
            dirs[:] = []
        for name in shown:
            rel = os.path.relpath(os.path.join(current, name), real)
            entries.append(rel + "/" if name.endswith("/") else rel)
            if len(entries) >= limit:
                truncated = True
                break
        if truncated:
            break
    print(json.dumps({"path": real, "entries": sorted(set(entries)), "truncated": truncated}))


def _grep(request: dict[str, Any]) -> None:
    root = os.path.realpath(str(request["root"]))
    real = _confined(str(request["path"]), root)
    glob = request.get("glob")
    skip = set(request.get("skip", []))
    limit = int(request.get("limit", 200))
    try:
        rx = re.compile(str(request["pattern"]))
    except re.error as exc:
        _fail(f"Invalid pattern: {exc}")
        return
    if os.path.isfile(real):
        files = [real]
    else:
        files = []
        for current, dirs, names in os.walk(real):  # links are never followed
            dirs[:] = sorted(d for d in dirs if d not in skip)
            files.extend(os.path.join(current, n) for n in sorted(names))
    hits: list[dict[str, Any]] = []
    for file in files:
        if glob and not fnmatch.fnmatch(os.path.basename(file), str(glob)):
            continue
        if os.path.islink(file) or not _inside(os.path.realpath(file), root):
            continue
        try:
            with open(file, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, start=1):
            if rx.search(line):
                hits.append(
                    {"path": os.path.relpath(file, root), "line": number, "text": line[:300]}
                )
                if len(hits) >= limit:
                    print(json.dumps({"matches": hits, "truncated": True}))
                    return
    print(json.dumps({"matches": hits, "truncated": False}))


_OPS = {
    "probe": _probe,
    "run": _run,
    "kill": _kill,
    "git_before": _git_before,
    "set_aside": _set_aside,
    "realpath": _realpath,
    "read": _read,
    "write": _write,
    "list": _list,
    "grep": _grep,
    "project_files": _project_files,
}


def main(argv: list[str]) -> None:
    try:
        request = json.loads(argv[1])
        op = _OPS[request["op"]]
    except (IndexError, ValueError, KeyError, TypeError):
        _fail("usage: helper REQUEST-JSON with a known op")
        return
    nonce = request.get("nonce")
    if isinstance(nonce, str):  # the answer starts after this line (connection.py)
        sys.stdout.buffer.write(nonce.encode() + b"\n")
        sys.stdout.flush()
    op(request)


if __name__ == "__main__":
    main(sys.argv)
