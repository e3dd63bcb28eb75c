"""Package faces loaded on first use (PEP 562), shared by the packages that need them.

A package's ``__init__`` names its public names and the module each comes from;
importing the package (or one light sub-module of it) loads none of the others, so
the server starts without pydantic models, the shell parser or the model client.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``where`` maps each name to its module."""

    def load(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return load
