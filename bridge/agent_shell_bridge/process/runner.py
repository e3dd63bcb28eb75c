"""Run child processes safely: own process group, limits, scrubbed env, bounded output.

Every child starts in a new session (so its whole process group can be killed on
timeout, cancel or shutdown), reads stdin from ``/dev/null``, runs under CPU-time,
file-size and process-count limits, and sees an environment without keys, tokens or
passwords. Its output is streamed byte-for-byte to a log file while only the first
200 and last 100 lines of each stream stay in memory (:mod:`.execution_capture`,
off the event loop), so a command printing a gigabyte costs disk, not RAM.

Nothing outlives the bridge, even when it is killed with SIGKILL: every child asks
the kernel for SIGKILL when the bridge dies (``PR_SET_PDEATHSIG``); a shell command
run in the sandbox gets bubblewrap's ``--die-with-parent`` and its own PID namespace,
and one run outside it gets a small guard parent (:mod:`.guard`) that kills the
command's descendants too, which the kernel's signal alone would leave behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import re
import resource
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from ..limits import HEAD_LINES, TAIL_LINES
from ..sandbox import SandboxSpec
from .capture import OutputPump
from .guard import RUN_MARK, kill_marked

__all__ = [
    "HEAD_LINES",
    "TAIL_LINES",
    "BackgroundRun",
    "ExecLimits",
    "ProcessResult",
    "ProcessRunner",
    "default_timeout",
    "looks_like_credential",
    "scrubbed_environment",
    "timeout_for",
]

logger = logging.getLogger(__name__)

_TERM_GRACE_S = 2.0
_DRAIN_AFTER_EXIT_S = 1.0
_SECRET_NAME_RE = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|(?:^|_)(?:PAT|PASS|PW)(?:_|$)", re.IGNORECASE
)
# Values that are credentials whatever their variable is called: a URL whose user
# info has a password, a private key, an Authorization header, and tokens of a known
# shape (JWTs, and those whose issuers give them a fixed prefix). Each needs the
# length and alphabet of the real thing, so a word that merely starts alike (a path
# through /opt/sk-tools, npm_config_cache) is kept. This runs for every child: a
# value is first cut into runs of token characters, and only runs long enough to be
# a token are matched against the prefixes.
_SHAPED_RE = re.compile(
    r"""
    [A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@               # scheme://user:password@
    | -----BEGIN\ [A-Z0-9\ ]*PRIVATE\ KEY(?:\ BLOCK)?-----       # PEM, OpenSSH, PGP keys
    | \bBearer\s+[A-Za-z0-9._~+/=-]{20,}                          # an Authorization header
    """,
    re.VERBOSE,
)
_TOKEN_RUN_RE = re.compile(r"[A-Za-z0-9_.-]{20,}")
_TOKEN_RE = re.compile(
    r"""
    (?<![A-Za-z0-9])(?:
        eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*   # a JWT
      | gh[pousr]_[A-Za-z0-9]{30,} | github_pat_[A-Za-z0-9_]{30,}      # GitHub
      | gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_-]{20,}   # GitLab
      | xox[abposr]-[A-Za-z0-9-]{15,} | xapp-[0-9]-[A-Za-z0-9-]{13,}      # Slack
      | (?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])        # AWS access key ids
      | AIza[A-Za-z0-9_-]{35} | ya29\.[A-Za-z0-9_-]{20,} | GOCSPX-[A-Za-z0-9_-]{20,}  # Google
      | npm_[A-Za-z0-9]{36} | pypi-Ag[A-Za-z0-9_-]{50,}            # npm, PyPI
      | hf_[A-Za-z0-9]{30,} | r8_[A-Za-z0-9]{30,}                  # Hugging Face, Replicate
      | gsk_[A-Za-z0-9]{40,} | xai-[A-Za-z0-9]{40,} | pplx-[A-Za-z0-9]{40,}  # Groq, xAI, Perplexity
      | (?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,} | whsec_[A-Za-z0-9]{20,}  # Stripe
      | SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}                 # SendGrid
      | do[opr]_v1_[a-f0-9]{64} | dapi[a-f0-9]{32}                 # DigitalOcean, Databricks
      | shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32} | ATATT3[A-Za-z0-9_=-]{50,}   # Shopify, Atlassian
      | lin_api_[A-Za-z0-9]{32,} | hv[sbr]\.[A-Za-z0-9_-]{24,}     # Linear, Vault
      | AGE-SECRET-KEY-1[0-9A-Z]{50,}                              # age
      | sk-(?P<sk>[A-Za-z0-9_-]{20,})   # OpenAI, Anthropic, DeepSeek, OpenRouter …: see below
    )
    """,
    re.VERBOSE,
)
# ``sk-`` starts ordinary words too (sk-learn-toolkit): the rest must hold a random
# run, 16 or more letters and digits with both in it, or both cases.
_RANDOM_RUN_RE = re.compile(r"[A-Za-z0-9]{16,}")
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
_TIMEOUTS = {"command": 60.0, "test": 180.0, "build": 300.0}


@dataclass(frozen=True)
class ExecLimits:
    """Resource limits applied to each child (``None`` leaves a limit unchanged)."""

    cpu_seconds: int | None = 600
    file_size_bytes: int | None = 2 * 1024**3
    max_processes: int | None = 512
    address_space_bytes: int | None = None
    core_bytes: int | None = 0


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of one child; ``stdout``/``stderr`` are bounded, ``log_path`` holds all."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    truncated: bool
    timed_out: bool
    cancelled: bool
    omitted_lines: int
    log_path: Path | None


def default_timeout(kind: Literal["command", "test", "build"]) -> float:
    """Default timeout in seconds for a kind of command."""
    return _TIMEOUTS[kind]


_BUILD_WORDS = re.compile(r"\b(build|make|compile|install)\b")


def timeout_for(kind: str, command: str) -> float:
    """The default timeout of ``command`` run as a test or as a plain command."""
    if kind == "test":
        return default_timeout("test")
    if _BUILD_WORDS.search(command):
        return default_timeout("build")
    return default_timeout("command")


def scrubbed_environment(base: Mapping[str, str], secrets: Sequence[str]) -> dict[str, str]:
    """Copy ``base`` without secret-looking names, values containing a known secret,
    or values shaped like a credential (:func:`looks_like_credential`)."""
    known = [s for s in secrets if s]
    return {
        name: value
        for name, value in base.items()
        if not _SECRET_NAME_RE.search(name)
        and not any(s in value for s in known)
        and not looks_like_credential(value)
    }


def looks_like_credential(value: str) -> bool:
    """Whether ``value`` holds a password in a URL, a private key, a JWT or a token of a
    well-known shape (GitHub, GitLab, Slack, AWS, Google, npm, PyPI, OpenAI …)."""
    shaped = "://" in value or "-----BEGIN" in value or "Bearer" in value
    if shaped and _SHAPED_RE.search(value):
        return True
    for run in _TOKEN_RUN_RE.findall(value):
        for match in _TOKEN_RE.finditer(run):
            body = match.group("sk")
            if body is None or any(_random(part) for part in _RANDOM_RUN_RE.findall(body)):
                return True
    return False


def _random(run: str) -> bool:
    """Whether a run of letters and digits looks generated rather than written."""
    digits = any(c.isdigit() for c in run)
    letters = not run.isdigit()
    return (digits and letters) or (not run.islower() and not run.isupper())


_PR_SET_PDEATHSIG = 1
_GUARD = str(Path(__file__).with_name("guard.py"))


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up before any fork (nothing is loaded in the child)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return fn


def _limits_preexec(
    limits: ExecLimits, then: Callable[[], None] | None = None
) -> Callable[[], None]:
    """The child's set-up between fork and exec: death signal, limits, then ``then``
    (the sandbox's Landlock domain), whose failure stops the command from starting."""
    prctl = _prctl()
    parent = os.getpid()
    pairs = [
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_NPROC, limits.max_processes),
        (resource.RLIMIT_AS, limits.address_space_bytes),
        (resource.RLIMIT_CORE, limits.core_bytes),
    ]

    def apply() -> None:  # runs in the child between fork and exec
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # the bridge died before the request took hold
                os.kill(os.getpid(), signal.SIGKILL)
        for which, value in pairs:
            if value is None:
                continue
            _, hard = resource.getrlimit(which)
            soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (soft, hard))
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if then is not None:
            then()

    return apply


def _stdin_file(data: bytes) -> BinaryIO:
    """An unlinked file holding ``data``, positioned at its start, for a child's stdin."""
    fh = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the caller once spawned)
    fh.write(data)
    fh.seek(0)
    return fh


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


async def _leader_exit(proc: asyncio.subprocess.Process) -> None:
    """Wait for the child itself to exit, even while its pipes stay open.

    ``Process.wait()`` also waits for the pipes to close, which a backgrounded
    grandchild can delay forever; a pidfd becomes readable when the process ends.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return
    except OSError:
        await proc.wait()  # no pidfd (old kernel): fall back to waiting for the pipes too
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()

    def on_exit() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(fd, on_exit)
    try:
        if proc.returncode is None:
            await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)


@dataclass(frozen=True, slots=True)
class _Spawned:
    proc: asyncio.subprocess.Process
    pump: OutputPump
    log_path: Path
    run_id: str


@dataclass(slots=True)
class BackgroundRun:
    """A command started by :meth:`ProcessRunner.start_shell`, still running or not.

    ``ended`` gives its exit code, or None when it was killed or timed out.
    """

    pid: int
    log_path: Path
    ended: asyncio.Future[int | None] = field(init=False)
    # What its end left to say beyond its code (a remote job's lost connection).
    note: str | None = field(default=None, init=False)


class ProcessRunner:
    """Starts children for the tools and tracks them so shutdown can kill them all."""

    def __init__(
        self,
        log_dir: Path,
        *,
        secrets: Sequence[str] = (),
        limits: ExecLimits = ExecLimits(),
    ) -> None:
        self._log_dir = log_dir
        self._secrets = tuple(secrets)
        self._limits = limits
        self._groups: dict[int, asyncio.subprocess.Process] = {}
        self._marks: dict[int, str] = {}
        self._killed: set[int] = set()
        # Bumped by kill_all, so a child spawned while it ran is killed as well.
        self._generation = 0

    async def run_shell(
        self,
        command: str,
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        settings: Mapping[str, str] | None = None,
        sandbox: SandboxSpec | None = None,
        stdin: bytes | None = None,
    ) -> ProcessResult:
        """Run ``command`` with ``bash --noprofile --norc -c``; only for policy-accepted ones.

        ``env`` adds variables over the bridge's own environment before scrubbing;
        ``settings`` are the bridge's own (git's safe configuration), set after it:
        their names may look secret (``GIT_CONFIG_KEY_0``), their values never are.
        With ``sandbox`` the shell runs inside bubblewrap; without, under the guard
        that kills its descendants if the bridge dies. ``stdin`` is what it reads (from
        an unlinked file, so nothing waits on a pipe); else it reads ``/dev/null``.
        """
        shell = ["bash", "--noprofile", "--norc", "-c", command]
        environment = {**self._environment(env), **(settings or {})}
        if sandbox is None:
            argv = [sys.executable, "-I", "-S", _GUARD, str(os.getpid()), "--", *shell]
            return await self._run(argv, cwd, timeout_s, environment, stdin=stdin)
        # The layout looks at the disk (links, secrets, sockets): not on the loop.
        mounts = await asyncio.to_thread(sandbox.mounts, environment)
        with sandbox.launch(shell, cwd=cwd, env=environment, mounts=mounts) as launch:
            return await self._run(
                launch.argv,
                cwd,
                timeout_s,
                launch.env,
                pass_fds=launch.pass_fds,
                preexec=launch.preexec,
                stdin=stdin,
            )

    async def run_argv(
        self, argv: Sequence[str], *, cwd: Path, timeout_s: float, stdin_fd: int | None = None
    ) -> ProcessResult:
        """Run ``argv`` directly, without a shell.

        ``stdin_fd`` (default ``/dev/null``) is a descriptor the caller keeps and
        closes: a remote run reads its channel's end from it (``remote/runner.py``).
        """
        if not argv:
            raise ValueError("empty argv")
        return await self._run(
            list(argv), cwd, timeout_s, self._environment(None), stdin_fd=stdin_fd
        )

    async def kill_all(self) -> None:
        """Kill every live child process group (used at shutdown)."""
        self._generation += 1
        groups = list(self._groups)
        self._killed.update(groups)
        for pgid in groups:
            _signal_group(pgid, signal.SIGTERM)
        await asyncio.gather(*(self._reap(pgid) for pgid in groups))

    async def _reap(self, pgid: int) -> None:
        proc = self._groups.get(pgid)
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), _TERM_GRACE_S)
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.to_thread(kill_marked, self._marks.get(pgid, ""))
        if proc is not None:
            await proc.wait()

    def _environment(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        base = dict(os.environ)
        if extra:
            base.update(extra)
        base.update(_QUIET_ENV)
        return scrubbed_environment(base, self._secrets)

    async def _spawn(
        self,
        argv: list[str],
        cwd: Path,
        environment: Mapping[str, str],
        *,
        pass_fds: Sequence[int] = (),
        preexec: Callable[[], None] | None = None,
        stdin: bytes | None = None,
        stdin_fd: int | None = None,
    ) -> _Spawned:
        """Start ``argv`` in its own process group, its output pumped to a new log."""
        await asyncio.to_thread(self._log_dir.mkdir, parents=True, exist_ok=True)
        # Small (a hook's event), and made on the loop for the same reason as the log.
        source = _stdin_file(stdin) if stdin is not None else None
        stamp = time.strftime("%Y%m%dT%H%M%S")
        log_path = self._log_dir / f"{stamp}-{uuid.uuid4().hex[:12]}.log"
        # Opened on the loop, not in a thread: a cancel arriving during a threaded
        # open would leak the descriptor the thread goes on to create. The pump owns
        # it from here on and closes it.
        pump = OutputPump(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC))
        generation = self._generation
        # Spawning is shielded: cancelling inside create_subprocess_exec would make
        # asyncio wait for pipes that the new group's other members keep open.
        run_id = uuid.uuid4().hex
        env = dict(environment)
        # Descendants inherit this mark even when they leave the process group (setsid),
        # so a kill can still find them.
        env[RUN_MARK] = run_id
        stdout_fd, stderr_fd = pump.child_fds
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                cwd=str(cwd),
                env=env,
                stdin=(
                    source
                    if source is not None
                    else (asyncio.subprocess.DEVNULL if stdin_fd is None else stdin_fd)
                ),
                stdout=stdout_fd,
                stderr=stderr_fd,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
                preexec_fn=_limits_preexec(self._limits, preexec),
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            await asyncio.shield(self._abandon(spawn, pump))
            raise
        except BaseException:
            pump.close()
            raise
        finally:
            if source is not None:  # the child has its own descriptor
                source.close()
        pgid = proc.pid
        self._groups[pgid] = proc
        self._marks[pgid] = run_id
        if generation != self._generation:
            self._killed.add(pgid)
            _signal_group(pgid, signal.SIGKILL)
        return _Spawned(proc, pump, log_path, run_id)

    async def _run(
        self,
        argv: list[str],
        cwd: Path,
        timeout_s: float,
        environment: Mapping[str, str],
        *,
        pass_fds: Sequence[int] = (),
        preexec: Callable[[], None] | None = None,
        stdin: bytes | None = None,
        stdin_fd: int | None = None,
    ) -> ProcessResult:
        started = time.monotonic()
        timed_out = False
        spawned = await self._spawn(
            argv,
            cwd,
            environment,
            pass_fds=pass_fds,
            preexec=preexec,
            stdin=stdin,
            stdin_fd=stdin_fd,
        )
        proc, pump, log_path, run_id = spawned.proc, spawned.pump, spawned.log_path, spawned.run_id
        pgid = proc.pid
        try:
            pump.start()
            try:
                await asyncio.wait_for(self._wait(proc, pgid, pump, run_id), timeout_s)
            except TimeoutError:
                timed_out = True
                await self._terminate(proc, pgid, pump)
        except BaseException:
            await asyncio.shield(self._terminate(proc, pgid, pump))
            await asyncio.shield(self._release(pgid, pump, quiet=True))
            raise
        await self._release(pgid, pump)
        cancelled = pgid in self._killed
        self._killed.discard(pgid)
        out, err = pump.stdout, pump.stderr
        omitted = out.omitted + err.omitted
        stderr = err.render()
        if pump.log_error is not None:
            logger.warning("command log %s cut short: %s", log_path, pump.log_error)
            note = f"[... the full output could not be saved ({pump.log_error.strerror}); "
            note += "its log holds only the start ...]"
            stderr = f"{stderr}\n{note}" if stderr else note
        if pump.cut_short:
            logger.warning("command output %s still coming when its run ended", log_path)
            note = "[... output was still coming after the command ended (a process it "
            note += "left behind); the rest is neither shown nor logged ...]"
            stderr = f"{stderr}\n{note}" if stderr else note
        return ProcessResult(
            exit_code=None if (timed_out or cancelled) else proc.returncode,
            stdout=out.render(),
            stderr=stderr,
            duration_ms=int((time.monotonic() - started) * 1000),
            truncated=bool(omitted) or out.long_lines or err.long_lines or pump.cut_short,
            timed_out=timed_out,
            cancelled=cancelled,
            omitted_lines=omitted,
            log_path=log_path,
        )

    async def start_shell(
        self,
        command: str,
        *,
        cwd: Path,
        timeout_s: float | None = None,
        settings: Mapping[str, str] | None = None,
        sandbox: SandboxSpec | None = None,
    ) -> BackgroundRun:
        """Start ``command`` as :meth:`run_shell` would, and return once it runs.

        Its output goes only to its log file (read it as it grows); ``ended``
        resolves when it is over, which ends its whole group as a foreground run's
        end does. ``timeout_s`` (None: none) ends it like a kill.
        """
        shell = ["bash", "--noprofile", "--norc", "-c", command]
        environment = {**self._environment(None), **(settings or {})}
        if sandbox is None:
            argv = [sys.executable, "-I", "-S", _GUARD, str(os.getpid()), "--", *shell]
            spawned = await self._spawn(argv, cwd, environment)
        else:
            mounts = await asyncio.to_thread(sandbox.mounts, environment)
            with sandbox.launch(shell, cwd=cwd, env=environment, mounts=mounts) as launch:
                spawned = await self._spawn(
                    launch.argv,
                    cwd,
                    launch.env,
                    pass_fds=launch.pass_fds,
                    preexec=launch.preexec,
                )
        return await self._started(spawned, timeout_s)

    async def start_argv(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout_s: float | None = None,
        stdin_fd: int | None = None,
    ) -> BackgroundRun:
        """Start ``argv`` without a shell, as :meth:`run_argv` would, and return once
        it runs (a remote job: its channel's end is ``stdin_fd``, as there)."""
        if not argv:
            raise ValueError("empty argv")
        spawned = await self._spawn(list(argv), cwd, self._environment(None), stdin_fd=stdin_fd)
        return await self._started(spawned, timeout_s)

    async def _started(self, spawned: _Spawned, timeout_s: float | None) -> BackgroundRun:
        try:
            spawned.pump.start()
        except BaseException:
            await asyncio.shield(self._terminate(spawned.proc, spawned.proc.pid, spawned.pump))
            await asyncio.shield(self._release(spawned.proc.pid, spawned.pump, quiet=True))
            raise
        run = BackgroundRun(spawned.proc.pid, spawned.log_path)
        run.ended = asyncio.ensure_future(self._background(spawned, timeout_s))
        return run

    async def _background(self, spawned: _Spawned, timeout_s: float | None) -> int | None:
        proc, pump, pgid = spawned.proc, spawned.pump, spawned.proc.pid
        try:
            await asyncio.wait_for(self._wait(proc, pgid, pump, spawned.run_id), timeout_s)
        except TimeoutError:
            self._killed.add(pgid)
            await self._terminate(proc, pgid, pump)
        except BaseException:
            await asyncio.shield(self._terminate(proc, pgid, pump))
            await asyncio.shield(self._release(pgid, pump, quiet=True))
            raise
        await self._release(pgid, pump, quiet=True)
        killed = pgid in self._killed
        self._killed.discard(pgid)
        return None if killed else proc.returncode

    async def kill_group(self, pgid: int) -> None:
        """End one running group (a background run) and everything it started."""
        if pgid not in self._groups:
            return
        self._killed.add(pgid)
        _signal_group(pgid, signal.SIGTERM)
        await self._reap(pgid)

    async def _release(self, pgid: int, pump: OutputPump, *, quiet: bool = False) -> None:
        """Forget the group and wait for the pump: the log then holds every byte read.

        Raises what stopped a reader unless ``quiet`` (another error is already on
        its way); a log that could not be written is reported in the result instead.
        """
        self._groups.pop(pgid, None)
        self._marks.pop(pgid, None)
        pump.stop()
        try:
            await pump.finish()
        except Exception:
            if not quiet:
                raise
            logger.exception("output capture failed")

    @staticmethod
    async def _abandon(spawn: asyncio.Future[asyncio.subprocess.Process], pump: OutputPump) -> None:
        """Kill a child whose start was cancelled, once it has started."""
        try:
            proc = await spawn
        except Exception:
            proc = None
        pump.close()
        if proc is not None:
            _signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()

    async def _wait(
        self, proc: asyncio.subprocess.Process, pgid: int, pump: OutputPump, run_id: str
    ) -> None:
        await _leader_exit(proc)
        # Background children may still hold the pipes open; give them a moment, then
        # end the group (and anything that left it) so the command's call returns.
        _done, pending = await asyncio.wait(pump.readers, timeout=_DRAIN_AFTER_EXIT_S)
        if pending:
            _signal_group(pgid, signal.SIGKILL)
            await asyncio.to_thread(kill_marked, run_id)
            await self._drain(pump)
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.to_thread(kill_marked, run_id)  # nothing of the run outlives it
        await proc.wait()

    async def _terminate(
        self, proc: asyncio.subprocess.Process, pgid: int, pump: OutputPump
    ) -> None:
        _signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _TERM_GRACE_S)
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.to_thread(kill_marked, self._marks.get(pgid, ""))
        await proc.wait()
        await self._drain(pump)

    @staticmethod
    async def _drain(pump: OutputPump) -> None:
        """Read what the ended group left in the pipes, then stop reading: a process
        nothing could find (one that cleared its environment and left the group) may
        still hold them open."""
        if pump.readers:
            await asyncio.wait(pump.readers, timeout=_TERM_GRACE_S)
        pump.stop()
        if pump.readers:
            await asyncio.wait(pump.readers)
