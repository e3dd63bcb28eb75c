"""The sandbox's seccomp filter, compiled by libseccomp and handed to bubblewrap.

bubblewrap loads a classic BPF program from a file descriptor (``--seccomp FD``)
just before it runs the command, so the filter holds the command and everything it
starts, and nothing can remove it. The program is built here, once, by the
system's libseccomp (through its stable C interface; no compiler, no extension
module) and exported as bytes.

What it refuses, each with ``EPERM``:

- the kernel keyrings (``keyctl``, ``add_key``, ``request_key``): the session
  keyring is the user's, and credentials live there (Kerberos, ecryptfs, gnome);
- ``TIOCSTI`` and ``TIOCLINUX``: pushing characters into a terminal's input is
  typing into the user's shell;
- ``io_uring``: its submissions reach ``connect`` and friends past any filter;
- with ``deny_unix``: creating ``AF_UNIX`` sockets. That variant is for a sandbox
  that shares the host's network namespace where the kernel cannot scope abstract
  sockets (Landlock before ABI 6): there the filter cannot tell the user's sockets
  from the command's own, so it refuses them all. Everywhere else a command's own
  Unix sockets work; those of the user are simply not there (:mod:`.layout`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform

__all__ = ["SeccompError", "build_filter", "libseccomp_version"]

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000
# Compared on the low 32 bits: the kernel reads these arguments as ints, so a caller
# setting high bits would slip past a full 64-bit comparison.
_SCMP_CMP_MASKED_EQ = 7
_LOW_32 = 0xFFFFFFFF
_AF_UNIX = 1
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_DENIED = ("keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter")
# Foreign ABIs the native kernel also runs, so a 32-bit binary meets the same rules
# (without them it would meet libseccomp's default for a bad architecture: death).
_COMPAT_ARCHES = {"x86_64": ("x86", "x32"), "aarch64": ("arm",)}


class SeccompError(RuntimeError):
    """libseccomp is missing or refused to build the filter."""


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompError(f"libseccomp is not installed ({exc})") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_arch_add.argtypes = (ctypes.c_void_p, ctypes.c_uint32)
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    return lib


def libseccomp_version() -> str:
    """The loaded libseccomp's version, e.g. ``2.5.4`` (empty when unknown)."""
    lib = _library()

    class _Version(ctypes.Structure):
        _fields_ = (("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint))

    fn = getattr(lib, "seccomp_version", None)
    if fn is None:
        return ""
    fn.restype = ctypes.POINTER(_Version)
    v = fn().contents
    return f"{v.major}.{v.minor}.{v.micro}"


def build_filter(*, deny_unix: bool) -> bytes:
    """The BPF program (see the module doc); raises :class:`SeccompError`."""
    lib = _library()
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompError("seccomp_init failed")
    try:
        for arch in _COMPAT_ARCHES.get(platform.machine(), ()):
            token = lib.seccomp_arch_resolve_name(arch.encode())
            if token:
                lib.seccomp_arch_add(ctx, token)  # an arch the kernel lacks: skip it
        deny = _SCMP_ACT_ERRNO | errno.EPERM
        for name in _DENIED:
            _rule(lib, ctx, deny, name, ())
        for request in (_TIOCSTI, _TIOCLINUX):
            _rule(lib, ctx, deny, "ioctl", ((1, request),))
        if deny_unix:
            _rule(lib, ctx, deny, "socket", ((0, _AF_UNIX),))
        return _export(lib, ctx)
    finally:
        lib.seccomp_release(ctx)


def _rule(
    lib: ctypes.CDLL, ctx: int, action: int, name: str, args: tuple[tuple[int, int], ...]
) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:
        return  # not a system call on this architecture (io_uring on an old libseccomp)
    cmps = (_ArgCmp * max(1, len(args)))(
        *(_ArgCmp(i, _SCMP_CMP_MASKED_EQ, _LOW_32, v) for i, v in args)
    )
    rc = lib.seccomp_rule_add_array(ctx, action, number, len(args), cmps)
    if rc < 0:
        raise SeccompError(f"libseccomp refused the rule for {name}: {os.strerror(-rc)}")


def _export(lib: ctypes.CDLL, ctx: int) -> bytes:
    fd = os.memfd_create("agent-shell-seccomp-export", os.MFD_CLOEXEC)
    try:
        rc = lib.seccomp_export_bpf(ctx, fd)
        if rc < 0:
            raise SeccompError(f"seccomp_export_bpf failed: {os.strerror(-rc)}")
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
