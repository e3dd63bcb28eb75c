"""Git as the bridge runs it for the agent: nothing the repository carries runs.

A repository's configuration can name programs git runs on its own (``core.fsmonitor``
runs at every ``status``), a bare-repository layout planted in a subdirectory is a
repository to git, and ``status`` and ``diff`` walk into every submodule, reading
its configuration too. Every git the bridge runs on the agent's behalf
(``project_status`` and ``magit_stage`` without Emacs, the branch in the header, a
granted plain git outside the sandbox) therefore runs with these settings given on
its command line or in its environment, where they outrank the repository's.
"""

from __future__ import annotations

__all__ = ["SAFE_GIT_CONFIG", "safe_git_argv", "safe_git_environment"]

SAFE_GIT_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("safe.bareRepository", "explicit"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
)


def safe_git_argv(*args: str) -> list[str]:
    """``git`` with the safe settings and ``--no-optional-locks``, then ``args``."""
    argv = ["git", "--no-optional-locks"]
    for key, value in SAFE_GIT_CONFIG:
        argv += ["-c", f"{key}={value}"]
    return [*argv, *args]


def safe_git_environment() -> dict[str, str]:
    """The same settings as environment variables, for a git command line we do not
    write (a granted command): git reads them after every configuration file."""
    env = {"GIT_OPTIONAL_LOCKS": "0", "GIT_CONFIG_COUNT": str(len(SAFE_GIT_CONFIG))}
    for n, (key, value) in enumerate(SAFE_GIT_CONFIG):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env
