"""The kernel's root: what a sandboxed kernel may see, and how it is built.

On the grader's side, `root_view()` computes (once per process) the allow-list: the Python runtime
(the interpreter's prefix, the venv, the system libraries the interpreter and torch are linked
against) and the course's checks package. In the launcher, `Root` builds a new root from it on an
empty tmpfs (read-only binds, a private tmpfs for the home, /tmp and /dev/shm, a few devices) and
`pivot_root`s into it (see sandbox.py for the order of the launcher's steps).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import platform
import struct
import sys
from pathlib import Path
from types import MappingProxyType

# The packages a kernel imports from this course (the checks its test cells and the probe call):
# found by import, so the sandbox follows them wherever they are installed.
KERNEL_PACKAGES = ("byhand",)
HOME = "/home/student"  # the kernel's home and working folder inside its root
# The student package's folder (for the workers' code hash in distributed.py)
BYHAND = Path(importlib.util.find_spec("byhand").origin).resolve().parent

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 32, 4096, 16384, 1 << 18, 2
SYS_PIVOT_ROOT = MappingProxyType({"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217})
DEVICES = ("null", "zero", "full", "random", "urandom")


def libc():
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    lib.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return lib


def ok(ret, what):
    """Raise the C library's error when a call returned non-zero."""
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


# ---------------------------------------------------------------------------------------------
# What the kernel's root holds (computed once per grading process, on the grader's side)


def kernel_packages() -> list:
    """The folders of the course packages a kernel imports (top-level packages: no parent package
    needs to be shown beside them)."""
    import importlib

    out = []
    for name in KERNEL_PACKAGES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        out.append(str(Path(mod.__file__).resolve().parent))
    if not out:
        raise RuntimeError(f"none of the kernel's packages {KERNEL_PACKAGES} can be imported")
    return out


def _elf_interpreter(path: str) -> str | None:
    """The dynamic loader an ELF executable names (PT_INTERP), e.g. /lib64/ld-linux-x86-64.so.2."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
                return None
            end = "<" if head[5] == 1 else ">"
            (phoff,) = struct.unpack(end + "Q", head[32:40])
            phentsize, phnum = struct.unpack(end + "HH", head[54:58])
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack(end + "IIQQQQ", f.read(40))
                if p_type == 3:
                    f.seek(p_offset)
                    return f.read(p_filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def _symlinks_on_the_way(path: str) -> tuple[list, str]:
    """Every symlink met while resolving `path` (to recreate them in the new root), and the real path."""
    links, seen = [], 0
    parts = [p for p in path.split("/") if p]
    cur = "/"
    while parts and seen < 40:
        nxt = os.path.join(cur, parts.pop(0))
        if os.path.islink(nxt):
            seen += 1
            target = os.readlink(nxt)
            links.append([nxt, target])
            rest = [p for p in target.split("/") if p]
            cur = "/" if target.startswith("/") else cur
            parts = rest + parts
        else:
            cur = nxt
    return links, os.path.normpath(cur)


def _loaded_library_dirs() -> set:
    """Folders of the shared libraries this process has mapped (with torch and numpy imported:
    what a kernel loads), e.g. /usr/lib/x86_64-linux-gnu for libc and libstdc++."""
    import numpy  # noqa: F401
    import torch  # noqa: F401

    dirs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
                lib = parts[5].strip()
                if lib.endswith(" (deleted)"):
                    continue
                dirs.add(os.path.dirname(os.path.realpath(lib)))
    return dirs


def _minimal(paths) -> list:
    """`paths` without those inside another one."""
    out = []
    for p in sorted(set(paths), key=len):
        if not any(p == q or p.startswith(q.rstrip("/") + "/") for q in out):
            out.append(p)
    return sorted(out)


@functools.cache
def root_view() -> tuple[tuple, tuple]:
    """(expose, links) of a kernel's root: what it needs to run Python, torch and the checks (facts
    of this host's runtime, so worked out once per process)."""
    runtime = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    links, real_exe = _symlinks_on_the_way(sys.executable)
    runtime.add(os.path.dirname(real_exe))
    interp = _elf_interpreter(real_exe)
    if interp:
        more, real_interp = _symlinks_on_the_way(interp)
        links += more
        runtime.add(os.path.dirname(real_interp))
    runtime |= _loaded_library_dirs()
    runtime |= set(kernel_packages())
    if os.path.exists("/etc/ld.so.cache"):
        runtime.add("/etc/ld.so.cache")
    for name in os.listdir("/"):  # /lib -> usr/lib and the like: what ld.so.cache paths go through
        if os.path.islink("/" + name):
            links.append(["/" + name, os.readlink("/" + name)])
    return tuple(_minimal(runtime)), tuple(sorted({tuple(x) for x in links}))


# ---------------------------------------------------------------------------------------------
# Building it (in the launcher, as root, inside the new mount namespace)


class Root:
    """Builds the kernel's root under `new` (a root-only empty folder) and pivots into it."""

    def __init__(self, spec, limits):  # sandbox.Spec and sandbox.Limits (no import: no cycle)
        self.spec, self.limits, self.libc = spec, limits, libc()
        self.new = spec.stage.rstrip("/")

    def mount(self, src, dst, fstype=None, flags=0, data=None, what=""):
        ok(
            self.libc.mount(
                src.encode() if src else None,
                dst.encode(),
                fstype.encode() if fstype else None,
                flags,
                data.encode() if data else None,
            ),
            f"{what or 'mount'} {dst}",
        )

    def at(self, path: str) -> str:
        return self.new + path

    def bind(self, path: str, writable: bool = False):
        dst = self.at(path)
        if os.path.isdir(path):
            os.makedirs(dst, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if not os.path.exists(dst):
                open(dst, "w").close()
        self.mount(path, dst, None, MS_BIND | MS_REC, None, "bind")
        flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if writable else MS_RDONLY)
        if not os.path.isdir(path) and path.startswith("/dev/"):
            self.mount(None, dst, None, flags, None, "remount")
        else:
            self.mount(None, dst, None, flags | MS_NODEV, None, "remount")

    def tmpfs(self, dst: str, size_mb: float, mode: str, inodes: int):
        os.makedirs(dst, exist_ok=True)
        data = f"size={int(size_mb * 1024)}k,nr_inodes={inodes},mode={mode}"
        self.mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, data, "tmpfs")

    def build(self):
        spec, limits, uid = self.spec, self.limits, self.spec.uid
        self.mount(None, "/", None, MS_REC | MS_PRIVATE, None, "make private")
        self.tmpfs(self.new, 4, "0755", 4096)
        # home and /tmp: one private tmpfs of disk_mb, staged aside and bound to both places
        scratch = self.at("/.scratch")
        self.tmpfs(scratch, limits.disk_mb, "0755", 65536)
        for sub, mode in (("home", 0o700), ("tmp", 0o1777)):
            os.mkdir(os.path.join(scratch, sub))
            os.chmod(os.path.join(scratch, sub), mode)
        os.chown(os.path.join(scratch, "home"), uid, uid)
        for sub, dst in (("home", HOME), ("tmp", "/tmp")):
            os.makedirs(self.at(dst), exist_ok=True)
            self.mount(os.path.join(scratch, sub), self.at(dst), None, MS_BIND, None, "bind scratch")
        ok(self.libc.umount2(scratch.encode(), MNT_DETACH), "unstage scratch")
        os.rmdir(scratch)
        # /dev: a few character devices, the usual links, and a private /dev/shm
        os.makedirs(self.at("/dev"), exist_ok=True)
        for name in DEVICES:
            if os.path.exists("/dev/" + name):
                self.bind("/dev/" + name, writable=True)
        for name, target in (
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ):
            os.symlink(target, self.at("/dev/" + name))
        self.tmpfs(self.at("/dev/shm"), limits.shm_mb, "1777", 4096)
        # the runtime, read-only, and the connection folder, writable until the kernel is up
        for path in spec.expose:
            if os.path.exists(path):
                self.bind(path)
        for path in spec.hide:
            if os.path.isdir(path) and os.path.isdir(self.at(path)):
                self.mount(
                    "tmpfs", self.at(path), "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k", "hide"
                )
        self.bind(spec.workdir, writable=True)
        for path, target in spec.links:
            if not os.path.lexists(self.at(path)):
                os.makedirs(os.path.dirname(self.at(path)), exist_ok=True)
                os.symlink(target, self.at(path))
        os.makedirs(self.at("/etc"), exist_ok=True)
        with open(self.at("/etc/passwd"), "w") as f:
            f.write(f"root:x:0:0:root:/:/nonexistent\nstudent:x:{uid}:{uid}:student:{HOME}:/nonexistent\n")
        with open(self.at("/etc/group"), "w") as f:
            f.write(f"root:x:0:\nstudent:x:{uid}:\n")
        with open(self.at("/etc/hostname"), "w") as f:
            f.write("sandbox\n")
        os.makedirs(self.at("/proc"), exist_ok=True)
        # pivot: the host's tree is detached, the new root becomes read-only
        os.makedirs(self.at("/.old"), exist_ok=True)
        os.chdir(self.new)
        number = SYS_PIVOT_ROOT.get(platform.machine())
        if number is None:
            raise OSError(f"pivot_root: unknown syscall number on {platform.machine()}")
        ok(self.libc.syscall(number, b".", b".old"), "pivot_root")
        os.chdir("/")
        ok(self.libc.umount2(b"/.old", MNT_DETACH), "detach the host's root")
        os.rmdir("/.old")
        self.mount(
            None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None, "read-only /"
        )
