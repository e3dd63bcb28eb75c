"""The bridge replays home_paths.jsonl, the corpus the Emacs side replays too.

Expansion rows: ``~`` and ``$HOME`` read as a shell reads them (``~user`` and other
variables refused). Decision rows: the policy's verdict on a fake $HOME holding
credential files (one reached through a symlinked ``.ssh``), with the project
either a folder of its own or $HOME itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.errors import PathNotAllowed
from agent_shell_bridge.policy.paths import Confinement, expand_home

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "policy" / "home_paths.jsonl"
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line
]
HOME_FILES = (
    "dotfiles/ssh/id_rsa",
    "dotfiles/ssh/authorized_keys",
    ".gnupg/private-keys-v1.d/k.key",
    ".aws/credentials",
    ".netrc",
    ".pypirc",
    ".docker/config.json",
    ".docker/daemon.json",
    ".config/gh/hosts.yml",
    ".config/ghostty/config",
    ".kube/config",
    ".authinfo",
    ".authinfo.gpg",
    ".password-store/site.gpg",
    ".local/share/keyrings/login.keyring",
    "notes.txt",
    "src/main.py",
    ".sshx/notes",
    "private/creds.txt",
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    for name in HOME_FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("SECRET-或-plain\n", encoding="utf-8")
    os.symlink("dotfiles/ssh", root / ".ssh")
    os.symlink(".ssh", root / "ssh_link")
    (tmp_path / "project").mkdir()
    return root


def test_home_corpus_is_not_empty() -> None:
    assert sum("expands" in r for r in ROWS) > 15
    assert sum("decision" in r for r in ROWS) > 20


@pytest.mark.parametrize("row", [r for r in ROWS if "expands" in r], ids=lambda r: r["path"])
def test_home_corpus_expansion(row: dict[str, Any], home: Path) -> None:
    want = row["expands"]
    if want is None:
        with pytest.raises(PathNotAllowed):
            expand_home(row["path"], home)
    else:
        assert expand_home(row["path"], home) == want.replace("{home}", str(home))


@pytest.mark.parametrize("row", [r for r in ROWS if "decision" in r], ids=lambda r: r["path"])
def test_home_corpus_decision(row: dict[str, Any], home: Path) -> None:
    root = home if row["root"] == "home" else home.parent / "project"
    policy = Confinement.create(root, home=home)
    try:
        policy.resolve(row["path"], row["op"])
        got = "allow"
    except PathNotAllowed:
        got = "deny"
    assert got == row["decision"], row
