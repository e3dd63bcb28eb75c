"""One trust mechanism for the five files a project ships, and one table of them.

``initialize`` sends the table; each kind's method trusts exactly the bytes the
user reviewed, for that kind only, and any later change needs trust again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.project.trust import TRUSTED_KINDS, project_trust

CONTENT = {
    "allowlist": '(setq agent-shell-allowlist \'((command . "make 构建")))\n',
    "config": "(setq agent-shell-sandbox nil) ; 设置\n",
    "roles": '(setq agent-shell-roles \'((:name "doc" :description "写文档")))\n',
    "mcp": '{"mcpServers": {"文件": {"command": "true"}}}\n',
    "hooks": '{"turn_end": [{"command": "./通知"}]}\n',
}


async def test_initialize_sends_the_table(app_client: Any) -> None:
    result = await app_client.result("initialize", {})
    assert result["trusted_files"] == [kind.to_json() for kind in TRUSTED_KINDS.values()]
    assert {k["kind"] for k in result["trusted_files"]} == set(CONTENT)
    for kind in result["trusted_files"]:
        assert kind["method"] in result["methods"], kind
        assert kind["command"] == f"agent-shell-trust-{kind['kind']}"


@pytest.mark.parametrize("kind", sorted(CONTENT))
async def test_each_kind_trusts_the_reviewed_bytes_only(
    kind: str, app_client: Any, runtime: Any, tmp_path: Path
) -> None:
    memory = tmp_path / "memory"
    runtime.config = runtime.config.__class__(memory_dir=memory)
    root = tmp_path / "proj"
    spec = TRUSTED_KINDS[kind]
    path = root / spec.path
    path.parent.mkdir(parents=True)
    path.write_text(CONTENT[kind], encoding="utf-8")
    record = project_trust(kind, memory)
    assert not record.is_trusted(root)
    stale = hashlib.sha256(b"something else").hexdigest()
    refused = await app_client.rpc(spec.method, {"cwd": str(root), "sha256": stale})
    assert refused["error"]["code"] == -32602 and not record.is_trusted(root)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    done = await app_client.result(spec.method, {"cwd": str(root), "sha256": digest})
    assert done["sha256"] == digest
    assert record.is_trusted(root)
    # Trusted for its own kind only, and only as it was.
    others = [project_trust(k, memory) for k in CONTENT if k != kind]
    assert all(not o.is_trusted_content(root, path.read_bytes()) for o in others)
    path.write_text(CONTENT[kind] + ";\n", encoding="utf-8")
    assert not record.is_trusted(root)
