"""The bridge's packages are layered, and no import cycle hides anywhere.

Every import of the package is read from the source (top-level, inside functions,
under ``TYPE_CHECKING``): a module may import only modules of its own layer or of
the layers below, and the import graph has no cycle at all. The layers, lowest
first, are those of ``doc/modules.org``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import agent_shell_bridge

PACKAGE = "agent_shell_bridge"
ROOT = Path(agent_shell_bridge.__file__).parent
# Lowest first. Top-level modules of the base row sit in the first layer.
LAYERS = (
    "base",
    "transport",
    "project",
    "policy",
    "sandbox",
    "process",
    "remote",
    "model",
    "orglog",
    "memory",
    "tools",
    "mcp",
    "agent.session",
    "agent.conversation",
    "agent.calls",
    "agent.turn",
    "agent",
    "runtime",
    "methods",
    "frontends",
    "cli",
)
BASE = frozenset({"", "_face", "config", "errors", "types", "limits", "wire"})


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _imported(module: str, is_package: bool, node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            here = module.split(".")[: None if is_package else -1]
            here = here[: len(here) - node.level + 1]
            base = ".".join(here) + (f".{node.module}" if node.module else "")
        names = [f"{base}.{a.name}" for a in node.names] + [base]
    else:
        return
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            yield name


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges = graph.setdefault(module, set())
        for node in ast.walk(tree):
            edges.update(_imported(module, is_package, node))
    return graph


def _layer(module: str) -> int:
    rest = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    first = rest.split(".")[0]
    if first in BASE:
        return 0
    if first == "agent":
        sub = ".".join(rest.split(".")[:2])
        return LAYERS.index(sub if sub in LAYERS else "agent")
    return LAYERS.index(first)


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer(module)  # raises ValueError for a package the table does not know


def test_no_package_imports_one_above_it() -> None:
    upward = [
        f"{a} ({LAYERS[_layer(a)]}) imports {b} ({LAYERS[_layer(b)]})"
        for a, targets in _graph().items()
        for b in targets
        if _layer(b) > _layer(a)
    ]
    assert upward == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            # A package importing its own sub-modules (its face) is not a cycle.
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_no_import_cycle_even_behind_type_checking() -> None:
    assert _cycles(_graph()) == []


def test_the_checks_are_real() -> None:
    """An import of the runtime from the policy is upward; a two-module loop is a cycle."""
    [node] = ast.parse("from ..runtime import Runtime\n").body
    module = f"{PACKAGE}.policy.engine"
    assert set(_imported(module, False, node)) == {f"{PACKAGE}.runtime"}
    assert _layer(f"{PACKAGE}.runtime") > _layer(module)
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
