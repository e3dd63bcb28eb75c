"""TRAMP file names read into remote targets; the methods that cannot be are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_shell_bridge.remote.connection import control_dir, default_runtime_dir
from agent_shell_bridge.remote.errors import RemoteFailed, RemoteRefused
from agent_shell_bridge.remote.mirror import mirror_dir, open_mirror
from agent_shell_bridge.remote.target import RemoteTarget, parse_tramp


def _which(found: set[str]) -> object:
    return lambda name: f"/usr/bin/{name}" if name in found else None


def test_ssh_names_with_user_port_and_path() -> None:
    t = parse_tramp("/ssh:dev@build.example.org#2222:/srv/app/", which=_which(set()))
    assert t == RemoteTarget("ssh", "build.example.org", "/srv/app", user="dev", port=2222)
    assert t.tramp_prefix == "/ssh:dev@build.example.org#2222:"
    assert t.label == "dev@build.example.org#2222"
    assert parse_tramp("/scp:host:/x", which=_which(set())).kind == "ssh"
    assert parse_tramp("/ssh:host:", which=_which(set())).path == "/"


def test_containers_need_their_program_here() -> None:
    t = parse_tramp("/docker:web:/app", which=_which({"docker"}))
    assert (t.kind, t.host, t.path) == ("docker", "web", "/app")
    with pytest.raises(RemoteRefused, match="needs the podman program"):
        parse_tramp("/podman:web:/app", which=_which({"docker"}))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/sudo:root@localhost:/etc", "/sudo: is not supported"),
        ("/ftp:me@host:/pub", "/ftp: is not supported"),
        ("/ssh:a|ssh:b:/x", "plain host name|single-hop"),
        ("/ssh:-oProxyCommand=x:/x", "plain host name"),
        ("/ssh:-F.evil:/x", "plain host name"),  # never an option of ssh
        ("/podman:-t1:/x", "plain host name"),  # nor of podman exec
        ("/ssh:-x@host:/x", "plain user name|single-hop"),
        ("/srv/app", "not a single-hop"),
        ("/ssh:host:/a\nb", "neither NUL nor newline"),
    ],
)
def test_refused_with_a_one_line_reason(name: str, why: str) -> None:
    with pytest.raises(RemoteRefused, match=why) as info:
        parse_tramp(name, which=_which({"podman"}))
    assert "\n" not in info.value.message


def test_mirror_is_keyed_by_host_and_path(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path)}
    a = parse_tramp("/ssh:dev@h#22:/srv/应用", which=_which(set()))
    b = parse_tramp("/ssh:dev@h#22:/srv/other/应用", which=_which(set()))
    assert mirror_dir(a, env) != mirror_dir(b, env)
    assert mirror_dir(a, env).parent == tmp_path / "agent-shell" / "remote" / "dev@h#22"
    made = open_mirror(a, env)
    assert (made / ".agent-shell").is_dir()
    assert (made / "project.txt").read_text(encoding="utf-8") == "/ssh:dev@h#22:/srv/应用\n"
    assert made.stat().st_mode & 0o777 == 0o700


def test_the_control_directory_is_private(tmp_path: Path) -> None:
    made = control_dir(tmp_path / "run")
    assert made.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o700
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "planted").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RemoteFailed, match="not a directory of this user's"):
        control_dir(tmp_path / "planted")
    assert default_runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "agent-shell"
    assert default_runtime_dir({}).name == f"agent-shell-{os.getuid()}"
