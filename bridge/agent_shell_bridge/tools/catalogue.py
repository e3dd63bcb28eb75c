"""The tool catalogue: names, arguments, side and risk of every model-facing tool.

Names and argument names are a contract with models, the Emacs package and users'
allowlists; change them only with a protocol version bump. Argument models are
pydantic, so the JSON schema sent to the model and the validation of what it sends
back come from one definition.
"""

from __future__ import annotations

import copy
import enum
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..types import JSONObject, Risk, Verdict
from .results import ToolResult

__all__ = [
    "CATALOGUE",
    "AnyArgs",
    "ExternalTool",
    "Side",
    "ToolSource",
    "ToolSpec",
    "tool_schemas",
]


class Side(enum.StrEnum):
    EMACS = "emacs"
    BRIDGE = "bridge"


class Args(BaseModel):
    """Base for tool arguments: unknown keys are an error the model can fix."""

    model_config = ConfigDict(extra="forbid")


class AnyArgs(Args):
    """Arguments of an external tool: its own server validates them."""

    model_config = ConfigDict(extra="allow")


class BufferOverviewArgs(Args):
    buffer: str | None = Field(None, description="Buffer name; default: the user's current buffer")


class ProjectStatusArgs(Args):
    pass


class SymbolSearchArgs(Args):
    symbol: str = Field(min_length=1, max_length=200, description="Identifier to look up")
    kind: Literal["definitions", "references", "both"] = "both"


class OrgSearchArgs(Args):
    file: str | None = Field(None, description="Org file; default: the current org buffer")
    query: str | None = Field(None, description="Only headings containing this text")


class OpenFileArgs(Args):
    path: str
    line: int | None = Field(None, ge=1)


class ReadFileArgs(Args):
    path: str
    start_line: int | None = Field(None, ge=1)
    end_line: int | None = Field(None, ge=1)


class ListDirectoryArgs(Args):
    path: str | None = None
    depth: int | None = Field(None, ge=1, le=5)


class GrepArgs(Args):
    pattern: str = Field(min_length=1)
    path: str | None = None
    glob: str | None = None


class RequestLogViewArgs(Args):
    ref: str = Field(description="The log_ref of a truncated output")
    offset: int | None = Field(None, ge=0, description="First line (0-based)")
    limit: int | None = Field(None, ge=1, le=2000)


class ReplaceRegionArgs(Args):
    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=0, description="Inclusive; start_line - 1 inserts before start")
    new_text: str
    expected_text: str | None = Field(
        None, description="The current text of those lines; the edit is refused if it differs"
    )


class InsertTextArgs(Args):
    path: str
    line: int = Field(ge=1, description="Insert before this line; last line + 1 appends")
    text: str


class ReplacePatternArgs(Args):
    path: str
    pattern: str = Field(min_length=1)
    replacement: str
    literal: bool | None = False


class WriteFileArgs(Args):
    path: str
    content: str


class MagitStageArgs(Args):
    paths: list[str] = Field(min_length=1)


class RunCommandArgs(Args):
    command: str = Field(min_length=1, max_length=10_000)
    cwd: str | None = None
    timeout_s: float | None = Field(None, gt=0, le=3600)


class RunTestArgs(Args):
    command: str | None = Field(None, max_length=10_000)


class TaskCompleteArgs(Args):
    summary: str


class DelegateArgs(Args):
    role: str = Field(min_length=1, max_length=32)
    task: str = Field(min_length=1, max_length=8000)


class ReviewVerdictArgs(Args):
    verdict: Literal["approve", "request_changes"]
    comments: str = Field("", max_length=8000)


class PlanStepArgs(Args):
    title: str = Field(min_length=1, max_length=300)
    files: list[str] = Field(default_factory=list)
    expected: str = Field("", description="What is true when the step is done")
    verify: str | None = Field(None, description="A command whose success proves the step")


class ProposePlanArgs(Args):
    goal: str = Field(min_length=1)
    steps: list[PlanStepArgs] = Field(min_length=1, max_length=50)
    risks: list[str] = Field(default_factory=list)


class CompleteStepArgs(Args):
    step: int = Field(ge=1, description="1-based number of the step in the approved plan")
    note: str | None = None


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
class ToolSpec:
    name: str
    side: Side
    risk: Risk | None  # None: decided per call by the command policy
    args: type[Args]
    description: str
    timeout_s: float = 60.0
    # Kind in the Agent Client Protocol sense, for tool_call updates.
    kind: str = "other"
    # External tools: the schema as their source gives it, and the hook that runs them.
    input_schema: JSONObject | None = None
    external: ExternalTool | None = None

    @property
    def is_write(self) -> bool:
        return self.risk is Risk.WRITE

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
def _schema(spec: ToolSpec) -> JSONObject:
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

CATALOGUE: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "buffer_overview",
            E,
            _R,
            BufferOverviewArgs,
            "Structured summary of an Emacs buffer: file, mode, point, function at "
            "point, region, diagnostics.",
            10,
            "read",
        ),
        ToolSpec(
            "project_status",
            E,
            _R,
            ProjectStatusArgs,
            "Git state of the project: branch, staged/changed/untracked files, "
            "last commits, diff stat.",
            20,
            "read",
        ),
        ToolSpec(
            "symbol_search",
            E,
            _R,
            SymbolSearchArgs,
            "Definitions and/or references of a symbol (xref backend, else ripgrep).",
            30,
            "search",
        ),
        ToolSpec(
            "org_search",
            E,
            _R,
            OrgSearchArgs,
            "Heading outline of an org file, optionally filtered by a query.",
            10,
            "search",
        ),
        ToolSpec(
            "open_file",
            E,
            _R,
            OpenFileArgs,
            "Show a file to the user in Emacs, optionally at a line.",
            10,
            "read",
        ),
        ToolSpec(
            "read_file",
            B,
            _R,
            ReadFileArgs,
            "Read a text file (optionally a 1-based inclusive line range).",
            10,
            "read",
        ),
        ToolSpec(
            "list_directory",
            B,
            _R,
            ListDirectoryArgs,
            "List a directory of the project (depth 1-5).",
            10,
            "read",
        ),
        ToolSpec(
            "grep",
            B,
            _R,
            GrepArgs,
            "Search file contents with a regular expression (ripgrep syntax).",
            30,
            "search",
        ),
        ToolSpec(
            "request_log_view",
            B,
            _R,
            RequestLogViewArgs,
            "Page through the full text of an output that was truncated.",
            10,
            "read",
        ),
        ToolSpec(
            "replace_region",
            E,
            _W,
            ReplaceRegionArgs,
            "Replace lines start_line..end_line (1-based, inclusive) of a file.",
            30,
            "edit",
        ),
        ToolSpec(
            "insert_text", E, _W, InsertTextArgs, "Insert text before a line of a file.", 30, "edit"
        ),
        ToolSpec(
            "replace_pattern",
            E,
            _W,
            ReplacePatternArgs,
            "Replace every match of a pattern (regexp unless literal) in a file.",
            30,
            "edit",
        ),
        ToolSpec(
            "write_file",
            E,
            _W,
            WriteFileArgs,
            "Create or overwrite a file (read it first when it exists).",
            30,
            "edit",
        ),
        ToolSpec(
            "magit_stage",
            E,
            _W,
            MagitStageArgs,
            "Stage files in git (magit when available).",
            30,
            "other",
        ),
        ToolSpec(
            "run_command",
            B,
            None,
            RunCommandArgs,
            "Run a shell command in the project; the safety policy decides whether "
            "it runs, asks the user, or is refused.",
            60,
            "execute",
        ),
        ToolSpec(
            "run_test",
            B,
            None,
            RunTestArgs,
            "Run the project's tests (configured or detected command) and summarise failures.",
            180,
            "execute",
        ),
        ToolSpec(
            "task_complete",
            B,
            None,
            TaskCompleteArgs,
            "Declare the task finished, with a short summary for the user.",
            5,
            "think",
        ),
        ToolSpec(
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
        ),
        ToolSpec(
            "review_verdict",
            B,
            Risk.READ,
            ReviewVerdictArgs,
            "Your verdict on the change: approve, or request_changes with concrete comments.",
            5,
            "think",
        ),
        ToolSpec(
            "propose_plan",
            B,
            None,
            ProposePlanArgs,
            "Before multi-step changes: propose a plan (goal, ordered steps with files, "
            "expected result and a verification command, risks). The user edits and "
            "approves it; follow the plan you get back.",
            3600,
            "think",
        ),
        ToolSpec(
            "complete_step",
            B,
            None,
            CompleteStepArgs,
            "Mark a step of the approved plan done; its verification command runs first "
            "and the step only counts as done when it passes.",
            300,
            "execute",
        ),
    )
}


class ToolSource(Protocol):
    """Tools a session gains at run time (a registry hook): looked up after the catalogue.

    ``specs`` is the source's current list in a stable order; a name once given out
    keeps meaning the same tool for the session.
    """

    def specs(self) -> list[ToolSpec]: ...

    def spec(self, name: str) -> ToolSpec | None: ...

    async def aclose(self) -> None: ...


def tool_schemas(names: set[str] | None = None, extra: Iterable[ToolSpec] = ()) -> list[JSONObject]:
    """OpenAI ``tools`` array for the given tool names (all when None), then ``extra``."""
    listed = [spec.schema() for name, spec in CATALOGUE.items() if names is None or name in names]
    return listed + [spec.schema() for spec in extra]
