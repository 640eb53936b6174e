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
   (`shm_mb`). Nothing else of the host exists in there: no other checkout, no /home, no /srv
   (`rootfs.py`: the allow-list and the build);
3. forks a small init (PID 1 of the namespace: it reaps orphans, and when it dies the kernel and
   everything it started die with it), which forks the kernel (PID 2);
4. sets resource limits (address space, CPU seconds, processes, file size, open files), drops to an
   unprivileged uid of its own (one per grading process), and gets a minimal environment that does
   not say it is being graded (`users.py`: the uid, the folders it may write, the processes it
   leaves, killed and reaped; `workdirs.py`: the run's temporary folder).

Everything the kernel can write lives in memory of its own namespaces (tmpfs, SysV IPC) and is
released when its last process ends, also when the grader is killed (parent-death signals end the
chain). Without root (a laptop), steps 1-3 and the uid are skipped with a warning: the limits still
hold, but student code runs as you and can read your files (see docs/sandbox.md).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import struct
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.run.rootfs import (
    HOME,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    Root,
    libc,
    ok,
    root_view,
)

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Limits:
    """Every limit a sandboxed kernel runs under. All are configurable from the command line."""

    memory_mb: int = 4096  # address space of the kernel (RLIMIT_AS)
    cpu_seconds: int = 600  # CPU time of the kernel (RLIMIT_CPU)
    cell_timeout: int = 60  # wall clock per cell; the cell is interrupted, grading goes on
    notebook_timeout: int = 300  # wall clock for the whole notebook
    question_timeout: int = 30  # wall clock per question of the probe (its cases; at most cell_timeout)
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
# The launcher (runs as the kernel's parent, then becomes the kernel)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
PR_SET_PDEATHSIG = 1


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
    lib = libc()
    ok(lib.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    Root(spec, limits).build()
    ok(lib.sethostname(b"sandbox", 7), "sethostname")
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
        ok(lib.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")
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
