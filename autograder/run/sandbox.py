"""Where student code runs: a kernel process with limits, its own user, and a root of its own.

The grader starts each submission's kernel through `enter()` (from `python -m autograder.run.sandbox
SPEC -- KERNEL_CMD...` for a cold start, or in a process forked by the warm-kernel zygote). As root
on Linux, before it becomes the kernel, that process:

1. enters new mount, network, PID, IPC and UTS namespaces: no network (the kernel talks to the
   grader over unix sockets), no view of the host's processes, SysV shared memory and semaphores of
   its own (gone with the namespace);
2. builds a root from an allow-list and `pivot_root`s into it: an empty tmpfs holding, read-only,
   the Python runtime (the interpreter's prefix, the venv, the system libraries the interpreter and
   torch are linked against) and the student checks package; the folder with its connection file
   and sockets; and a private tmpfs for its home and `/tmp` (`disk_mb`) and one for `/dev/shm`
   (`shm_mb`). Nothing else of the host exists in there: no other checkout, no /home, no /srv;
3. forks a small init (PID 1 of the namespace: it reaps orphans, and when it dies the kernel and
   everything it started die with it), which forks the kernel (PID 2);
4. sets resource limits (address space, CPU seconds, processes, file size, open files), drops to an
   unprivileged uid of its own (one per grading process), and gets a minimal environment that does
   not say it is being graded.

Everything the kernel can write lives in memory of its own namespaces (tmpfs, SysV IPC) and is
released when its last process ends, also when the grader is killed (parent-death signals end the
chain). Without root (a laptop), steps 1-3 and the uid are skipped with a warning: the limits still
hold, but student code runs as you and can read your files (see README, "The sandbox").
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import json
import os
import platform
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

ROOT = Path(__file__).resolve().parents[2]
# The packages a kernel imports from this course (the checks its test cells and the probe call):
# found by import, so the sandbox follows them wherever they are installed.
KERNEL_PACKAGES = ("byhand",)
HOME = "/home/student"  # the kernel's home and working folder inside its root
# The student package's folder (for the workers' code hash in distributed.py)
BYHAND = Path(importlib.util.find_spec("byhand").origin).resolve().parent


@dataclass
class Limits:
    """Every limit a sandboxed kernel runs under. All are configurable from the command line."""

    memory_mb: int = 4096  # address space of the kernel (RLIMIT_AS)
    cpu_seconds: int = 600  # CPU time of the kernel (RLIMIT_CPU)
    cell_timeout: int = 60  # wall clock per cell; the cell is interrupted, grading goes on
    notebook_timeout: int = 300  # wall clock for the whole notebook
    max_processes: int = 256  # processes and threads of the sandbox user (RLIMIT_NPROC)
    max_file_mb: int = 64  # largest file it may write (RLIMIT_FSIZE)
    max_open_files: int = 256  # RLIMIT_NOFILE
    disk_mb: int = 1024  # everything it writes to its home and /tmp together (a private tmpfs)
    shm_mb: int = 64  # its /dev/shm (a private tmpfs; Docker's default size)
    isolate: bool = True  # namespaces, own root and a separate uid, where the OS allows
    base_uid: int = 61000  # sandbox uids are the first free ones from here (one per worker)
    warm_kernels: bool = True  # fork kernels from a pre-imported zygote (autograder/zygote.py)


@dataclass
class Spec:
    """What the launcher needs: written by the grader, read (as root) before the kernel starts."""

    workdir: str  # host folder of the kernel's connection file and sockets, bound at the same path
    uid: int
    stage: str = ""  # a root-only empty folder where the new root is built
    expose: list = field(default_factory=list)  # host paths bound read-only at the same path
    links: list = field(default_factory=list)  # [path, target]: symlinks of the new root (/lib -> usr/lib)
    hide: list = field(default_factory=list)  # paths inside exposed ones, covered by an empty tmpfs
    limits: dict = field(default_factory=dict)


def can_isolate() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and sys.platform.startswith("linux")


def isolating(limits: Limits) -> bool:
    return limits.isolate and can_isolate()


def warn_if_degraded(limits: Limits) -> None:
    """Once per process: the warnings module shows a warning from one line only the first time."""
    if limits.isolate and not can_isolate():
        warnings.warn(
            "sandbox degraded: the grader is not root on Linux, so student code runs as "
            "your user, with network, and can read your files. Resource limits still "
            "apply. Run the grader as root in a container for real grading.",
            stacklevel=2,
        )


def secret_paths(extra=()) -> list:
    """Paths student code must never see even if they lie inside something the sandbox shows (the
    reference notebooks, the build folder, the example class, the tests, the history, plus `extra`,
    e.g. the output and submissions folders). The root is an allow-list, so these matter only where
    an exposed folder (the venv, the checks package) contains one of them."""
    paths = [
        ROOT / "solutions",
        ROOT / "build",
        ROOT / "examples",
        ROOT / "tests",
        ROOT / ".git",
        ROOT / "site",
        ROOT / "_build",
    ]
    # a tmpfs covers folders only (in a git worktree `.git` is a file naming the real one elsewhere)
    return [str(p) for p in paths + [Path(e) for e in extra] if Path(p).is_dir()]


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
# The launcher (runs as the kernel's parent, then becomes the kernel)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 32, 4096, 16384, 1 << 18, 2
PR_SET_PDEATHSIG = 1
SYS_PIVOT_ROOT = MappingProxyType({"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217})
DEVICES = ("null", "zero", "full", "random", "urandom")


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """This process gets `sig` when its parent dies (Linux), so no sandbox outlives its grader."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (AttributeError, OSError):
            pass


def exit_when_gone(pid: int) -> None:
    """End this process when process `pid` ends (a pool worker is the child of multiprocessing's
    forkserver, not of the grader, so a parent-death signal does not reach it); its zygote and
    kernels follow (closed pipe, parent-death signals)."""
    import select
    import threading

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return

    def watch():
        select.select([fd], [], [])
        os._exit(1)

    threading.Thread(target=watch, name="exit-when-grader-gone", daemon=True).start()


class _Root:
    """Builds the kernel's root under `new` (a root-only empty folder) and pivots into it."""

    def __init__(self, spec: Spec, limits: Limits):
        self.spec, self.limits, self.libc = spec, limits, _libc()
        self.new = spec.stage.rstrip("/")

    def mount(self, src, dst, fstype=None, flags=0, data=None, what=""):
        _check(
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
        _check(self.libc.umount2(scratch.encode(), MNT_DETACH), "unstage scratch")
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
        _check(self.libc.syscall(number, b".", b".old"), "pivot_root")
        os.chdir("/")
        _check(self.libc.umount2(b"/.old", MNT_DETACH), "detach the host's root")
        os.rmdir("/.old")
        self.mount(
            None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None, "read-only /"
        )


def _exit_like(status: int) -> None:
    """End this process the way a child with wait status `status` ended (same code or signal)."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(os.getpid(), -code)
        time.sleep(1)
        os._exit(128 - code)
    os._exit(code)


def _wait(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def _supervise(init_pid: int, status_fd: int) -> None:
    """Outside the namespace: wait for its init, then end as the kernel ended."""
    status = _wait(init_pid)
    data = os.read(status_fd, 8)
    if len(data) == 8:
        status = struct.unpack("q", data)[0]
    _exit_like(status)


def _init(kernel_pid: int, status_fd: int) -> None:
    """PID 1 of the sandbox: reap every orphan; when the kernel ends, report how and end too (and
    with it, by the kernel's rule for PID namespaces, every process still in the sandbox)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == kernel_pid:
            os.write(status_fd, struct.pack("q", status))
            os._exit(0)


def _set_limits(limits: Limits) -> None:
    mb = 1024 * 1024
    for res, value in [
        (resource.RLIMIT_AS, limits.memory_mb * mb),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.max_file_mb * mb),
        (resource.RLIMIT_NOFILE, limits.max_open_files),
        (resource.RLIMIT_NPROC, limits.max_processes),
        (resource.RLIMIT_CORE, 0),
    ]:
        resource.setrlimit(res, (value, value))


def clean_env(home: str) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    return {
        **keep,
        "HOME": home,
        "TMPDIR": home if home != HOME else "/tmp",
        "PYTHONHASHSEED": "0",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLCONFIGDIR": os.path.join(home, ".mpl"),
    }


def enter(spec_path: str) -> dict:
    """Turn this process into a sandboxed kernel process (namespaces, own root, init, limits, user);
    returns the environment the kernel must run with. As root, this process stays outside as the
    sandbox's supervisor and only a grandchild returns from here."""
    spec = Spec(**json.loads(Path(spec_path).read_text()))
    limits = Limits(**spec.limits)
    if not isolating(limits):
        os.chdir(spec.workdir)
        _set_limits(limits)
        return clean_env(spec.workdir)
    # the supervisor: outside the namespaces; an interrupt is the kernel's business, not its
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    _Root(spec, limits).build()
    _check(libc.sethostname(b"sandbox", 7), "sethostname")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        try:
            _supervise(pid, read_end)
        finally:
            os._exit(70)
    os.close(read_end)
    try:  # PID 1 of the new namespace
        die_with_parent()
        _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")
        pid = os.fork()
        if pid:
            _init(pid, write_end)
    finally:
        if pid:
            os._exit(70)
    os.close(write_end)
    # the kernel (PID 2)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(HOME)
    _set_limits(limits)
    os.setgroups([])
    os.setgid(spec.uid)
    os.setuid(spec.uid)
    return clean_env(HOME)


def launch(spec_path: str, cmd: list) -> None:
    env = enter(spec_path)
    os.execvpe(cmd[0], cmd, env)


# ---------------------------------------------------------------------------------------------
# The grader's side


class UidClaim:
    """A sandbox uid no other grader on this machine is using, held by a file lock until `release`
    (a station holds one for its life), so two graders never kill or read each other's kernels.
    Whatever a killed grader left running under that uid is killed first."""

    def __init__(self, limits: Limits):
        self.uid, self._fd = _claim_uid(limits)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _claim_uid(limits: Limits) -> tuple[int, int]:
    import fcntl

    # one lock folder per machine (not per TMPDIR): two graders must never share a uid
    locks = Path("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()) / "tbb-sandbox-uids"
    locks.mkdir(mode=0o700, exist_ok=True)
    for uid in range(limits.base_uid, limits.base_uid + 4096):
        fd = os.open(locks / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        kill_user_processes(uid)
        return uid, fd
    raise RuntimeError("no free sandbox uid")


def prepare_workdir(base: Path, slot: int, uid: int) -> Path:
    """A fresh, empty folder for the kernel's connection file and sockets, owned by the station's
    sandbox user `uid` (-1: not isolated) until the kernel is up (then `seal` takes it back)."""
    work = base / f"slot{slot}"
    if work.exists():
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if uid >= 0:
        os.chown(work, uid, uid)
    os.chmod(work, 0o700)
    return work


def seal(workdir: Path, uid: int) -> None:
    """Once the kernel has bound its sockets, it may no longer write in the host folder that holds
    them (it writes to its own tmpfs only): the folder and the connection file go back to root."""
    if uid < 0:
        return
    for path in [workdir, *[p for p in workdir.iterdir() if p.is_file() and not p.is_symlink()]]:
        os.chown(path, 0, 0, follow_symlinks=False)
    os.chmod(workdir, 0o755)


GRADING_PREFIX = "tbb-grade-"


def sweep_stale_grading_dirs(tmp: str | None = None, min_age_s: float = 3600) -> int:
    """Remove the temporary folders of grading runs that were killed: their lock is free (a folder
    without a lock, from an older grader, once it is `min_age_s` old). Returns how many went."""
    import fcntl

    gone = 0
    for d in Path(tmp or tempfile.gettempdir()).glob(GRADING_PREFIX + "*"):
        if d.is_symlink() or not d.is_dir():
            continue
        lock = d / ".lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            try:
                if time.time() - d.stat().st_mtime < min_age_s:
                    continue
            except FileNotFoundError:
                continue
            fd = None
        except OSError:
            continue
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: its run is gone
            shutil.rmtree(d, ignore_errors=True)
            gone += 1
        except OSError:
            pass
        finally:
            if fd is not None:
                os.close(fd)
    return gone


# A unix socket's path holds at most 107 bytes. The deepest one a run binds is multiprocessing's
# forkserver listener, <run folder>/pymp-xxxxxxxx/listener-xxxxxxxx (the kernels' are shorter:
# <run folder>/slotN/kernel-N), so the run folder's own path must leave that much room.
SOCKET_PATH_MAX = 107
DEEPEST_SOCKET = len("/pymp-xxxxxxxx/listener-xxxxxxxx")


def grading_parent() -> str:
    """Where a run's folder goes: the temporary folder (TMPDIR), or /tmp when TMPDIR is too deep
    for the run's unix sockets (a long TMPDIR is a valid setting: a test runner's, a CI's)."""
    parent = tempfile.gettempdir()
    room = SOCKET_PATH_MAX - DEEPEST_SOCKET - len(f"/{GRADING_PREFIX}xxxxxxxx")
    if len(os.fsencode(parent)) <= room:
        return parent
    if os.path.isdir("/tmp") and os.access("/tmp", os.W_OK | os.X_OK):
        return "/tmp"
    raise RuntimeError(
        f"the temporary folder {parent} is too long for the grader's unix sockets "
        f"(got {len(os.fsencode(parent))} bytes, expected at most {room}): set TMPDIR to a shorter folder"
    )


@contextlib.contextmanager
def grading_dir():
    """A temporary folder for one grading run (work folders, unzipped uploads), locked while the
    run lasts so that the next run can tell a killed run's folder from a running one; removed on
    the way out, also after Ctrl-C."""
    import fcntl

    parent = grading_parent()
    sweep_stale_grading_dirs(parent)
    tmp = Path(tempfile.mkdtemp(prefix=GRADING_PREFIX, dir=parent))
    os.chmod(tmp, 0o711)
    fd = os.open(tmp / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(fd)


def become_subreaper() -> None:
    """Orphans of a sandbox (a dead kernel's forks) are re-parented to us, so we can reap them:
    zombies would otherwise count against the sandbox user's process limit forever."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except (AttributeError, OSError):
            pass


def _procs_of(uid: int) -> list:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    out.append(int(pid))
            except FileNotFoundError:
                pass
    return out


def _is_sandbox_kernel(pid: int) -> bool:
    """Is `pid` the kernel of its sandbox, i.e. PID 2 of its own PID namespace?"""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) > 1 and ids[-1] == "2"
    except OSError:
        pass
    return False


def kill_user_processes(uid: int, keep: int | None = None) -> None:
    """After a sandbox ends, nothing it started may live on (fork bombs, daemons), and its zombies
    are reaped. With `keep`, every process of the sandbox but the kernel (`keep`, or PID 2 of its
    namespace) is killed."""
    if not can_isolate() or uid < 0:
        return
    for _ in range(3):
        pids = [p for p in _procs_of(uid) if keep is None or (p != keep and not _is_sandbox_kernel(p))]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
        for pid in pids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def write_spec(workdir: Path, uid: int, limits: Limits, hide: list, stage: Path) -> Path:
    expose, links = root_view() if isolating(limits) else ([], [])
    hide = [h for h in hide if any(h == e or h.startswith(e.rstrip("/") + "/") for e in expose)]
    spec = Spec(
        workdir=str(workdir),
        uid=uid,
        stage=str(stage),
        expose=list(expose),
        links=[list(x) for x in links],
        hide=sorted(set(hide)),
        limits=asdict(limits),
    )
    path = workdir.parent / f"{workdir.name}.spec.json"
    path.write_text(json.dumps(spec.__dict__))
    return path


if __name__ == "__main__":
    args = sys.argv[1:]
    sep = args.index("--")
    launch(args[0], args[sep + 1 :])
