"""What the sandbox's filesystem holds: an allowlist, never ``/`` minus a denylist.

A read-only bind of ``/`` hides nothing that can be *connected to*: the user's
Emacs server socket, the D-Bus session bus, a tmux or ssh-agent socket in the
runtime directory, docker's socket and any FIFO stay reachable through it. So the
sandbox starts from an empty root and shows only:

- the system (``/usr``, ``/etc``, ``/opt``, ``/sys``, the ``/bin`` and ``/lib``
  links …), read-only; as root, the few files there that only root could read
  (``/etc/shadow``, host keys) are masked;
- a private ``/tmp``, ``/var/tmp`` and ``/dev/shm``, a fresh ``/dev`` and ``/proc``;
- in ``$HOME`` only the toolchains (:data:`HOME_TOOLCHAINS` plus the user's own
  additions), read-only, and a private writable ``~/.cache``;
- the prefixes of the programs on ``PATH`` (a virtualenv, ``/usr/local``), read-only;
- the project's roots (:mod:`.spec` binds them).

Never ``/run``, ``/var/run``, ``$XDG_RUNTIME_DIR`` or the rest of ``$HOME``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..policy.secrets import is_any_secret

__all__ = [
    "ETC_ROOT_SECRETS",
    "FORBIDDEN",
    "HOME_TOOLCHAINS",
    "SYSTEM_PATHS",
    "Bind",
    "etc_masks",
    "system_binds",
    "visible_paths",
]

# Read-only system directories; the ones that are links (merged /usr) stay links.
SYSTEM_PATHS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/sys",
    "/nix",
    "/gnu",
)
# Language toolchains and package caches under $HOME, relative to it. Their own
# credential files (~/.cargo/credentials.toml, ~/.m2/settings.xml …) are on the
# secret list and masked inside them.
HOME_TOOLCHAINS = (
    ".cargo",
    ".rustup",
    ".pyenv",
    ".rbenv",
    ".rvm",
    ".gem",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".npm",
    ".pnpm-store",
    ".yarn",
    ".sdkman",
    ".asdf",
    ".m2",
    ".gradle",
    ".ivy2",
    ".sbt",
    ".cabal",
    ".ghcup",
    ".stack",
    ".opam",
    ".elan",
    ".julia",
    ".juliaup",
    ".dotnet",
    ".nuget/packages",
    ".pub-cache",
    ".nimble",
    ".conda",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    "go",
    ".virtualenvs",
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".local/share/pipx",
    ".local/share/virtualenvs",
    ".local/share/mise",
    ".local/share/pnpm",
    ".emacs.d/elpa",
    ".config/emacs/elpa",
)
# Never shown, whatever a setting or PATH says: where sockets and session state live
# (with $XDG_RUNTIME_DIR), and the shared temporary directories as a whole.
FORBIDDEN = ("/run", "/var/run", "/proc", "/dev")
_NOT_WHOLE = ("/", "/tmp", "/var/tmp", "/home")  # noqa: S108
# Files in /etc that only root can read; shown to a sandbox run as root they would
# be readable there (it keeps its uid, only its capabilities go).
ETC_ROOT_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/ssh/ssh_host_*_key",
    "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
    "/etc/docker/key.json",
)

Bind = tuple[str, str, str]  # (bwrap option, source, destination)


def system_binds(*, network: bool) -> list[Bind]:
    """The read-only system, links kept as links; with network, DNS's resolv.conf."""
    out: list[Bind] = []
    for name in SYSTEM_PATHS:
        if os.path.islink(name):
            out.append(("--symlink", os.readlink(name), name))
        elif os.path.isdir(name):
            out.append(("--ro-bind", name, name))
    if network:
        # /etc/resolv.conf often points into /run (systemd-resolved): show that one file.
        real = os.path.realpath("/etc/resolv.conf")
        if real.startswith("/run/") and os.path.isfile(real):
            out.append(("--ro-bind", real, real))
    return out


def etc_masks() -> list[str]:
    """The files of :data:`ETC_ROOT_SECRETS` present here (only a root run needs them)."""
    found: list[str] = []
    for pattern in ETC_ROOT_SECRETS:
        found.extend(sorted(glob.glob(pattern)) if "*" in pattern else [pattern])
    return [p for p in found if os.path.lexists(p)]


def visible_paths(
    home: Path | None,
    *,
    path_env: str,
    extra: Sequence[str],
    roots: Sequence[Path],
    env: Mapping[str, str],
) -> list[tuple[Path, Path]]:
    """The read-only binds besides the system's, as ``(source, destination)`` pairs.

    Toolchains in ``home``, the user's ``extra`` paths (absolute, or relative to
    ``home``), and the prefixes of ``PATH``'s directories; each shown where it is
    named and, when that is a link, also where it really lives. Left out: what
    does not exist, what the system or a root already shows, ``home`` itself and
    its ancestors, the forbidden places, and anything that is or holds a secret.
    """
    forbidden = _forbidden(env)
    blocked = {Path(p) for p in _NOT_WHOLE}
    if home is not None:
        blocked |= {home, *home.parents}
    candidates: list[Path] = []
    if home is not None:
        candidates += [home / name for name in HOME_TOOLCHAINS]
    for name in extra:
        path = Path(os.path.expanduser(name))
        if not path.is_absolute():
            if home is None:
                continue
            path = home / path
        candidates.append(path)
    candidates += _path_prefixes(path_env, home, blocked)
    out: list[tuple[Path, Path]] = []
    shown: list[Path] = []
    for path in candidates:
        named = Path(os.path.normpath(path))
        if not named.exists() or named in blocked:
            continue
        real = Path(os.path.realpath(named))
        places = {named, real}
        if any(_under(p, f) for p in places for f in forbidden) or real in blocked:
            continue
        if any(_under(p, s) for p in places for s in (*_system(), *roots, *shown)):
            continue
        if home is not None and is_any_secret([named, real], home):
            continue
        out.append((real, named))
        shown.append(named)
        if real != named:
            out.append((real, real))
            shown.append(real)
    return out


def _path_prefixes(path_env: str, home: Path | None, blocked: set[Path]) -> Iterable[Path]:
    """Each ``PATH`` directory, or the prefix it is the ``bin`` of (``/opt/tool``; a
    virtualenv's root holds its ``lib``). Under ``$HOME`` a prefix is taken only
    when it is an environment (``pyvenv.cfg``, ``conda-meta``): ``~/.local`` holds
    much more than programs."""
    for entry in path_env.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue  # a relative PATH entry would name a place inside the project
        path = Path(os.path.normpath(entry))
        prefix = path.parent
        if (
            path.name not in ("bin", "sbin")
            or prefix in blocked
            or (home is not None and _under(prefix, home) and not _is_environment(prefix))
        ):
            yield path
        else:
            yield prefix


def _is_environment(prefix: Path) -> bool:
    return (prefix / "pyvenv.cfg").is_file() or (prefix / "conda-meta").is_dir()


def _forbidden(env: Mapping[str, str]) -> list[Path]:
    out = [Path(p) for p in FORBIDDEN]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        out += [Path(runtime), Path(os.path.realpath(runtime))]
    return out


def _system() -> list[Path]:
    return [Path(p) for p in SYSTEM_PATHS if os.path.isdir(p) and not os.path.islink(p)]


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents
