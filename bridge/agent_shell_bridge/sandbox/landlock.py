"""Landlock scoping: the sandbox reaches no abstract Unix socket and signals nobody outside.

Abstract Unix sockets (``@/tmp/.X11-unix/X0``, a D-Bus bus started with
``unix:abstract=``) have no file, so no mount hides them: they belong to the
network namespace. Without network the sandbox has its own namespace and sees none
of the host's; with network (a command the user approved) it shares the host's.
Landlock's scopes (ABI 6, Linux 6.12) close that door for any namespace: a process
in a scoped domain may connect only to abstract sockets made inside the same
domain, and may signal only processes inside it.

The domain is entered in the child between ``fork`` and the ``exec`` of
bubblewrap, so bubblewrap and everything it starts are inside; it restricts no file
access (bubblewrap still mounts freely). :func:`abi` tells whether the kernel can.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from collections.abc import Callable

__all__ = ["SCOPES_ABI", "abi", "scope_entrant"]

SCOPES_ABI = 6
_PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET_VERSION = 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1
_SCOPE_SIGNAL = 2
# Added after the system call tables were unified: one number on every architecture.
_SYS_CREATE_RULESET = 444
_SYS_RESTRICT_SELF = 446


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (or it is disabled)."""
    if platform.system() != "Linux":
        return 0
    libc = _libc()
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def scope_entrant() -> Callable[[], None]:
    """A function for the child, after ``fork``, that enters a scoped domain.

    Everything it needs is prepared here, in the parent: the child only makes
    three system calls. It raises :class:`OSError` when the kernel refuses, so the
    command does not start unscoped.
    """
    libc = _libc()
    syscall, prctl = libc.syscall, libc.prctl
    # struct landlock_ruleset_attr: handled_access_fs, handled_access_net, scoped.
    attr = ctypes.create_string_buffer(
        struct.pack("=QQQ", 0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL), 24
    )
    size = ctypes.c_size_t(24)

    def enter() -> None:
        if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs refused")
        fd = syscall(_SYS_CREATE_RULESET, attr, size, 0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset refused")
        try:
            if syscall(_SYS_RESTRICT_SELF, fd, 0) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self refused")
        finally:
            os.close(fd)

    return enter
