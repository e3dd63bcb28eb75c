"""The arguments of a tool defined in Emacs Lisp, checked by the bridge against its
declaration before anything else sees the call (hooks, the policy's question, Emacs).

``agent-shell-define-tool`` declares each argument's JSON type (string, integer,
number, boolean, array, object) and whether it is optional; the declaration arrives
as a JSON Schema (``parameters``). A call whose arguments do not fit is a failed
result naming the argument, and never reaches Emacs.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from ...tools.catalogue import AnyArgs

__all__ = ["TYPES", "DeclaredArgs", "args_model", "check_parameters"]

# JSON type → what it accepts (a bool is no number, a float no integer).
TYPES: dict[str, tuple[str, Any]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "array": ("an array", lambda v: isinstance(v, list)),
    "object": ("an object", lambda v: isinstance(v, dict)),
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def check_parameters(parameters: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each declared argument's type and whether it is required; ValueError when the
    schema is not one ``agent-shell-define-tool`` makes."""
    if not parameters:
        return {}
    properties = parameters.get("properties") or {}
    required = parameters.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise ValueError("parameters must have an object of properties and a list required")
    declared: dict[str, tuple[str, bool]] = {}
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if kind not in TYPES:
            raise ValueError(f"argument {name!r} has no known type (one of {', '.join(TYPES)})")
        declared[name] = (kind, name in required)
    unknown = [r for r in required if r not in declared]
    if unknown:
        raise ValueError(f"required names undeclared arguments: {', '.join(map(str, unknown))}")
    return declared


class DeclaredArgs(AnyArgs):
    """Arguments checked against ``declared`` (set on a subclass per tool)."""

    declared: ClassVar[dict[str, tuple[str, bool]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _fit(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("the arguments must be a JSON object")
        given = {k: v for k, v in data.items() if v is not None}  # null: not given
        for name in given:
            if name not in cls.declared:
                known = ", ".join(f"`{n}`" for n in cls.declared) or "none"
                raise ValueError(f"no argument `{name}` (the tool takes {known})")
        for name, (kind, required) in cls.declared.items():
            if name not in given:
                if required:
                    raise ValueError(f"missing required argument `{name}` ({kind})")
                continue
            what, fits = TYPES[kind]
            if not fits(given[name]):
                raise ValueError(f"argument `{name}` must be {what}, not {_json_type(given[name])}")
        return given


def args_model(tool: str, parameters: dict[str, Any]) -> type[DeclaredArgs]:
    """The arguments model of the tool ``tool`` declared with ``parameters``."""
    declared = check_parameters(parameters)
    name = "Args_" + "".join(c if c.isalnum() else "_" for c in tool)
    return type(name, (DeclaredArgs,), {"declared": declared, "__module__": __name__})
