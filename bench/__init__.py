"""Benchmarks of agent-shell, each figure a ratio against a baseline from the same run.

Run with ``python -m bench`` (or ``make bench``); see :mod:`bench.__main__`.
"""
