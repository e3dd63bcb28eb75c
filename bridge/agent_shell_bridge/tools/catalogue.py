"""The tool catalogue: one entry per model-facing tool, everything the bridge knows of it.

A :class:`ToolSpec` holds the contract (name, arguments, side, risk, description) and
what the policy needs to know about the tool: which arguments are paths and whether
they are read or written, and whether the tool edits one file (read before write,
a diff before approval). What runs the tool is bound to the spec in
:mod:`..agent.handlers`, by the spec itself, so adding a tool is one entry here and
one handler there.

Names and argument names are a contract with models, the Emacs package and users'
allowlists; change them only with a protocol version bump. Argument models
(:mod:`.args`) are pydantic, so the JSON schema sent to the model and the validation
of what it sends back come from one definition.
"""

from __future__ import annotations

import copy
import enum
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from ..types import JSONObject, Risk, Verdict
from .args import (
    AnyArgs,
    Args,
    AskUserArgs,
    BufferOverviewArgs,
    CompleteStepArgs,
    DelegateArgs,
    EditArgs,
    GrepArgs,
    InsertTextArgs,
    JobKillArgs,
    JobOutputArgs,
    ListDirectoryArgs,
    MagitStageArgs,
    OpenFileArgs,
    OrgSearchArgs,
    PlanStepArgs,
    ProjectDiagnosticsArgs,
    ProjectStatusArgs,
    ProposePlanArgs,
    ReadFileArgs,
    ReplacePatternArgs,
    ReplaceRegionArgs,
    RequestLogViewArgs,
    ReviewVerdictArgs,
    RunCommandArgs,
    RunTestArgs,
    SymbolSearchArgs,
    TaskCompleteArgs,
    WriteFileArgs,
)
from .results import ToolResult

__all__ = [
    "CATALOGUE",
    "AnyArgs",
    "Args",
    "ArgsT",
    "AskUserArgs",
    "BufferOverviewArgs",
    "CompleteStepArgs",
    "DelegateArgs",
    "EditArgs",
    "ExternalTool",
    "GrepArgs",
    "InsertTextArgs",
    "JobKillArgs",
    "JobOutputArgs",
    "ListDirectoryArgs",
    "MagitStageArgs",
    "OpenFileArgs",
    "OrgSearchArgs",
    "PathArg",
    "PlanStepArgs",
    "ProjectDiagnosticsArgs",
    "ProjectStatusArgs",
    "ProposePlanArgs",
    "ReadFileArgs",
    "ReplacePatternArgs",
    "ReplaceRegionArgs",
    "RequestLogViewArgs",
    "ReviewVerdictArgs",
    "RunCommandArgs",
    "RunTestArgs",
    "Side",
    "SymbolSearchArgs",
    "TaskCompleteArgs",
    "ToolSource",
    "ToolSpec",
    "WriteFileArgs",
    "tool_schemas",
]

ArgsT = TypeVar("ArgsT", bound=Args)


class Side(enum.StrEnum):
    EMACS = "emacs"
    BRIDGE = "bridge"


class ExternalTool(Protocol):
    """A tool from outside the catalogue (an MCP server's), behind the same executor.

    The executor still validates, asks, logs, clips and reports; the tool supplies
    the policy verdict (the bridge's policy for its kind of tool), extra log
    properties and the call itself.
    """

    def verdict(self) -> Verdict: ...

    def log_properties(self) -> dict[str, str]: ...

    def identity(self) -> str:
        """What a session grant for the tool is bound to: its source as configured now."""
        ...

    async def call(self, arguments: JSONObject) -> ToolResult: ...


@dataclass(frozen=True, slots=True)
class PathArg:
    """An argument naming a file or directory, confined by the policy before the call.

    ``op`` is what the tool does there (``write`` also refuses the project's
    protected files); ``default`` is the path the tool uses when the argument is
    left out (checked the same way). A list-valued argument names several paths.
    """

    name: str
    op: Literal["read", "write"]
    default: str | None = None

    def values(self, args: Args) -> list[str]:
        """The paths this argument names in ``args`` (its default when absent)."""
        value = getattr(args, self.name, None)
        if value is None:
            return [self.default] if self.default is not None else []
        if isinstance(value, list):
            return [str(v) for v in value]
        return [str(value)]


@dataclass(frozen=True, slots=True)
class ToolSpec(Generic[ArgsT]):
    name: str
    side: Side
    risk: Risk | None  # None: decided per call by the command policy
    args: type[ArgsT]
    description: str
    timeout_s: float = 60.0
    # Kind in the Agent Client Protocol sense, for tool_call updates.
    kind: str = "other"
    # The arguments the policy confines, in order (the first is the log's PATH).
    paths: tuple[PathArg, ...] = ()
    # Changes one file: read before write, planned (and shown as a diff) first.
    edits: bool = False
    # External tools: the schema as their source gives it, and the hook that runs them.
    input_schema: JSONObject | None = None
    external: ExternalTool | None = None

    @property
    def is_write(self) -> bool:
        return self.risk is Risk.WRITE

    def path_values(self, args: Args) -> list[tuple[PathArg, str]]:
        """Every path ``args`` names, with the argument that names it."""
        return [(arg, value) for arg in self.paths for value in arg.values(args)]

    def schema(self) -> JSONObject:
        """The OpenAI ``tools`` entry (a fresh copy: callers may change it)."""
        if self.input_schema is not None:  # a tool found at run time (MCP)
            return {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": copy.deepcopy(self.input_schema),
                },
            }
        return copy.deepcopy(_schema(self))


@functools.cache
def _schema(spec: ToolSpec[Any]) -> JSONObject:
    # Made once per tool: pydantic's schema generation costs milliseconds per call,
    # and every model step (on the way to its first token) needs every schema.
    params = spec.args.model_json_schema()
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": params},
    }


_R, _W = Risk.READ, Risk.WRITE
E, B = Side.EMACS, Side.BRIDGE
_READ_PATH = (PathArg("path", "read"),)
_WRITE_PATH = (PathArg("path", "write"),)
_READ_PATH_OR_ROOT = (PathArg("path", "read", default="."),)

BUFFER_OVERVIEW = ToolSpec(
    "buffer_overview",
    E,
    _R,
    BufferOverviewArgs,
    "Structured summary of an Emacs buffer: file, mode, point, function at "
    "point, region, diagnostics.",
    10,
    "read",
)
PROJECT_STATUS = ToolSpec(
    "project_status",
    E,
    _R,
    ProjectStatusArgs,
    "Git state of the project: branch, staged/changed/untracked files, last commits, diff stat.",
    20,
    "read",
)
PROJECT_DIAGNOSTICS = ToolSpec(
    "project_diagnostics",
    E,
    _R,
    ProjectDiagnosticsArgs,
    "The project's current Flymake/Flycheck diagnostics (errors first, capped); "
    "says so when no checker runs.",
    10,
    "read",
)
SYMBOL_SEARCH = ToolSpec(
    "symbol_search",
    E,
    _R,
    SymbolSearchArgs,
    "Definitions and/or references of a symbol (xref backend, else ripgrep).",
    30,
    "search",
)
ORG_SEARCH = ToolSpec(
    "org_search",
    E,
    _R,
    OrgSearchArgs,
    "Heading outline of an org file, optionally filtered by a query.",
    10,
    "search",
    paths=(PathArg("file", "read"),),
)
OPEN_FILE = ToolSpec(
    "open_file",
    E,
    _R,
    OpenFileArgs,
    "Show a file to the user in Emacs, optionally at a line.",
    10,
    "read",
    paths=_READ_PATH,
)
READ_FILE = ToolSpec(
    "read_file",
    B,
    _R,
    ReadFileArgs,
    "Read a text file (optionally a 1-based inclusive line range).",
    10,
    "read",
    paths=_READ_PATH,
)
LIST_DIRECTORY = ToolSpec(
    "list_directory",
    B,
    _R,
    ListDirectoryArgs,
    "List a directory of the project (depth 1-5).",
    10,
    "read",
    paths=_READ_PATH_OR_ROOT,
)
GREP = ToolSpec(
    "grep",
    B,
    _R,
    GrepArgs,
    "Search file contents with a regular expression (ripgrep syntax).",
    30,
    "search",
    paths=_READ_PATH_OR_ROOT,
)
REQUEST_LOG_VIEW = ToolSpec(
    "request_log_view",
    B,
    _R,
    RequestLogViewArgs,
    "Page through the full text of an output that was truncated.",
    10,
    "read",
)
REPLACE_REGION = ToolSpec(
    "replace_region",
    E,
    _W,
    ReplaceRegionArgs,
    "Replace lines start_line..end_line (1-based, inclusive) of a file.",
    30,
    "edit",
    paths=_WRITE_PATH,
    edits=True,
)
INSERT_TEXT = ToolSpec(
    "insert_text",
    E,
    _W,
    InsertTextArgs,
    "Insert text before a line of a file.",
    30,
    "edit",
    paths=_WRITE_PATH,
    edits=True,
)
REPLACE_PATTERN = ToolSpec(
    "replace_pattern",
    E,
    _W,
    ReplacePatternArgs,
    "Replace every match of a pattern (regexp unless literal) in a file.",
    30,
    "edit",
    paths=_WRITE_PATH,
    edits=True,
)
WRITE_FILE = ToolSpec(
    "write_file",
    E,
    _W,
    WriteFileArgs,
    "Create or overwrite a file (read it first when it exists).",
    30,
    "edit",
    paths=_WRITE_PATH,
    edits=True,
)
MAGIT_STAGE = ToolSpec(
    "magit_stage",
    E,
    _W,
    MagitStageArgs,
    "Stage files in git (magit when available).",
    30,
    "other",
    paths=(PathArg("paths", "write"),),
)
RUN_COMMAND = ToolSpec(
    "run_command",
    B,
    None,
    RunCommandArgs,
    "Run a shell command in the project; the safety policy decides whether "
    "it runs, asks the user, or is refused.",
    60,
    "execute",
    # The working directory: confined, but not the log's PATH (the command is shown).
    paths=(PathArg("cwd", "read"),),
)
RUN_TEST = ToolSpec(
    "run_test",
    B,
    None,
    RunTestArgs,
    "Run the project's tests (configured or detected command) and summarise failures.",
    180,
    "execute",
)
JOB_OUTPUT = ToolSpec(
    "job_output",
    B,
    _R,
    JobOutputArgs,
    "A background job's output since the last read, and whether it still runs.",
    30,
    "read",
)
JOB_KILL = ToolSpec(
    "job_kill",
    B,
    _R,
    JobKillArgs,
    "End a background job and every process it started.",
    30,
    "execute",
)
TASK_COMPLETE = ToolSpec(
    "task_complete",
    B,
    None,
    TaskCompleteArgs,
    "Declare the task finished, with a short summary for the user.",
    5,
    "think",
)
ASK_USER = ToolSpec(
    "ask_user",
    B,
    Risk.READ,
    AskUserArgs,
    "Ask the user a question you cannot answer from the code, with 2 to 4 short "
    "options; the result is the option the user chose or, when allow_free_text is "
    "true, the text they typed instead. Use it for a real choice (which approach, "
    "which file), not to ask permission: risky steps are asked about anyway.",
    86_400,
    "think",
)
DELEGATE = ToolSpec(
    "delegate",
    B,
    Risk.READ,
    DelegateArgs,
    "Hand a bounded job to a role that works in its own fresh context and returns "
    "a short report: explorer (answers a question about the code, reads only), "
    "tester (writes and runs tests, may only write test files). Give the task "
    "everything the role needs: it sees nothing of this conversation.",
    1800,
    "think",
)
REVIEW_VERDICT = ToolSpec(
    "review_verdict",
    B,
    Risk.READ,
    ReviewVerdictArgs,
    "Your verdict on the change: approve, or request_changes with concrete comments.",
    5,
    "think",
)
PROPOSE_PLAN = ToolSpec(
    "propose_plan",
    B,
    None,
    ProposePlanArgs,
    "Before multi-step changes: propose a plan (goal, ordered steps with files, "
    "expected result and a verification command, risks). The user edits and "
    "approves it; follow the plan you get back.",
    3600,
    "think",
)
COMPLETE_STEP = ToolSpec(
    "complete_step",
    B,
    None,
    CompleteStepArgs,
    "Mark a step of the approved plan done; its verification command runs first "
    "and the step only counts as done when it passes.",
    300,
    "execute",
)

# In the order models see them.
CATALOGUE: dict[str, ToolSpec[Any]] = {
    spec.name: spec
    for spec in (
        BUFFER_OVERVIEW,
        PROJECT_STATUS,
        PROJECT_DIAGNOSTICS,
        SYMBOL_SEARCH,
        ORG_SEARCH,
        OPEN_FILE,
        READ_FILE,
        LIST_DIRECTORY,
        GREP,
        REQUEST_LOG_VIEW,
        REPLACE_REGION,
        INSERT_TEXT,
        REPLACE_PATTERN,
        WRITE_FILE,
        MAGIT_STAGE,
        RUN_COMMAND,
        RUN_TEST,
        JOB_OUTPUT,
        JOB_KILL,
        TASK_COMPLETE,
        ASK_USER,
        DELEGATE,
        REVIEW_VERDICT,
        PROPOSE_PLAN,
        COMPLETE_STEP,
    )
}


class ToolSource(Protocol):
    """Tools a session gains at run time (a registry hook): looked up after the catalogue.

    ``specs`` is the source's current list in a stable order; a name once given out
    keeps meaning the same tool for the session.
    """

    def specs(self) -> list[ToolSpec[Any]]: ...

    def spec(self, name: str) -> ToolSpec[Any] | None: ...

    async def aclose(self) -> None: ...


def tool_schemas(
    names: set[str] | None = None, extra: Iterable[ToolSpec[Any]] = ()
) -> list[JSONObject]:
    """OpenAI ``tools`` array for the given tool names (all when None), then ``extra``."""
    listed = [spec.schema() for name, spec in CATALOGUE.items() if names is None or name in names]
    return listed + [spec.schema() for spec in extra]
