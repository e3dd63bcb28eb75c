"""Remote projects: the project on another host (TRAMP), the bridge here.

- :mod:`.target`: a TRAMP file name read into a target (ssh, docker, podman; the
  rest refused);
- :mod:`.connection`: the one connection per host (an OpenSSH ControlMaster);
- :mod:`.container`: a ``/docker:``/``/podman:`` container's ``exec`` and whether it runs;
- :mod:`.helper`: the small program run on the host for each request;
- :mod:`.probe`: what the host offers, asked once per connection;
- :mod:`.walls`: the remote sandbox's bubblewrap argv;
- :mod:`.runner`: commands run there, under a watchdog tied to the channel;
- :mod:`.files`: files read and written there, confined after links resolve there;
- :mod:`.buffers`: the editor's buffers visiting them (Emacs over TRAMP), asked first;
- :mod:`.client_files`: the two as the session's "client files";
- :mod:`.mirror`: where the records stay (here, keyed by host and path);
- :mod:`.shipped`: the project's settings and ``AGENTS.md``, copied from there into
  the mirror, where they are read as a local project's;
- :mod:`.project`: the three together, connected once.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._face import lazy_face

if TYPE_CHECKING:
    from .connection import RemoteConnection
    from .errors import RemoteDisconnected, RemoteEscape, RemoteFailed, RemoteRefused
    from .files import RemoteFiles
    from .mirror import mirror_dir, open_mirror
    from .probe import RemoteProbe, probe_host
    from .project import RemoteProject
    from .runner import RemoteRun, RemoteRunner
    from .target import RemoteTarget, parse_tramp

__all__ = [
    "RemoteConnection",
    "RemoteDisconnected",
    "RemoteEscape",
    "RemoteFailed",
    "RemoteFiles",
    "RemoteProbe",
    "RemoteProject",
    "RemoteRefused",
    "RemoteRun",
    "RemoteRunner",
    "RemoteTarget",
    "mirror_dir",
    "open_mirror",
    "parse_tramp",
    "probe_host",
]

_WHERE = {
    "RemoteConnection": "connection",
    "RemoteDisconnected": "errors",
    "RemoteEscape": "errors",
    "RemoteFailed": "errors",
    "RemoteFiles": "files",
    "RemoteProbe": "probe",
    "RemoteProject": "project",
    "RemoteRefused": "errors",
    "RemoteRun": "runner",
    "RemoteRunner": "runner",
    "RemoteTarget": "target",
    "mirror_dir": "mirror",
    "open_mirror": "mirror",
    "parse_tramp": "target",
    "probe_host": "probe",
}

__getattr__ = lazy_face(__name__, _WHERE)
