"""A project's ``config.el`` settings that Emacs reads for a new local session.

For a local project Emacs reads them itself (``agent-shell-project-read-config``):
``agent-shell-model``, ``agent-shell-context-window``, ``agent-shell-max-steps`` and
``agent-shell-default-mode``, each a literal of the right type in a ``setq`` form,
all else ignored, nothing evaluated — and it sends them in ``session/new``. A remote
project's file is on its host, which Emacs does not open for this: the bridge reads
it there into the mirror and applies the same four by the same rules
(:func:`read_session_settings`), so the session starts as a local one would.
Like the local ones they need no trust: the model's name, its window, the step
limit and the mode let the agent do nothing the policy does not allow;
``agent-shell-sandbox`` stays the trusted switch of ``sandbox/project_switch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .files import read_project_file
from .sexp import SexpError, Symbol, read_all

__all__ = ["SessionSettings", "read_session_settings"]

_UNSET = object()


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """What ``config.el`` sets (``None`` for what it leaves to the user's values;
    ``context_window`` is ``0`` when it sets the window to nil, none)."""

    model: str | None = None
    context_window: int | None = None
    max_steps: int | None = None
    mode: Literal["act", "ask"] | None = None


def _literal(form: object) -> object:
    """FORM's value when it is a literal Emacs would take, else :data:`_UNSET`."""
    if isinstance(form, str | int) and not isinstance(form, bool):
        return form
    if form == Symbol("nil") or form == []:
        return None
    if form == Symbol("t"):
        return True
    if isinstance(form, Symbol) and form.name.startswith(":"):
        return form
    if isinstance(form, list) and len(form) == 2 and form[0] == Symbol("quote"):
        quoted = form[1]  # 'nil is nil, 't is t
        return None if quoted in (Symbol("nil"), []) else True if quoted == Symbol("t") else quoted
    return _UNSET


def read_session_settings(root: Path) -> SessionSettings:
    """ROOT's ``.agent-shell/config.el`` settings of a new session (see the module)."""
    try:
        content = read_project_file(root / ".agent-shell" / "config.el")
        forms = read_all(content.decode("utf-8")) if content is not None else []
    except (OSError, UnicodeDecodeError, SexpError):
        return SessionSettings()  # Emacs warns and keeps what it could read
    found: dict[str, object] = {}
    for form in forms:
        if not (isinstance(form, list) and form and form[0] == Symbol("setq")):
            continue
        pairs = form[1:]
        if len(pairs) % 2:
            continue
        for var, value in zip(pairs[::2], pairs[1::2], strict=True):
            literal = _literal(value)
            if isinstance(var, Symbol) and literal is not _UNSET:
                _take(found, var.name, literal)
    return SessionSettings(**found)  # type: ignore[arg-type]


def _take(found: dict[str, object], var: str, value: object) -> None:
    """Keep VAR's VALUE when it has the type Emacs allows for it (later ones win)."""
    if var == "agent-shell-model" and isinstance(value, str) and value:
        found["model"] = value
    elif var == "agent-shell-context-window" and (
        value is None or (isinstance(value, int) and value > 0)
    ):
        found["context_window"] = 0 if value is None else value
    elif var == "agent-shell-max-steps" and isinstance(value, int) and value > 0:
        found["max_steps"] = value
    elif var == "agent-shell-default-mode" and value in (Symbol("act"), Symbol("ask")):
        assert isinstance(value, Symbol)
        found["mode"] = value.name
