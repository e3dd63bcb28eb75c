"""Policy: commands classified per second over the adversarial corpus.

The baseline is ``shlex.split`` of the same command lines: the least a tool that
looks at commands at all must do. The ratio is what a full parse and judgement
(tree-sitter-bash, nested commands, paths, redirections) costs on top.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from agent_shell_bridge.policy.engine import PolicyEngine

from .common import Figure, Scale

__all__ = ["run"]

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "policy" / "commands.jsonl"


def load_commands() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [str(json.loads(line)["command"]) for line in lines if line.strip()]


def _split(command: str) -> int:
    try:
        return len(shlex.split(command))
    except ValueError:
        return -1


async def run(scale: Scale, work: Path) -> list[Figure]:
    commands = load_commands()
    root = work / "project"
    root.mkdir(parents=True)
    engine = PolicyEngine(root)
    for command in commands:  # warm caches (parser, regexes) before timing
        engine.check_command(command)
    started = time.perf_counter()
    for _ in range(scale.policy_rounds):
        for command in commands:
            engine.check_command(command)
    engine_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(scale.policy_rounds):
        for command in commands:
            _split(command)
    split_s = time.perf_counter() - started
    total = len(commands) * scale.policy_rounds
    return [
        Figure(
            key="policy_rate",
            title="Policy: commands classified",
            unit="cmd/s",
            value=total / engine_s,
            baseline=total / split_s,
            baseline_label="shlex.split of the same commands",
            better="higher",
            details={"commands": len(commands), "rounds": scale.policy_rounds},
        )
    ]
