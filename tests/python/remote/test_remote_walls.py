"""The remote sandbox's argv and the container commands, built from what a host said."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agent_shell_bridge.remote.connection import RemoteConnection
from agent_shell_bridge.remote.probe import RemoteProbe
from agent_shell_bridge.remote.target import RemoteTarget
from agent_shell_bridge.remote.walls import remote_bwrap_argv

PROBE = RemoteProbe(
    uid=1000,
    user="dev",
    home="/home/dev",
    python="3.11.2",
    bwrap="/usr/bin/bwrap",
    bwrap_works=True,
    bwrap_detail="works",
    system={"/usr": "dir", "/bin": "link:usr/bin", "/etc": "dir"},
)


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_the_walls_of_an_unasked_command() -> None:
    argv = remote_bwrap_argv(
        PROBE,
        ["bash", "-c", "make test"],
        root="/home/dev/app",
        cwd="/home/dev/app/sub",
        network=False,
    )
    assert argv[0] == "/usr/bin/bwrap"
    for flag in (
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
    ):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert ("/usr", "/usr") in _pairs(argv, "--ro-bind")
    assert ("usr/bin", "/bin") in _pairs(argv, "--symlink")
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert {"/tmp", "/var/tmp", "/run", "/home/dev"} <= set(tmpfs)
    # The project is writable, shown after the empty home it lies in; .git is not.
    assert argv.index("/home/dev") < argv.index("--bind")
    assert ("/home/dev/app", "/home/dev/app") in _pairs(argv, "--bind")
    assert ("/home/dev/app/.git", "/home/dev/app/.git") in _pairs(argv, "--ro-bind-try")
    assert argv[argv.index("--chdir") + 1] == "/home/dev/app/sub"
    assert argv[-4:] == ["--", "bash", "-c", "make test"]


def test_network_and_a_read_only_project() -> None:
    argv = remote_bwrap_argv(
        PROBE, ["true"], root="/srv/app/", cwd="/srv/app", network=True, writable=False
    )
    assert "--unshare-net" not in argv
    assert "--bind" not in argv
    assert ("/srv/app", "/srv/app") in _pairs(argv, "--ro-bind")


def test_no_sandbox_there_is_said_so() -> None:
    bare = RemoteProbe(1000, "dev", "/home/dev", "3.11", None, False, "bubblewrap is not installed")
    assert not bare.sandboxed
    assert bare.status().label == "no sandbox (remote)"
    assert not bare.status().available
    assert PROBE.status().label == "bubblewrap (remote)"


def test_commands_are_one_quoted_line_for_ssh_and_an_argv_for_containers(tmp_path: Path) -> None:
    ssh = RemoteConnection(RemoteTarget("ssh", "h", "/srv", user="u", port=2222), tmp_path)
    argv = ssh.argv(["echo", "a b", "$(id)", "'"])
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and "ProxyCommand=false" in argv
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "u"
    assert argv[-3:] == ["h", "--", "echo 'a b' '$(id)' ''\"'\"''"]
    docker = RemoteConnection(RemoteTarget("docker", "web", "/app", user="node"), tmp_path)
    assert docker.argv(["echo", "a b"]) == [
        "docker",
        "exec",
        "-i",
        "-u",
        "node",
        "web",
        "echo",
        "a b",
    ]


def test_toolchains_are_shown_read_only_with_their_credentials_masked() -> None:
    probe = dataclasses.replace(
        PROBE,
        toolchains=(".cargo", ".m2"),
        masked=(("/home/dev/.cargo/credentials.toml", "file"), ("/home/dev/.m2/keys", "dir")),
    )
    argv = remote_bwrap_argv(
        probe, ["true"], root="/home/dev/app", cwd="/home/dev/app", network=False
    )
    ro = _pairs(argv, "--ro-bind")
    assert ("/home/dev/.cargo", "/home/dev/.cargo") in ro
    assert ("/dev/null", "/home/dev/.cargo/credentials.toml") in ro
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert tmpfs.index("/home/dev") < tmpfs.index("/home/dev/.m2/keys")
    assert argv.index("/home/dev/.cargo") < argv.index("/home/dev/.cargo/credentials.toml")
