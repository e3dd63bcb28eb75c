"""One sandboxed command: the bubblewrap argv, its filter's descriptor, its environment.

Every wall, in the order bubblewrap builds them:

- its own user namespace with every capability dropped (as root too: a root that
  kept them could ``umount`` the read-only ``.git``), no nested user namespaces,
  its own PID, IPC, UTS and cgroup namespaces, a new terminal session, and no
  network unless asked for (a loopback of its own, or the one its session's
  commands share, :mod:`.netns`);
- the filesystem of :mod:`.layout`: system, toolchains and ``PATH`` prefixes
  read-only, private ``/tmp``, a ``$HOME`` holding only those and a fresh
  ``~/.cache``;
- the project roots writable, except ``.git`` (and the repository a ``.git`` file
  points to), ``.agent-shell`` (the bridge's records and the project's trusted
  settings) — only ``.agent-shell/workspace`` stays writable;
- every secret of the one list masked wherever something above shows it, and every
  socket and FIFO there (:mod:`.special_files`): a bind stops neither ``connect()``
  nor a FIFO's reader;
- the seccomp filter of :mod:`.seccomp`, and Landlock's scopes (:mod:`.landlock`);
- an environment without the addresses of the user's sessions (agent, bus, tmux,
  Emacs server, display).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..policy.secrets import expanded_secret_paths
from . import landlock
from .kit import SandboxKit
from .layout import etc_masks, system_binds, visible_paths
from .netns import SharedNetwork
from .special_files import SpecialFileIndex

__all__ = ["IPC_VARIABLES", "SandboxLaunch", "SandboxSpec", "sandbox_environment"]

# System trees where software keeps state (sockets among it) that the sandbox shows.
_INDEXED_SYSTEM = ("/opt",)
# Directories bound read-only over a writable root, and the one re-opened inside.
_READ_ONLY_IN_ROOT = (".git", ".agent-shell")
_WRITABLE_IN_RECORDS = ".agent-shell/workspace"
# Variables that tell a program where the user's live sessions listen.
IPC_VARIABLES = frozenset(
    {
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "GPG_AGENT_INFO",
        "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS",
        "DBUS_STARTER_ADDRESS",
        "DBUS_STARTER_BUS_TYPE",
        "TMUX",
        "TMUX_PANE",
        "TMUX_TMPDIR",
        "STY",
        "EMACS_SOCKET_NAME",
        "EMACS_SERVER_FILE",
        "XDG_RUNTIME_DIR",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "WAYLAND_SOCKET",
        "XAUTHORITY",
        "DOCKER_HOST",
        "CONTAINER_HOST",
        "KRB5CCNAME",
        "PULSE_SERVER",
        "PIPEWIRE_REMOTE",
        "NVIM",
        "NVIM_LISTEN_ADDRESS",
        "KITTY_LISTEN_ON",
        "SWAYSOCK",
        "I3SOCK",
        "HYPRLAND_INSTANCE_SIGNATURE",
        "GNOME_KEYRING_CONTROL",
        "AT_SPI_BUS_ADDRESS",
        "SESSION_MANAGER",
        "NOTIFY_SOCKET",
    }
)
# The same kind of variable under names not on the list.
_IPC_NAME = re.compile(r"SOCK(ET)?(_NAME|_PATH)?$|_BUS_ADDRESS$|_IPC_HOOK|LISTEN_ON$")
_IPC_VALUE = re.compile(r"^(unix|abstract):|[;,]unix:")


def sandbox_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that point at the user's sessions."""
    return {
        name: value
        for name, value in env.items()
        if name not in IPC_VARIABLES and not _IPC_NAME.search(name) and not _IPC_VALUE.search(value)
    }


@dataclass(slots=True)
class SandboxLaunch:
    """What the runner needs to start one sandboxed command (valid inside ``launch``)."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    # Runs in the child before bubblewrap starts (Landlock's domain); None: nothing.
    preexec: Callable[[], None] | None = None
    _fds: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """How to wrap commands: the writable roots, the home to protect, the network."""

    kit: SandboxKit
    roots: tuple[Path, ...]
    home: Path | None
    network: bool = False
    extra_secrets: tuple[str, ...] = ()
    # The user's additions to what is shown read-only (absolute, or under $HOME).
    visible: tuple[str, ...] = ()
    # The roots are shown read-only (a role confined to some files, the tester).
    roots_read_only: bool = False
    # The session's sockets and FIFOs found so far (None: look everywhere afresh).
    specials: SpecialFileIndex | None = field(default=None, compare=False, repr=False)
    # Without network: the session's one namespace (its loopback shared by its
    # commands and jobs) instead of a new one per command (see .netns).
    shared_net: SharedNetwork | None = field(default=None, compare=False, repr=False)

    def mounts(self, env: Mapping[str, str]) -> list[str]:
        """The filesystem part of the argv (see the module doc); it looks at the disk,
        so the runner calls it in a thread."""
        out: list[str] = []
        for option, what, where in system_binds(network=self.network):
            out += [option, what, where]
        out += ["--dev", "/dev", "--proc", "/proc"]
        # Private, empty mounts inside the sandbox, not files of ours.
        for private in ("/tmp", "/var/tmp", "/dev/shm"):  # noqa: S108
            out += ["--tmpfs", private]
        home = self._home_to_hide()
        if home is not None:
            out += ["--tmpfs", str(home), "--tmpfs", str(home / ".cache")]
        shown = visible_paths(
            self.home,
            path_env=env.get("PATH", os.defpath),
            extra=self.visible,
            roots=self.roots,
            env=env,
        )
        for source, dest in shown:
            out += ["--ro-bind-try", str(source), str(dest)]
        for root in self.roots:
            out += self._root(root)
        shown_at = [dest for _, dest in shown]
        out += self._masks(shown_at)
        index = self.specials if self.specials is not None else SpecialFileIndex()
        trees = [*self.roots, *shown_at, *(Path(p) for p in _INDEXED_SYSTEM if os.path.isdir(p))]
        for special in index.find(trees):
            out += ["--ro-bind-try", "/dev/null", special]
        if home is not None:
            out += ["--remount-ro", str(home)]
        # The new root itself (where the mount points were made) takes no writes.
        return [*out, "--remount-ro", "/"]

    @contextmanager
    def launch(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        mounts: Sequence[str] | None = None,
    ) -> Iterator[SandboxLaunch]:
        """The launch of ``argv`` in ``cwd``; the filter's descriptor closes on exit.

        ``mounts`` is :meth:`mounts`' result, made beforehand off the event loop.
        """
        program = self._filter()
        fds: list[int] = []
        try:
            if program is not None:
                fd = os.memfd_create("agent-shell-seccomp", os.MFD_CLOEXEC)
                fds.append(fd)
                os.write(fd, program)
                os.lseek(fd, 0, os.SEEK_SET)
            # Decided once: the argv and the child's set-up must agree on it.
            joins = self._joins_network
            out = [self.kit.bwrap, *self._namespaces(joins=joins)]
            out += list(mounts) if mounts is not None else self.mounts(env)
            out += ["--setenv", "TMPDIR", "/tmp"]  # noqa: S108
            if fds:
                out += ["--seccomp", str(fds[0])]
            out += ["--chdir", str(cwd), "--", *argv]
            preexec = landlock.scope_entrant() if self.kit.scopes else None
            if joins:
                assert self.shared_net is not None
                preexec = self.shared_net.entrant(preexec)
            yield SandboxLaunch(
                argv=out,
                env=sandbox_environment(env),
                pass_fds=tuple(fds),
                preexec=preexec,
                _fds=fds,
            )
        finally:
            for fd in fds:
                os.close(fd)

    @property
    def _joins_network(self) -> bool:
        return not self.network and self.shared_net is not None and self.shared_net.alive

    def _filter(self) -> bytes | None:
        if self.network and not self.kit.scopes:
            return self.kit.seccomp_no_unix
        return self.kit.seccomp

    def _namespaces(self, *, joins: bool = False) -> list[str]:
        out = [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        if not self.network and not joins:
            out.append("--unshare-net")
        if self.kit.disable_userns:
            out.append("--disable-userns")
        return [*out, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]

    def _home_to_hide(self) -> Path | None:
        """``$HOME`` to replace by an empty read-only one; not when a root shows it."""
        home = self.home
        if home is None or not home.is_absolute() or home == Path("/") or not home.is_dir():
            return None
        if any(home == root or root in home.parents for root in self.roots):
            return None
        return home

    def _root(self, root: Path) -> list[str]:
        out = ["--ro-bind" if self.roots_read_only else "--bind", str(root), str(root)]
        for name in _READ_ONLY_IN_ROOT:
            inner = root / name
            if inner.is_symlink():
                # A link is not a mount point: it is the scan after the run
                # (.git_metadata) that catches a replaced one. Its target stays
                # read-only for git inside.
                real = Path(os.path.realpath(inner))
                if real.exists():
                    out += ["--ro-bind", str(real), str(real)]
            elif inner.exists():
                out += ["--ro-bind", str(inner), str(inner)]
        for gitdir in _repository_dirs(root):
            out += ["--ro-bind-try", str(gitdir), str(gitdir)]
        workspace = root / _WRITABLE_IN_RECORDS
        if workspace.is_dir() and not workspace.is_symlink() and not self.roots_read_only:
            out += ["--bind", str(workspace), str(workspace)]
        return out

    def _masks(self, shown: Sequence[Path]) -> list[str]:
        """Empty files and directories over every secret something shows."""
        out: list[str] = []
        places = [*shown, *self.roots]
        if self.home is not None:
            for secret in expanded_secret_paths(
                self.home, extra=self.extra_secrets, existing_only=True
            ):
                if not any(secret == p or p in secret.parents for p in places):
                    continue
                if secret.is_dir():
                    out += ["--tmpfs", str(secret), "--remount-ro", str(secret)]
                else:
                    out += ["--ro-bind", "/dev/null", str(secret)]
        if os.geteuid() == 0:
            for secret_file in etc_masks():
                if os.path.isdir(secret_file):
                    out += ["--tmpfs", secret_file, "--remount-ro", secret_file]
                else:
                    out += ["--ro-bind", "/dev/null", secret_file]
        return out


def _repository_dirs(root: Path) -> list[Path]:
    """Where git inside the sandbox finds the project's repository, outside ``root``:
    the directory a ``.git`` file points to (a worktree, a submodule) and its
    common directory, or the ``.git`` of a repository ``root`` lies in."""
    dotgit = root / ".git"
    if not os.path.lexists(dotgit):
        for parent in root.parents:
            if os.path.lexists(parent / ".git"):
                dotgit = parent / ".git"
                break
        else:
            return []
        if dotgit.is_dir():
            return [Path(os.path.realpath(dotgit))]
    if not dotgit.is_file():
        return []
    try:
        pointer = dotgit.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return []
    if not pointer.startswith("gitdir:"):
        return []
    gitdir = Path(os.path.realpath(dotgit.parent / pointer[len("gitdir:") :].strip()))
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        common = ""
    if common:
        found.append(Path(os.path.realpath(gitdir / common)))
    return [p for p in found if p.is_dir()]
