"""Every tool's catalogue entry is its one home: policy, handlers and Emacs follow it.

The lists below are derived from the catalogue, so a new tool is covered as soon as
it has an entry: its path arguments are confined by the policy, it has something to
run it, and the Emacs package has a handler exactly for the tools the bridge says
Emacs runs. Real parts: the bridge on 127.0.0.1 with the scripted model, a git
project in a temp dir, and Emacs in batch.
"""

from __future__ import annotations

import json
import re
import subprocess
import typing
from pathlib import Path
from typing import Any

from agent_rig import make_project, running_rig
from agent_shell_bridge.agent.turn.tools import ALL_HANDLERS
from agent_shell_bridge.tools.catalogue import CATALOGUE, PathArg, Side, ToolSpec
from agent_shell_bridge.types import Risk

ELISP = Path(__file__).resolve().parents[3] / "elisp"
PATH_SPECS = [spec for spec in CATALOGUE.values() if spec.paths]


def _sample(annotation: Any) -> Any:
    """A valid value of a required argument's type (constraints allow 1 and "x")."""
    origin = typing.get_origin(annotation)
    if origin is list:
        return ["x"]
    if annotation is int:
        return 1
    if annotation is float:
        return 1.0
    if annotation is bool:
        return False
    return "x"


def _call(spec: ToolSpec[Any], arg: PathArg, path: str) -> dict[str, Any]:
    """Valid arguments for ``spec`` whose path argument ``arg`` names ``path``."""
    fields = spec.args.model_fields
    raw = {name: _sample(f.annotation) for name, f in fields.items() if f.is_required()}
    raw[arg.name] = [path] if typing.get_origin(fields[arg.name].annotation) is list else path
    spec.args.model_validate(raw)  # a new tool whose arguments need more fails here
    return raw


def test_the_catalogue_has_path_arguments_to_check() -> None:
    # The policy test below is only as good as this list; it must not go empty.
    assert {"read_file", "write_file", "magit_stage", "run_command"} <= {s.name for s in PATH_SPECS}
    for spec in PATH_SPECS:
        for arg in spec.paths:
            assert arg.name in spec.args.model_fields, (spec.name, arg.name)
            if spec.risk is Risk.WRITE:  # what a tool writes is checked as a write
                assert arg.op == "write", (spec.name, arg.name)
    # An edit names exactly one file: the one read before and diffed.
    assert all(len(s.paths) == 1 for s in CATALOGUE.values() if s.edits)


def test_every_argument_that_names_a_path_is_declared() -> None:
    # An undeclared path argument would never reach the policy: names say what they hold.
    path_like = re.compile(r"path|file|dir|cwd|root")
    for spec in CATALOGUE.values():
        declared = {arg.name for arg in spec.paths}
        named = {n for n in spec.args.model_fields if path_like.search(n)}
        assert named == declared, spec.name


async def test_every_path_argument_is_refused_outside_the_project(
    serve_app: Any, tmp_path: Path
) -> None:
    """Each path argument of each tool, pointed outside, is denied before anything runs."""
    project = make_project(tmp_path / "proj", {"README.org": "* 标题\n", "a.py": "x = 1\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "秘密.txt"
    secret.write_text("机密内容\n", encoding="utf-8")
    (project / "link").symlink_to(outside)
    escapes = [str(secret), "../outside/秘密.txt", "link/秘密.txt", str(outside)]
    calls: list[dict[str, Any]] = []
    for spec in PATH_SPECS:
        for arg in spec.paths:
            # A write path must also keep to the project's protected files.
            targets = [*escapes, ".git/config"] if arg.op == "write" else escapes
            for n, target in enumerate(targets):
                call_id = f"{spec.name}-{arg.name}-{n}"
                calls.append(
                    {"name": spec.name, "arguments": _call(spec, arg, target), "id": call_id}
                )
    git_config = (project / ".git" / "config").read_bytes()
    async with running_rig(serve_app, project, [{"tool_calls": calls}, {"text": "完成"}]) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "试试")
        assert turn.end["stopReason"] == "end_turn"
        assert turn.permission_requests == []  # refused outright, never asked
        results = {
            m["tool_call_id"]: m["content"]
            for m in rig.requests[1]["messages"]
            if m["role"] == "tool"
        }
    assert set(results) == {c["id"] for c in calls}
    for call in calls:
        content = results[call["id"]]
        head = f"name={call['name']} id={call['id']} status=denied]"
        assert head in content.splitlines()[0], (call, content[:300])
        assert "outside the allowed roots" in content or ".git/" in content, (call, content)
        assert "机密内容" not in content
    assert sorted(p.name for p in outside.iterdir()) == ["秘密.txt"]
    assert secret.read_text(encoding="utf-8") == "机密内容\n"
    assert (project / ".git" / "config").read_bytes() == git_config
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=project, capture_output=True, text=True
    )
    assert staged.stdout == ""


def test_every_tool_has_something_to_run_it() -> None:
    """The calls layer's handlers and the turn's own, as a turn's executor gets them."""
    for spec in CATALOGUE.values():
        if spec.side is Side.BRIDGE:
            assert spec.name in ALL_HANDLERS, spec.name
    # Bindings belong to catalogue entries, each to the entry of its own name.
    for name, binding in ALL_HANDLERS.items():
        assert CATALOGUE.get(name) is binding.spec, name
        assert binding.fallback == (binding.spec.side is Side.EMACS)
    # Only what truly needs Emacs has no fallback.
    needs_emacs = {s.name for s in CATALOGUE.values() if s.name not in ALL_HANDLERS}
    assert needs_emacs == {"buffer_overview"}


_ELISP_HANDLERS = """\
(progn
  (require 'json)
  (require 'agent-shell-tools)
  (princ (json-encode
          (mapcar (lambda (entry)
                    (require (nth 2 entry))
                    (list (car entry) (if (fboundp (nth 1 entry)) t :json-false)))
                  agent-shell-tools-handlers))))
"""


async def test_emacs_handles_exactly_the_tools_the_bridge_gives_it(app_client: Any) -> None:
    """The bridge's ``initialize`` says which tools run in Emacs; Emacs has each, no more."""
    init = await app_client.result("initialize", {"protocolVersion": 1})
    emacs_side = {t["name"] for t in init["tools"] if t["side"] == "emacs"}
    assert emacs_side == {s.name for s in CATALOGUE.values() if s.side is Side.EMACS}
    out = subprocess.run(
        ["emacs", "-Q", "--batch", "-L", str(ELISP), "--eval", _ELISP_HANDLERS],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    handlers = dict(json.loads(out.stdout))
    assert set(handlers) == emacs_side
    assert all(handlers.values()), handlers  # every handler function is defined
