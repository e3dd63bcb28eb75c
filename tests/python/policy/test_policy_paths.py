"""Path confinement against a real tree of files and symlinks built in a temp dir.

The corpus (tests/fixtures/policy/paths.jsonl) uses ``{root}`` for the project and
``{tmp}`` for its parent; ``resolved`` is the expected result relative to ``{tmp}``.

Row fields: ``path``, ``op`` (read/write), ``decision`` (allow/deny), ``resolved``
(allow rows only) and the optional ``home``:

- absent: ``$HOME`` is the real home directory, outside ``{tmp}``; a path starting
  with ``~``, ``$HOME`` or ``${HOME}`` is therefore outside the roots;
- ``"root"``: the row is judged with ``$HOME`` set to the project root itself (a
  session the user started from ``~`` on purpose): ``~`` expands to ``{root}`` and
  the secrets under it (``.ssh``, ``.aws``, ``.authinfo*`` …) are still refused.

The rule for a leading ``~`` or ``$`` (both sides must agree): ``~``, ``~/x``,
``$HOME``, ``$HOME/x``, ``${HOME}`` and ``${HOME}/x`` are expanded to the home
directory and judged there; ``~user`` (also ``~+``, ``~-``) and any other leading
``$NAME`` are denied; ``./~`` and ``src/$HOME`` are ordinary names in the project.

A replayer that cannot set the home directory should skip rows that have ``home``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_shell_bridge.errors import PathNotAllowed
from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.types import Decision

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "policy" / "paths.jsonl"
CASES = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x]


def build_tree(tmp: Path) -> Path:
    """Lay out the project, its neighbours and the symlinks the corpus refers to."""
    root = tmp / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n", encoding="utf-8")
    (root / "文档").mkdir()
    (root / "文档" / "说明.md").write_text("说明\n", encoding="utf-8")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n", encoding="utf-8")
    (root / ".agent-shell" / "memory").mkdir(parents=True)
    (root / ".agent-shell" / "allowlist.el").write_text("", encoding="utf-8")
    (root / ".agent-shell" / "config.el").write_text("", encoding="utf-8")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret.txt").write_text("secret\n", encoding="utf-8")
    (tmp / "proj-evil").mkdir()
    (tmp / "extra").mkdir()
    os.symlink("../outside", root / "link_out")
    os.symlink("src", root / "link_in")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink("self_loop", root / "self_loop")
    os.symlink("../outside/not-there.txt", root / "dangling_out")
    os.symlink("src/not-yet.txt", root / "dangling_in")
    os.symlink(".git", root / "gitlink")
    os.symlink(".git/hooks/post-merge", root / "hooklink")
    os.symlink(".agent-shell/allowlist.el", root / "allow_link")
    os.symlink(str(root / ".agent-shell" / "config.el"), root / "config_link")
    os.symlink("../proj/src", tmp / "outside" / "to_inside")
    os.link(root / ".git" / "hooks" / "pre-commit", root / "innocent_hardlink.txt")
    (root / "~").mkdir()
    (root / "~" / "note.txt").write_text("a directory literally named ~\n", encoding="utf-8")
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_rsa").write_text("PRIVATE\n", encoding="utf-8")
    os.symlink(".ssh", root / "ssh_link")
    return root


@pytest.fixture(scope="module")
def trees(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, PolicyEngine, PolicyEngine]:
    tmp = tmp_path_factory.mktemp("paths").resolve()
    root = build_tree(tmp)
    assert not Path(os.path.expanduser("~")).resolve().is_relative_to(tmp)
    return (
        tmp,
        PolicyEngine(root, extra_paths=[tmp / "extra"]),
        PolicyEngine(root, extra_paths=[tmp / "extra"], home=root),
    )


@pytest.fixture(scope="module")
def tree(trees: tuple[Path, PolicyEngine, PolicyEngine]) -> tuple[Path, PolicyEngine]:
    return trees[0], trees[1]


def _expand(text: str, tmp: Path) -> str:
    return text.replace("{root}", str(tmp / "proj")).replace("{tmp}", str(tmp))


def test_corpus_size() -> None:
    assert len(CASES) >= 60
    assert sum(c["decision"] == "deny" for c in CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_path_case(trees: tuple[Path, PolicyEngine, PolicyEngine], case: dict[str, str]) -> None:
    tmp, engine, home_engine = trees
    if case.get("home") == "root":
        engine = home_engine
    else:
        assert "home" not in case, case
    path = _expand(case["path"], tmp)
    verdict = engine.check_path(path, case["op"])  # type: ignore[arg-type]
    assert verdict.decision.value == case["decision"], (case, verdict)
    assert verdict.reason
    if case["decision"] == "allow":
        resolved = engine.resolve_path(path, case["op"])  # type: ignore[arg-type]
        assert resolved == tmp / case["resolved"]
    else:
        with pytest.raises(PathNotAllowed) as info:
            engine.resolve_path(path, case["op"])  # type: ignore[arg-type]
        assert info.value.message == verdict.reason


def test_reasons_say_why(tree: tuple[Path, PolicyEngine]) -> None:
    _, engine = tree
    assert "outside the allowed roots" in engine.check_path("/etc/passwd", "read").reason
    assert ".git" in engine.check_path(".git/config", "write").reason
    assert "NUL" in engine.check_path("a\x00b", "read").reason
    assert "empty" in engine.check_path("", "read").reason
    assert "symbolic links" in engine.check_path("loop_a", "read").reason
    assert "allowlist.el" in engine.check_path(".agent-shell/allowlist.el", "write").reason


def test_case_variant_of_git_is_refused_whatever_the_file_system(
    tree: tuple[Path, PolicyEngine],
) -> None:
    tmp, engine = tree
    probe = tmp / "proj" / ".GIT"
    case_insensitive = probe.exists()  # true only where .git and .GIT are the same entry
    assert engine.check_path(".GIT/hooks/pre-commit", "write").decision is Decision.DENY
    assert case_insensitive is False or engine.check_path(".GIT", "read").decision is Decision.ALLOW


def test_symlink_swapped_after_check_is_caught_on_the_next_check(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "out").mkdir()
    engine = PolicyEngine(root)
    link = root / "data"
    os.symlink(".", link)
    assert engine.check_path("data/x", "write").decision is Decision.ALLOW
    link.unlink()
    os.symlink("../out", link)
    assert engine.check_path("data/x", "write").decision is Decision.DENY


def test_home_and_secret_reasons_say_why(trees: tuple[Path, PolicyEngine, PolicyEngine]) -> None:
    _, engine, home_engine = trees
    assert "~user" in engine.check_path("~root/.bashrc", "read").reason
    assert "only $HOME" in engine.check_path("$PWD/src/a.py", "read").reason
    assert "outside the allowed roots" in engine.check_path("~/.ssh/id_rsa", "read").reason
    secret = home_engine.check_path("~/.ssh/id_rsa", "read")
    assert secret.decision is Decision.DENY
    assert "secrets" in secret.reason
    # The same project-relative path is an ordinary file when the root is not $HOME.
    assert engine.check_path(".ssh/id_rsa", "read").decision is Decision.ALLOW


def test_tilde_expands_against_the_engines_home(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    engine = PolicyEngine(root, home=root)
    assert engine.resolve_path("~/src", "read") == root.resolve() / "src"
    assert engine.resolve_path("./~", "write") == root.resolve() / "~"
    with pytest.raises(PathNotAllowed):
        PolicyEngine(root, home=tmp_path).resolve_path("~/proj-evil", "read")
