"""The project the policy corpus is judged in (tests/fixtures/policy/commands.jsonl).

Besides the usual folders it holds what git would take for other repositories: a
nested ``vendor/lib/.git``, a ``.git`` file in ``wt/`` (a worktree-style pointer) and
a bare repository layout in ``bare.git/``. Commands that run git there must not be
auto-allowed; ``docs/`` and ``src/`` hold none.
"""

from __future__ import annotations

import os
from pathlib import Path


def plant_other_repositories(root: Path) -> None:
    """Repositories git would find under ``root`` instead of its own ``.git``."""
    (root / "vendor" / "lib" / ".git").mkdir(parents=True)
    (root / "vendor" / "lib" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "wt").mkdir()
    (root / "wt" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    bare = root / "bare.git"
    for sub in ("objects", "refs"):
        (bare / sub).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "docs").mkdir(exist_ok=True)


def build_corpus_project(root: Path) -> Path:
    """Fill ``root`` with the tree the corpus rows were written against."""
    for sub in ("src", "tests", "build", ".git/hooks", ".ssh", ".aws"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (root / ".aws" / "credentials").write_text("[default]\n", encoding="utf-8")
    (root / ".netrc").write_text("machine x password y\n", encoding="utf-8")
    os.symlink(".ssh", root / "ssh_link")
    plant_other_repositories(root)
    return root
