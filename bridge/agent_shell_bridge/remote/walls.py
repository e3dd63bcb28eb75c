"""The remote sandbox: the bubblewrap argv of one command, from the host's probe.

The same walls as the local sandbox where they can be built from afar: its own
user, PID, IPC, UTS and cgroup namespaces with every capability dropped, a new
terminal session, no network unless asked for; the host's system directories
read-only, a private ``/tmp``, ``/var/tmp`` and ``/run`` and a ``$HOME`` holding
only the toolchains found there (read-only, their credential files masked) — so no
socket of the user's sessions (an Emacs server, an ssh-agent, a bus) is
reachable, and the environment loses their addresses too; the project writable,
except its ``.git`` and ``.agent-shell``. Not built remotely: the seccomp filter,
Landlock and the special-file index of the local sandbox (see ``doc/remote.org``).
"""

from __future__ import annotations

from collections.abc import Sequence
from posixpath import join, normpath

from .probe import RemoteProbe

__all__ = ["remote_bwrap_argv"]

_READ_ONLY_IN_ROOT = (".git", ".agent-shell")
# Each a fresh tmpfs inside: the host's are never shown.
_PRIVATE = ("/tmp", "/var/tmp", "/run")  # noqa: S108


def remote_bwrap_argv(
    probe: RemoteProbe,
    command: Sequence[str],
    *,
    root: str,
    cwd: str,
    network: bool,
    writable: bool = True,
) -> list[str]:
    """The argv that runs COMMAND in the remote host's bubblewrap (ROOT resolved there)."""
    assert probe.bwrap is not None
    argv = [probe.bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc"]
    argv += ["--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for path, kind in sorted(probe.system.items()):
        if kind == "dir":
            argv += ["--ro-bind", path, path]
        elif kind.startswith("link:"):
            argv += ["--symlink", kind.removeprefix("link:"), path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for private in _PRIVATE:
        argv += ["--tmpfs", private]
    home = normpath(probe.home)
    argv += ["--tmpfs", home]
    for rel in probe.toolchains:  # read-only, their credentials masked
        shown = join(home, rel)
        argv += ["--ro-bind", shown, shown]
    for path, kind in probe.masked:
        # As the local sandbox masks them (spec.py): an empty read-only folder, or
        # /dev/null, which a user namespace's nodev mount makes unreadable too.
        if kind == "dir":
            argv += ["--tmpfs", path, "--remount-ro", path]
        else:
            argv += ["--ro-bind", "/dev/null", path]
    root = normpath(root)
    argv += ["--bind" if writable else "--ro-bind", root, root]
    for sub in _READ_ONLY_IN_ROOT:
        inside = join(root, sub)
        argv += ["--ro-bind-try", inside, inside]
    argv += ["--setenv", "HOME", home, "--setenv", "TMPDIR", "/tmp"]  # noqa: S108 - its own
    argv += ["--chdir", normpath(cwd), "--", *command]
    return argv
