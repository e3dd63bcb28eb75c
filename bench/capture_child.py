"""Child process of the capture benchmark: one ``ProcessRunner.run_shell`` in a fresh interpreter.

Run fresh so that its resident-set figures belong to this one command: it prints
VmRSS before the run, VmHWM (the peak) after it, the wall time and what was kept.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from agent_shell_bridge.process.runner import ProcessRunner


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/self/status")


async def _main(command: str, work: Path) -> dict[str, object]:
    runner = ProcessRunner(work / "logs")
    rss_before = _status_kib("VmRSS")
    started = time.perf_counter()
    result = await runner.run_shell(command, cwd=work, timeout_s=3600)
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "rss_before_kib": rss_before,
        "hwm_after_kib": _status_kib("VmHWM"),
        "exit_code": result.exit_code,
        "omitted_lines": result.omitted_lines,
        "kept_chars": len(result.stdout),
        "log_bytes": result.log_path.stat().st_size if result.log_path else 0,
    }


if __name__ == "__main__":
    report = asyncio.run(_main(sys.argv[1], Path(sys.argv[2])))
    sys.stdout.write(json.dumps(report) + "\n")
