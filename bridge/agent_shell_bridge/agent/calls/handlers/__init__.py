"""What runs each catalogue tool on the bridge's side, bound to its entry.

Bridge-side tools have a handler here; Emacs-side tools have their headless
fallback here, or none when they need Emacs (``buffer_overview``). The tools that
act on the turn itself (``delegate``, plans) are bound by the turn layer, which
hands them to the executor with these. The binding is
typed: each handler takes its own tool's arguments. A new tool is one entry in
:mod:`...tools.catalogue` and one handler bound below.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ....tools import catalogue as cat
from . import fallbacks, files, jobs, process, turn
from .base import Binding, Handler, Run, RunTool, bind

__all__ = ["HANDLERS", "Binding", "Handler", "Run", "RunTool", "bind"]

HANDLERS: Mapping[str, Binding] = MappingProxyType(
    {
        b.spec.name: b
        for b in (
            # Emacs-side tools, when no Emacs runs them.
            bind(cat.PROJECT_STATUS, fallbacks.project_status),
            bind(cat.PROJECT_DIAGNOSTICS, fallbacks.project_diagnostics),
            bind(cat.SYMBOL_SEARCH, fallbacks.symbol_search),
            bind(cat.ORG_SEARCH, fallbacks.org_search),
            bind(cat.OPEN_FILE, fallbacks.open_file),
            bind(cat.REPLACE_REGION, files.edit),
            bind(cat.INSERT_TEXT, files.edit),
            bind(cat.REPLACE_PATTERN, files.edit),
            bind(cat.WRITE_FILE, files.edit),
            bind(cat.MAGIT_STAGE, fallbacks.magit_stage),
            # The bridge's own.
            bind(cat.READ_FILE, files.read_file),
            bind(cat.LIST_DIRECTORY, files.list_directory),
            bind(cat.GREP, files.grep),
            bind(cat.REQUEST_LOG_VIEW, turn.request_log_view),
            bind(cat.RUN_COMMAND, process.run_command),
            bind(cat.RUN_TEST, process.run_test),
            bind(cat.JOB_OUTPUT, jobs.job_output),
            bind(cat.JOB_KILL, jobs.job_kill),
            bind(cat.TASK_COMPLETE, turn.task_complete),
            bind(cat.REVIEW_VERDICT, turn.review_verdict),
        )
    }
)
