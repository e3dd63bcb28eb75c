"""Argument models of the catalogue's tools: the JSON schema the model sees and the
validation of what it sends back, from one definition per tool.

Argument names are part of the contract with models, the Emacs package and users'
allowlists (see :mod:`.catalogue`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


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


class ProjectDiagnosticsArgs(Args):
    limit: int = Field(50, ge=1, le=500, description="Most diagnostics listed, errors first")


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
    background: bool | None = Field(None, description="As a job (a server): returns a job_id")


class JobOutputArgs(Args):
    job_id: str = Field(min_length=1, max_length=64)


class JobKillArgs(Args):
    job_id: str = Field(min_length=1, max_length=64)


class RunTestArgs(Args):
    command: str | None = Field(None, max_length=10_000)


class TaskCompleteArgs(Args):
    summary: str


class DelegateArgs(Args):
    role: str = Field(min_length=1, max_length=32)
    task: str = Field(min_length=1, max_length=8000)


class AskUserArgs(Args):
    question: str = Field(min_length=1, max_length=4000)
    options: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        min_length=2, max_length=4
    )
    allow_free_text: bool = True


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


# The tools that change one file, planned before they run (decide) and written by
# Emacs or, headless, by the bridge.
EditArgs = ReplaceRegionArgs | InsertTextArgs | ReplacePatternArgs | WriteFileArgs
