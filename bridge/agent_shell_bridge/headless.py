"""Sub-command registration (placeholder until this area lands)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add this area's sub-commands to the bridge CLI."""
