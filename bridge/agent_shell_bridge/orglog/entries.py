"""The action log's wire models: an entry, its body blocks, and later updates.

What the agent hands the log (and what ``log/entry`` / ``log/update`` carry
besides the org text), validated at this boundary.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "Block",
    "DrawerBlock",
    "LogEntry",
    "LogUpdate",
    "PropertyValue",
    "Source",
    "SrcBlock",
    "TextBlock",
    "TodoState",
]


TodoState = Literal["WAIT", "APPROVED", "REJECTED", "DONE", "FAILED"]
Source = Literal["model", "tool", "user", "memory", "bridge", "role"]
PropertyValue = str | int | float


class TextBlock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["text"] = "text"
    text: str


class SrcBlock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["src"] = "src"
    lang: str = "text"
    text: str
    link: str | None = None
    omitted_lines: int = Field(default=0, ge=0)


class DrawerBlock(BaseModel):
    """Text kept in a named drawer, folded until opened (an attachment's content)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["drawer"] = "drawer"
    name: str = Field(min_length=1, max_length=60)
    title: str = ""
    lang: str = "text"
    text: str


Block = Annotated[TextBlock | SrcBlock | DrawerBlock, Field(discriminator="kind")]


def _coerce_properties(value: Any) -> Any:
    """Booleans are not in the contract; render them the way JSON spells them."""
    if isinstance(value, dict):
        return {
            k: (("true" if v else "false") if isinstance(v, bool) else v) for k, v in value.items()
        }
    return value


class LogEntry(BaseModel):
    """One heading of the action log; also the params of ``log/entry``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    session_id: str
    parent_id: str | None = None
    todo: TodoState | None = None
    title: str
    timestamp: str
    source: Source
    properties: dict[str, PropertyValue] = Field(default_factory=dict)
    body: list[Block] = Field(default_factory=list)

    @field_validator("timestamp")
    @classmethod
    def _iso_with_offset(cls, value: str) -> str:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as exc:
            raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from exc
        if parsed.tzinfo is None:
            raise ValueError("timestamp needs a UTC offset")
        return value

    @field_validator("properties", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        return _coerce_properties(value)


class LogUpdate(BaseModel):
    """A change to an existing entry; the params of ``log/update``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    id: str
    todo: TodoState | None = None
    properties: dict[str, PropertyValue] | None = None
    body_append: list[Block] | None = None

    @field_validator("properties", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        return _coerce_properties(value)
