"""Run a program in a fresh session keyring that holds one secret (stdlib only).

``python keyring_exec.py DESCRIPTION PAYLOAD -- PROGRAM ARGS...`` joins a new,
anonymous session keyring, adds a ``user`` key DESCRIPTION=PAYLOAD to it, and
executes PROGRAM, which inherits that keyring as a user's login session would
hand down its own. The hostile-services tests start the bridge through it, so a
credential sits in the kernel keyring of everything the bridge runs. It runs
under any Python 3 (the system's, for an unprivileged user), so it imports
nothing from the repository. The keyring is the process's own: nothing of the
caller's changes, and it is gone when the last process holding it ends.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

# (add_key, keyctl) system call numbers.
_SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}
_KEYCTL_JOIN_SESSION_KEYRING = 1
_KEY_SPEC_SESSION_KEYRING = -3


def plant(description: str, payload: str) -> int:
    """Join a new session keyring and add the key; its serial number."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise SystemExit(f"keyring_exec: no system call numbers for {platform.machine()}")
    add_key, keyctl = numbers
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ring = libc.syscall(
        ctypes.c_long(keyctl), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None)
    )
    if ring < 0:
        err = ctypes.get_errno()
        raise SystemExit(f"keyring_exec: cannot join a session keyring: {os.strerror(err)}")
    data = payload.encode("utf-8")
    key = libc.syscall(
        ctypes.c_long(add_key),
        ctypes.c_char_p(b"user"),
        ctypes.c_char_p(description.encode("utf-8")),
        ctypes.c_char_p(data),
        ctypes.c_size_t(len(data)),
        ctypes.c_long(_KEY_SPEC_SESSION_KEYRING),
    )
    if key < 0:
        err = ctypes.get_errno()
        raise SystemExit(f"keyring_exec: cannot add the key: {os.strerror(err)}")
    return int(key)


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        raise SystemExit("usage: keyring_exec.py DESCRIPTION PAYLOAD -- PROGRAM ARGS...")
    description, payload, program = argv[0], argv[1], argv[3:]
    plant(description, payload)
    os.execvp(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
