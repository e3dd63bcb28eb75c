"""A remote project's own settings and nested AGENTS.md, over a real sshd.

The project's ``.agent-shell/allowlist.el`` (and ``config.el``, ``roles.el``) and its
``AGENTS.md`` files are on the host; the bridge reads them there through its
connection, and applies them under the same trust rules as a local project's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import payload_of, reject, running_rig, tool_messages
from agent_shell_bridge.project.instructions import FILE_CAP
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

ALLOWLIST = ';; 允许\n(setq agent-shell-allowlist \'((command . "rm -rf build")))\n'
ROLES = (
    "(setq agent-shell-roles\n"
    '      \'((:name "docs" :prompt "改进文档。" :tools ("read_file" "task_complete"))))\n'
)


CONFIG = """\
;; 项目设置
(setq agent-shell-sandbox nil)
(setq agent-shell-default-mode 'ask
      agent-shell-max-steps 7
      agent-shell-model "mock-远程")
(setq agent-shell-context-window 'big) ; not a number: ignored, as Emacs does
(shell-command "touch /tmp/never") ; not a setq: ignored, never evaluated
"""


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


@pytest.fixture
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's data dir (the mirror and the trust records go there) and a short
    runtime dir (sockets)."""
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield tmp_path / "data"
    shutil.rmtree(runtime, ignore_errors=True)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def remote_params(rig: SshRig, root: Path) -> dict[str, Any]:
    return {"remote": {"tramp": rig.tramp(str(root)), "sshOptions": rig.options}}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_remote_allowlist_applies_only_once_trusted(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    root = ssh_rig.make_project(
        f"allow-{os.getpid()}",
        {"build/out.txt": "old\n", ".agent-shell/allowlist.el": ALLOWLIST},
    )
    allowlist = root / ".agent-shell" / "allowlist.el"
    tramp = ssh_rig.tramp(str(root))
    steps = [
        call("run_command", command="rm -rf build"),
        {"text": "asked"},
        call("run_command", command="rm -rf build"),
        {"text": "removed"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as rig:
        # Trusting needs a session of that project: nothing is connected otherwise.
        early = await rig.client.rpc(
            "policy/trust_allowlist", {"cwd": tramp, "sha256": sha256(allowlist)}
        )
        assert early["error"]["code"] == -32602 and "no session" in early["error"]["message"]
        opened = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        sid = opened["sessionId"]
        mirror = Path(opened["root"])
        assert opened["allowlist"] == "untrusted"  # read there, not applied
        asked = await rig.turn(sid, "clean", answer=reject("not yet"))
        assert asked.end["stopReason"] == "end_turn", asked.end
        assert len(asked.permission_requests) == 1
        assert "rm -rf build" in json.dumps(asked.permission_requests[0])
        assert (root / "build" / "out.txt").is_file()
        # What Emacs shows and hashes is the host's file; the bridge reads it there again.
        stale = await rig.client.rpc(
            "policy/trust_allowlist", {"cwd": tramp, "sha256": hashlib.sha256(b"x").hexdigest()}
        )
        assert "changed after you reviewed it" in stale["error"]["message"]
        trusted = await rig.client.result(
            "policy/trust_allowlist", {"cwd": tramp, "sha256": sha256(allowlist)}
        )
        assert trusted["commands"] == ["rm -rf build"]
        assert rig.runtime.sessions[sid].policy.allowlist_status == "trusted"
        ran = await rig.turn(sid, "clean now")
        assert ran.end["stopReason"] == "end_turn", ran.end
        assert ran.permission_requests == []  # unasked, in the remote sandbox
        result = payload_of(tool_messages(rig.requests[-1])[-1])
        assert result["exit_code"] == 0 and result["sandbox"] == "bubblewrap (remote)"
        assert not (root / "build").exists()
        # The record is this machine's, keyed by the mirror; nothing was written there.
        records = json.loads(
            (local_dirs / "agent-shell" / "trusted-allowlists.json").read_text(encoding="utf-8")
        )
        assert records == {str(mirror.resolve()): sha256(allowlist)}
        assert sorted(p.name for p in (root / ".agent-shell").iterdir()) == ["allowlist.el"]
        # Any change there needs trust again: the next session does not apply it.
        allowlist.write_text(ALLOWLIST + ";; 改\n", encoding="utf-8")
        again = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        assert again["allowlist"] == "untrusted"


async def test_remote_settings_links_and_roles_keep_the_local_rules(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    """A symlinked allowlist is never trusted, a config.el turning the sandbox off
    waits for trust (its session settings do not), and a roles.el applies only once
    trusted, as locally."""
    root = ssh_rig.make_project(
        f"links-{os.getpid()}",
        {
            "shared.el": ALLOWLIST,
            ".agent-shell/config.el": CONFIG,
            ".agent-shell/roles.el": ROLES,
        },
    )
    (root / ".agent-shell" / "allowlist.el").symlink_to("../shared.el")
    os.lchown(root / ".agent-shell" / "allowlist.el", ssh_rig.uid, ssh_rig.uid)
    tramp = ssh_rig.tramp(str(root))
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, [{"text": "ok"}]) as rig:
        opened = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        assert opened["allowlist"] == "untrusted"
        assert opened["sandbox"]["label"] == "bubblewrap (remote)"
        assert opened["sandbox"]["projectSetting"] == "untrusted"
        # Its session settings apply as Emacs applies a local project's.
        assert opened["mode"] == "ask" and opened["model"] == "mock-远程"
        assert rig.runtime.sessions[opened["sessionId"]].max_steps == 7
        assert rig.runtime.sessions[opened["sessionId"]].config.context_window == (
            rig.runtime.config.context_window
        )
        linked = await rig.client.rpc(
            "policy/trust_allowlist", {"cwd": tramp, "sha256": sha256(root / "shared.el")}
        )
        assert "symlink" in linked["error"]["message"]
        config = root / ".agent-shell" / "config.el"
        off = await rig.client.result(
            "policy/trust_config", {"cwd": tramp, "sha256": sha256(config)}
        )
        assert off["sandbox"]["label"] == "no sandbox (remote)"
        live = rig.runtime.sessions[opened["sessionId"]]
        assert live.sandbox.label == "no sandbox (remote)" and live.sandbox_setting == "off"
        roles = root / ".agent-shell" / "roles.el"
        assert "docs" not in live.roles
        done = await rig.client.result("roles/trust", {"cwd": tramp, "sha256": sha256(roles)})
        assert done["roles"] == ["docs"]
        later = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        assert rig.runtime.sessions[later["sessionId"]].roles["docs"].prompt == "改进文档。"
        for method in ("mcp/trust", "hooks/trust"):  # files a remote session does not use
            refused = await rig.client.rpc(method, {"cwd": tramp, "sha256": "0" * 64})
            assert "is not used" in refused["error"]["message"], refused
        assert later["sandbox"]["label"] == "no sandbox (remote)"


async def test_nested_agents_md_on_the_host_reaches_the_model(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    secret = ssh_rig.home / f"outside-{os.getpid()}.md"
    secret.write_text("外面的秘密 never in the prompt\n", encoding="utf-8")
    root = ssh_rig.make_project(
        f"nested-{os.getpid()}",
        {
            "AGENTS.md": "根目录说明\n",
            "pkg/sub/AGENTS.md": "子目录说明：测试用 pytest，注释用中文。\n",
            "pkg/sub/mod.py": "x = 1\n",
            "leak/mod.py": "y = 2\n",
            "pipe/mod.py": "z = 3\n",
            "big/AGENTS.md": "长" * (FILE_CAP + 10),
            "big/mod.py": "w = 4\n",
        },
    )
    (root / "leak" / "AGENTS.md").symlink_to(secret)
    os.lchown(root / "leak" / "AGENTS.md", ssh_rig.uid, ssh_rig.uid)
    os.mkfifo(root / "pipe" / "AGENTS.md")  # never opened so that it blocks
    os.chown(root / "pipe" / "AGENTS.md", ssh_rig.uid, ssh_rig.uid)
    steps = [
        call("read_file", path="leak/mod.py"),
        call("read_file", path="pipe/mod.py"),
        call("read_file", path="big/mod.py"),
        call("read_file", path=f"{root}/pkg/sub/mod.py"),  # the host's name of it
        {"text": "读完了"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    try:
        async with running_rig(serve_app, here, steps) as rig:
            opened = await rig.client.result(
                "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
            )
            sid = opened["sessionId"]
            turn = await rig.turn(sid, "read them")
            assert turn.end["stopReason"] == "end_turn", turn.end
            sent = [json.dumps(r, ensure_ascii=False) for r in rig.requests]
            first, last = sent[0], sent[-1]
            assert "根目录说明" in first and "子目录说明" not in first
            assert "子目录说明" not in sent[-2]  # leak/ read first: its link out is not followed
            assert "子目录说明：测试用 pytest，注释用中文。" in last
            assert not any("外面的秘密" in body for body in sent)
            assert "长" * FILE_CAP in last and "长" * (FILE_CAP + 1) not in last  # capped
            assert any("pkg/sub/AGENTS.md now applies" in e["title"] for e in turn.log_entries()), (
                turn.log_entries()
            )
            # A resumed session reads it there again.
            await rig.runtime.sessions.pop(sid).aclose()
            await rig.client.result(
                "session/resume",
                {"sessionId": sid, "cwd": str(here), **remote_params(ssh_rig, root)},
            )
            live = rig.runtime.sessions[sid]
            assert live.instructions is not None
            assert [(f.label, f.truncated) for f in live.instructions.nested] == [
                ("big/AGENTS.md", True),
                ("pkg/sub/AGENTS.md", False),
            ]
            assert live.instructions.nested[1].text == "子目录说明：测试用 pytest，注释用中文。\n"
            assert not (Path(opened["root"]) / "pkg").exists()  # nothing copied for it
    finally:
        secret.unlink()
