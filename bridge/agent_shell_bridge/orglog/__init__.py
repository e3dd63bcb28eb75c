"""The org-mode action log: wire models (:mod:`.entries`), the renderer
(:mod:`.render`), the file's writer (:mod:`.writer`) and the task summary
(:mod:`.summary`).

The bridge is the only writer of ``<root>/.agent-shell/logs/<stamp>-<session>.org``
(and of ``…-2.org``, ``…-3.org`` when a long session's log rotates).
It is also the only renderer: the ``log/entry`` / ``log/update`` notifications carry
the org text of the entry in its current state (``org``, ``org_head``,
``org_body_append``; see :func:`entry_params` and :func:`update_params`), and
``agent-shell-log.el`` inserts that text into the live buffer as is. The file is
append-only and holds the same entries as a history: an update that is more than
text added to the last entry follows as its own heading (see :mod:`.writer`).
``log/file`` tells the client the log went on in a new file.
``tests/fixtures/orglog`` pins both byte for byte.

Rendering rules:

* Header ``#+TITLE``, ``#+STARTUP: overview``, ``#+TODO: WAIT | APPROVED REJECTED
  DONE FAILED`` and a blank line.
* Heading ``<stars> [TODO ]<[YYYY-MM-DD Day HH:MM]> <title>``: the timestamp sits
  before the title so no title can pose as a TODO keyword, ``COMMENT`` or priority.
  Titles are collapsed to one line, stripped of control characters, capped, and a
  trailing ``:word:`` gets a zero-width space so org does not read it as tags.
* A properties drawer right after the heading: ``SOURCE``, ``LOG_ID``, then the
  entry's properties (keys reduced to ``[A-Z0-9_-]``, values to one line).
* Body blocks separated by one blank line.  ``src`` blocks are capped (200 head +
  100 tail lines, 500 characters a line) with org's comma escaping, followed by a
  ``[[file:…][full output]]`` link and the omitted-line count.  Text blocks are
  plain paragraphs unless a line could start org syntax (``*``, ``#``, ``:``), in
  which case they become an escaped example block.  Nothing in an entry can fake a
  heading, close a block or end the drawer.

A step is placed under its parent, so steps stay under their task even when tasks
interleave (a continuation heading of the task goes first).  Every call is one
``write`` followed by ``fsync``; nothing written is rewritten, so a killed bridge
leaves a valid file and a turn writes what it adds.
"""

from __future__ import annotations

from ..types import Prices
from .entries import DrawerBlock, LogEntry, LogUpdate, PropertyValue, SrcBlock, TextBlock, TodoState
from .render import (
    HEADER_NO_EVAL,
    HEADER_TODO,
    Rendered,
    entry_params,
    render_body,
    render_entry,
    render_head,
    render_header,
    render_note,
    update_params,
)
from .summary import TaskUsage, summary_drawer_entry
from .writer import OrgLogWriter, log_path_for

__all__ = [
    "HEADER_NO_EVAL",
    "HEADER_TODO",
    "DrawerBlock",
    "LogEntry",
    "LogUpdate",
    "OrgLogWriter",
    "Prices",
    "PropertyValue",
    "Rendered",
    "SrcBlock",
    "TaskUsage",
    "TextBlock",
    "TodoState",
    "entry_params",
    "log_path_for",
    "render_body",
    "render_entry",
    "render_head",
    "render_header",
    "render_note",
    "summary_drawer_entry",
    "update_params",
]
