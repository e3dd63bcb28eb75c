"""One list of the user's secrets, for the policy, the sandbox and Emacs.

The list (secrets.py) is matched by components, case-folded, with ``*`` inside one
name; ``initialize`` returns it with the user's own additions, which then reach the
session's policy and its sandbox; ``policy secrets`` prints it for Emacs before any
bridge runs. Real files under a temporary $HOME, real subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.policy.secrets import (
    BUILTIN,
    SECRET_PATHS,
    SecretList,
    check_entry,
    expanded_secret_paths,
    is_secret,
)
from agent_shell_bridge.process.runner import ProcessRunner
from agent_shell_bridge.sandbox import SANDBOX_ENV, SandboxSpec, detect_sandbox
from agent_shell_bridge.types import Decision

# What review found reachable, by tool: each must be a secret.
NEW_SECRETS = (
    ".claude.json", ".claude/.credentials.json", ".codex/auth.json", ".gemini/settings.json",
    ".config/github-copilot/hosts.json", ".continue/config.json", ".cursor/mcp.json",
    ".aider.conf.yml", ".config/gcloud/application_default_credentials.json",
    ".azure/msal_token_cache.json", ".aws/sso/cache/abc.json", ".config/doctl/config.yaml",
    ".config/linode-cli", ".oci/config", ".bluemix/config.json", ".netrc", ".fly/config.yml",
    ".local/share/com.vercel.cli/auth.json", ".config/netlify/config.json",
    ".terraform.d/credentials.tfrc.json", ".pulumi/credentials.json", ".pgpass", ".my.cnf",
    ".mylogin.cnf", ".dbshell", ".mongoshrc.js", ".cassandra/cqlshrc",
    ".config/containers/auth.json", ".config/helm/registry/config.json", ".docker/config.json",
    ".yarnrc.yml", ".gem/credentials", ".m2/settings.xml", ".m2/settings-security.xml",
    ".gradle/gradle.properties", ".nuget/NuGet/NuGet.Config", ".config/pip/pip.conf",
    ".cargo/credentials.toml", ".mozilla/firefox/x.default/logins.json",
    ".config/google-chrome/Default/Login Data", ".config/chromium/Default/Cookies",
    ".config/BraveSoftware/Brave-Browser/Default/Cookies", ".config/microsoft-edge/Default/x",
    ".thunderbird/x.default/logins.json", ".bash_history", ".zsh_history", ".zhistory",
    ".local/share/fish/fish_history", ".python_history", ".psql_history", ".mysql_history",
    ".sqlite_history", ".node_repl_history", ".lesshst", ".rediscli_history", ".emacs",
    ".emacs.el", ".emacs.d/init.el", ".emacs.d/custom.el", ".config/emacs/init.el",
    ".config/emacs/custom.el", ".emacs.d/.authinfo.gpg", ".config/Bitwarden CLI/data.json",
)  # fmt: skip
# Near misses and toolchains the sandbox keeps: never secrets.
NOT_SECRETS = (
    ".m2/repository/x.jar", ".gradle/caches/x", ".cargo/registry/x", ".pulumi/plugins/x",
    ".emacs.d/elpa/x.el", ".emacs.d.bak/init.el", ".emacsx", ".config/emacs/early-init.el",
    ".config/helm/cache/x", ".local/share/fish/functions/x.fish", "src/.bash_history",
    "history.txt", ".config/chromium-tools", ".claudex", ".pgpassx", ".bash_historyx/x",
)  # fmt: skip


@pytest.mark.parametrize("rel", NEW_SECRETS)
def test_the_credential_stores_of_common_tools_are_secrets(rel: str, tmp_path: Path) -> None:
    assert is_secret(tmp_path / rel, tmp_path), rel
    assert is_secret(tmp_path / rel.upper(), tmp_path), rel  # case-insensitive systems


@pytest.mark.parametrize("rel", NOT_SECRETS)
def test_near_misses_and_toolchains_are_not(rel: str, tmp_path: Path) -> None:
    assert not is_secret(tmp_path / rel, tmp_path), rel


def test_entries_are_relative_names_below_home() -> None:
    assert check_entry("~/vault/") == "vault"
    assert check_entry("./a//b") == "a/b"
    for bad in ("", "/etc/passwd", "../x", "a/../../x", "~/", "a\x00b"):
        with pytest.raises(ValueError):
            check_entry(bad)
    extended = BUILTIN.with_extra(["Vault/*.key"])
    assert extended.entries == (*SECRET_PATHS, "Vault/*.key")
    assert extended.names("vault/a.key") and extended.names("VAULT/B.KEY/x")
    assert not extended.names("vault/a.txt") and not BUILTIN.names("vault/a.key")
    # Only `*` is special, as on the Emacs side: `?` and `[` are plain characters.
    odd = SecretList(["a?c", "[x]"])
    assert odd.names("a?c") and not odd.names("abc")
    assert odd.names("[x]/y") and not odd.names("x")


def test_matching_the_list_stays_fast() -> None:
    """The policy matches every operand of every command against the list."""
    home = "/home/u"
    paths = [f"{home}/src/proj/module{i}/file{i}.py" for i in range(2_000)]
    paths += [f"{home}/.config/tool{i}/x" for i in range(2_000)]
    started = time.perf_counter()
    for path in paths:
        BUILTIN.is_secret_resolved(path, home)
    per_path = (time.perf_counter() - started) / len(paths)
    assert per_path < 20e-6, f"{per_path * 1e6:.1f} µs per path"


def test_the_sandbox_masks_what_exists_of_the_list(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for rel in (".claude.json", ".zsh_history", ".config/Bitwarden CLI/data.json", "vault/k"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("秘密\n", encoding="utf-8")
    (home / ".config" / "ghostty").mkdir()
    os.symlink(home / "nowhere", home / ".pgpass")  # dangling: nothing to mask
    masked = {
        str(p.relative_to(home))
        for p in expanded_secret_paths(home, extra=["vault"], existing_only=True)
    }
    assert masked == {".claude.json", ".zsh_history", ".config/Bitwarden CLI", "vault"}
    named = {str(p.relative_to(home)) for p in expanded_secret_paths(home)}
    assert {".pgpass", ".claude.json", ".authinfo", ".netrc"} <= named


@pytest.fixture
def home_root(tmp_path: Path) -> tuple[Path, PolicyEngine]:
    """A policy whose project is $HOME itself, so only the secret list stands in the way."""
    home = tmp_path / "home"
    for rel in (".pgpass", ".claude.json", ".bash_history", ".emacs.d/init.el", "vault/k", "a.txt"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("秘密\n", encoding="utf-8")
    return home, PolicyEngine(home, home=home, extra_secrets=["vault"])


@pytest.mark.parametrize(
    "command",
    [
        "cat ~/.pgpass",
        "cat .pgpass",
        "head -n 5 ~/.claude.json",
        "grep -n key ~/.emacs.d/init.el",
        "tail ~/.bash_history",
        "cat vault/k",
        "wc -l < .pgpass",
    ],
)
def test_the_policy_asks_before_reading_a_secret(
    home_root: tuple[Path, PolicyEngine], command: str
) -> None:
    _, engine = home_root
    verdict = engine.check_command(command)
    assert verdict.decision is Decision.CONFIRM, (command, verdict)
    assert "secret" in verdict.reason, verdict.reason
    assert engine.check_command("cat a.txt").decision is Decision.ALLOW


def test_the_file_tools_refuse_a_secret_of_the_users_own(
    home_root: tuple[Path, PolicyEngine],
) -> None:
    _, engine = home_root
    for path in ("vault/k", "~/.pgpass", ".claude.json"):
        assert engine.check_path(path, "read").decision is Decision.DENY, path
    assert PolicyEngine(engine.root, home=engine.root).check_path("vault/k", "read").decision is (
        Decision.ALLOW
    )


async def test_initialize_returns_the_list_the_session_uses(
    app_client: Any, runtime: Any, tmp_path: Path
) -> None:
    result = await app_client.result("initialize", {"secret_paths": ["vault", "~/keys/*.pem"]})
    assert result["secret_paths"] == [*SECRET_PATHS, "vault", "keys/*.pem"]
    project = tmp_path / "proj"
    project.mkdir()
    opened = await app_client.result("session/new", {"cwd": str(project)})
    live = runtime.sessions[opened["sessionId"]]
    assert list(live.policy.secrets.entries) == result["secret_paths"]
    assert live.config.extra_secrets == ("vault", "keys/*.pem")
    bad = await app_client.rpc("initialize", {"secret_paths": ["../outside"]})
    assert bad["error"]["code"] == -32602
    # Without additions the list is the built-in one, as the command line prints it.
    plain = await app_client.result("initialize", {"secret_paths": []})
    printed = subprocess.run(
        [sys.executable, "-m", "agent_shell_bridge.cli", "policy", "secrets"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(printed.stdout) == plain["secret_paths"] == list(SECRET_PATHS)


@pytest.mark.parametrize("where", ["home is the project", "inside toolchains"])
async def test_a_sandboxed_command_reads_none_of_the_new_secrets(
    where: str, tmp_path: Path
) -> None:
    """Through the real sandbox, wherever it shows them: the whole home when it is the
    project, and credential files inside the toolchain folders it always shows."""
    status = detect_sandbox({k: v for k, v in os.environ.items() if k != SANDBOX_ENV})
    if not status.available or status.kit is None:
        pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    home = tmp_path / "home"
    if where == "home is the project":
        secrets = (".claude.json", ".pgpass", ".zsh_history", ".emacs.d/init.el", "vault/k.txt")
        root = home
    else:
        secrets = (".m2/settings.xml", ".cargo/credentials.toml", ".gradle/gradle.properties")
        root = tmp_path / "proj"
        root.mkdir()
    for n, rel in enumerate(secrets):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"秘密-{n}\n", encoding="utf-8")
    (home / ".cargo" / "bin").mkdir(parents=True, exist_ok=True)
    spec = SandboxSpec(kit=status.kit, roots=(root,), home=home, extra_secrets=("vault",))
    runner = ProcessRunner(tmp_path / "logs")
    reads = "; ".join(f"cat ~/{rel}" for rel in secrets)
    result = await runner.run_shell(
        f"ls -d ~/.cargo/bin; {reads}; echo done",
        cwd=root,
        timeout_s=30,
        env={"HOME": str(home)},
        sandbox=spec,
    )
    assert result.stdout.splitlines()[0] == f"{home}/.cargo/bin"  # the folder is shown
    assert result.stdout.splitlines()[-1] == "done"
    assert "秘密" not in result.stdout + result.stderr
