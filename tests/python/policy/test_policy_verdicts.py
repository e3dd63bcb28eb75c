"""Every verdict of the command corpora, word for word, against a recorded reference.

tests/fixtures/policy/verdicts.jsonl holds, for each command of commands.jsonl and
links.jsonl judged in three settings (a separate home holding secrets, ``$HOME``
being the project itself, and running from ``src/``), the decision, risk and reason
the engine gave. It was recorded once from the engine before any speed work; a
change to the engine that alters any verdict (even only its wording) fails here and
must be looked at, and the file regenerated on purpose with::

    .venv/bin/python tests/python/policy/test_policy_verdicts.py --write

The tree judged against is built here; paths below the temporary directory appear
in reasons as ``{tmp}``, and
this process's ``/proc/<pid>`` as ``/proc/{pid}``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from test_policy_links import plant_links_out

from agent_shell_bridge.policy import PolicyEngine
from policy_tree import plant_other_repositories

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "policy"
EXPECTED = FIXTURES / "verdicts.jsonl"
SETTINGS = ("home", "home-is-root", "cwd-src")


def _commands() -> list[str]:
    seen: dict[str, None] = {}
    for name in ("commands.jsonl", "links.jsonl"):
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                seen.setdefault(str(json.loads(line)["command"]), None)
    return list(seen)


def build_tree(tmp: Path) -> tuple[Path, Path]:
    """A project with links, protected folders, secrets and other repositories (see
    policy_tree), and a home beside it."""
    root = tmp / "proj"
    tmp.mkdir(parents=True, exist_ok=True)
    for sub in ("src", "tests", "build", "sub", ".git/hooks", ".ssh", ".aws"):
        (root / sub).mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n", encoding="utf-8")
    (root / "README.md").write_text("说明\n", encoding="utf-8")
    (root / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (root / ".aws" / "credentials").write_text("[default]\n", encoding="utf-8")
    (root / ".netrc").write_text("machine x password y\n", encoding="utf-8")
    for name in ("logs", "sessions", "memory"):
        (root / ".agent-shell" / name).mkdir(parents=True)
    (root / ".agent-shell" / "logs" / "2026-01-01.org").write_text("* log\n", encoding="utf-8")
    (root / ".agent-shell" / "memory" / "note.md").write_text("备忘\n", encoding="utf-8")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret.txt").write_text("secret\n", encoding="utf-8")
    (tmp / "secret.txt").write_text("secret\n", encoding="utf-8")
    os.symlink(".ssh", root / "ssh_link")
    os.symlink(tmp / "outside", root / "sub" / "out")
    os.symlink("src", root / "in")
    os.symlink(".agent-shell/logs", root / "loglink")
    os.symlink(".", root / "loop")
    os.symlink("../..", root / "src" / "up")
    plant_other_repositories(root)
    many = root / "many"
    many.mkdir()
    for i in range(5_001):
        (many / f"f{i}").touch()
    home = tmp / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\n", encoding="utf-8")
    (home / ".netrc").write_text("machine x password y\n", encoding="utf-8")
    (home / "dotfiles" / "gnupg").mkdir(parents=True)
    os.symlink("dotfiles/gnupg", home / ".gnupg")
    plant_links_out(root, home)
    return root, home


def _placeholders(reason: str, tmp: Path) -> str:
    """``reason`` without what differs from run to run: the temporary tree, our pid."""
    pid = f"/proc/{os.getpid()}"
    thread = f"{pid}/task/{threading.get_native_id()}"
    reason = reason.replace(str(tmp), "{tmp}").replace(thread, "/proc/{tid}")
    return reason.replace(pid, "/proc/{pid}")


def collect(tmp: Path) -> list[dict[str, str]]:
    """Judge every corpus command in every setting; reasons with ``{tmp}`` for ``tmp``."""
    # Deep enough that every "../" in the corpora stays inside ``tmp``.
    root, home = build_tree(tmp.joinpath(*"abcdefgh"))
    engines = {
        "home": PolicyEngine(root, home=home),
        "home-is-root": PolicyEngine(root, home=root),
    }
    engines["cwd-src"] = engines["home"]
    cwd = {"cwd-src": root / "src"}
    rows: list[dict[str, str]] = []
    for command in _commands():
        for setting in SETTINGS:
            verdict = engines[setting].check_command(command, cwd=cwd.get(setting))
            rows.append(
                {
                    "setting": setting,
                    "command": command,
                    "decision": verdict.decision.value,
                    "risk": verdict.risk.value,
                    "reason": _placeholders(verdict.reason, tmp),
                }
            )
    return rows


def _expected() -> list[dict[str, str]]:
    text = EXPECTED.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def test_reference_covers_both_corpora_in_every_setting() -> None:
    expected = _expected()
    assert len(expected) == len(_commands()) * len(SETTINGS)
    assert {row["decision"] for row in expected} == {"allow", "confirm", "deny"}


def test_every_verdict_matches_the_reference(tmp_path: Path) -> None:
    actual = collect(tmp_path.resolve())
    expected = _expected()
    assert [(r["setting"], r["command"]) for r in actual] == [
        (r["setting"], r["command"]) for r in expected
    ]
    differing = [
        (want["setting"], want["command"], want, got)
        for want, got in zip(expected, actual, strict=True)
        if want != got
    ]
    assert differing == [], f"{len(differing)} verdicts changed; first: {differing[:3]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(f"usage: {sys.argv[0]} --write")
    with tempfile.TemporaryDirectory() as scratch:
        out = collect(Path(scratch).resolve())
    EXPECTED.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8"
    )
    print(f"wrote {len(out)} verdicts to {EXPECTED}")
