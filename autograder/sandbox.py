"""Where student code runs: a kernel process with limits, its own user, its own view of the disk.

The grader starts each submission's kernel through this module (`python -m autograder.sandbox
SPEC -- KERNEL_CMD...`), which, before it becomes the kernel:

1. (as root) enters new mount and network namespaces: the network is gone (the kernel talks to the
   grader over unix sockets, not TCP), and the paths the grader must keep to itself (solutions,
   hidden tests, the gradebook, the output folder, other students' submissions and work folders)
   are covered by empty tmpfs mounts; only the submission's own work folder is put back;
2. sets resource limits: address space (memory), CPU seconds, processes, file size, open files;
3. (as root) drops to an unprivileged uid of its own (one per worker slot, so one sandbox's fork bomb
   cannot use up another's process quota, and no sandbox can read another's files);
4. replaces the environment with a minimal one that does not say it is being graded.

Without root (a laptop), steps 1 and 3 are skipped with a warning: the limits still hold, but student
code runs as you and can read your files. For a real course, run the grader as root inside a
container (see README, "The sandbox").
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

ROOT = Path(__file__).resolve().parent.parent
# The student package the kernel imports (the checks and the probe's run_steps): wherever it is
# installed (editable from student/, or a wheel in site-packages), the kernel must see it.
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
    isolate: bool = True  # namespaces and a separate uid, where the OS allows
    base_uid: int = 61000  # sandbox uids are the first free ones from here (one per worker)
    warm_kernels: bool = True  # fork kernels from a pre-imported zygote (autograder/zygote.py)


@dataclass
class Spec:
    """What the launcher needs: written by the grader, read before the kernel starts."""

    workdir: str
    uid: int
    hide: list = field(default_factory=list)  # paths covered by an empty tmpfs
    expose: list = field(default_factory=list)  # paths put back (read-only) under hidden ones
    stage: str = ""  # a root-only empty dir used while re-exposing
    limits: dict = field(default_factory=dict)


def can_isolate() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and sys.platform.startswith("linux")


_warned = False


def warn_if_degraded(limits: Limits) -> None:
    global _warned
    if limits.isolate and not can_isolate() and not _warned:
        _warned = True
        warnings.warn(
            "sandbox degraded: the grader is not root on Linux, so student code runs as "
            "your user, with network, and can read your files. Resource limits still "
            "apply. Run the grader as root in a container for real grading.",
            stacklevel=2,
        )


def secret_paths(extra=()) -> list:
    """What student code must never see: the reference notebooks, the build folder (course,
    release, gradebook), the example class, the tests, the repo's history, plus `extra`."""
    paths = [
        ROOT / "solutions",
        ROOT / "build",
        ROOT / "autograder" / "examples",
        ROOT / "tests",
        ROOT / ".git",
        ROOT / "site",
        ROOT / "_build",
    ]
    return [str(p) for p in paths + [Path(e) for e in extra] if Path(p).exists()]


# ---------------------------------------------------------------------------------------------
# The launcher (runs as the kernel's parent, then exec()s the kernel)

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 1, 32, 4096, 16384, 1 << 18, 2


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _isolate(spec: Spec) -> None:
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    keep = [spec.workdir] + list(spec.expose)
    staged = []
    for i, path in enumerate(keep):  # bind what must stay visible aside first...
        slot = os.path.join(spec.stage, str(i))
        os.makedirs(slot, exist_ok=True)
        _check(libc.mount(path.encode(), slot.encode(), None, MS_BIND | MS_REC, None), f"stage {path}")
        staged.append((slot, path))
    hidden = []
    for path in spec.hide:  # ...cover the secrets with empty tmpfs...
        if any(path == h or path.startswith(h + "/") for h in hidden):
            continue
        hidden.append(path)
        _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", 0, b"size=1m,mode=0755"), f"hide {path}")
    for i, (slot, path) in enumerate(staged):  # ...and put the kept paths back
        os.makedirs(path, exist_ok=True)
        _check(libc.mount(slot.encode(), path.encode(), None, MS_BIND | MS_REC, None), f"expose {path}")
        if i > 0:
            _check(
                libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None),
                f"read-only {path}",
            )
        _check(libc.umount2(slot.encode(), MNT_DETACH), "unstage")


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


def clean_env(workdir: str) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    return {
        **keep,
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONHASHSEED": "0",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLCONFIGDIR": os.path.join(workdir, ".mpl"),
    }


def enter(spec_path: str) -> dict:
    """Turn this process into a sandbox (namespaces, work folder, limits, user); returns the
    environment the kernel must run with."""
    spec = Spec(**json.loads(Path(spec_path).read_text()))
    limits = Limits(**spec.limits)
    isolated = limits.isolate and can_isolate()
    if isolated:
        _isolate(spec)
    os.chdir(spec.workdir)
    _set_limits(limits)
    if isolated:
        os.setgroups([])
        os.setgid(spec.uid)
        os.setuid(spec.uid)
    return clean_env(spec.workdir)


def launch(spec_path: str, cmd: list) -> None:
    env = enter(spec_path)
    os.execvpe(cmd[0], cmd, env)


# ---------------------------------------------------------------------------------------------
# The grader's side


_claimed: dict = {}


def claim_uid(limits: Limits) -> int:
    """A sandbox uid no other grading process on this machine is using (held by a file lock for
    this process's life), so two graders never kill or read each other's kernels."""
    import fcntl

    if "uid" in _claimed:
        return _claimed["uid"]
    locks = Path(tempfile.gettempdir()) / "tbb-sandbox-uids"
    locks.mkdir(mode=0o700, exist_ok=True)
    for uid in range(limits.base_uid, limits.base_uid + 4096):
        fd = os.open(locks / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _claimed.update(uid=uid, fd=fd)
        return uid
    raise RuntimeError("no free sandbox uid")


def prepare_workdir(base: Path, slot: int, limits: Limits) -> tuple[Path, int]:
    """A fresh, empty work folder owned by this process's sandbox user (0700)."""
    uid = claim_uid(limits) if (can_isolate() and limits.isolate) else -1
    work = base / f"slot{slot}"
    if work.exists():
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if can_isolate() and limits.isolate:
        os.chown(work, uid, uid)
    os.chmod(work, 0o700)
    return work, uid


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


def kill_user_processes(uid: int, keep: int | None = None) -> None:
    """After a sandbox ends, nothing it started may live on (fork bombs, daemons), and its zombies
    are reaped. With `keep`, every process of the sandbox but that one (the kernel) is killed."""
    if not can_isolate() or uid < 0:
        return
    import signal
    import time

    for _ in range(3):
        pids = [p for p in _procs_of(uid) if p != keep]
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


class SandboxKernelManager(AsyncKernelManager):
    """A KernelManager whose kernel is started through the sandbox launcher, over unix sockets."""

    sandbox_spec: str = ""
    sandbox_uid: int = -1
    zygote = None  # a warm kernel factory (autograder/zygote.py), or None for a cold start

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.sandbox_uid >= 0 and os.path.exists(self.connection_file):
            os.chown(self.connection_file, self.sandbox_uid, self.sandbox_uid)
        if self.zygote is not None:
            from .zygote import ZygoteProvisioner

            self.provisioner.__class__ = ZygoteProvisioner  # launch by fork, not by exec
            self.provisioner.zygote = self.zygote
            self.provisioner.sandbox_spec = self.sandbox_spec
        return [sys.executable, "-m", "autograder.sandbox", self.sandbox_spec, "--", *cmd]


def _closed_ancestor(path: Path):
    """The highest ancestor of `path` that other users cannot enter (e.g. /root), or None."""
    for parent in reversed(path.parents):
        if str(parent) != "/" and not (os.stat(parent).st_mode & 0o001):
            return parent
    return None


def runtime_paths() -> tuple[list, list]:
    """(hide, expose) so that the interpreter, the venv and the checks package (byhand) are reachable by an
    unprivileged user even when they live under a closed home folder such as /root."""
    hide, expose = [], []
    needed_paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), ROOT / "autograder", BYHAND}
    for needed in needed_paths:
        closed = _closed_ancestor(needed)
        if closed is not None:
            hide.append(str(closed))
            expose.append(str(needed))
    return sorted(set(hide)), sorted(set(expose))


def write_spec(workdir: Path, uid: int, limits: Limits, hide: list, stage: Path) -> Path:
    rt_hide, rt_expose = runtime_paths()
    hide = sorted(set(hide) | set(rt_hide), key=len)
    spec = Spec(
        workdir=str(workdir), uid=uid, hide=hide, expose=rt_expose, stage=str(stage), limits=asdict(limits)
    )
    path = workdir.parent / f"{workdir.name}.spec.json"
    path.write_text(json.dumps(spec.__dict__))
    return path


if __name__ == "__main__":
    args = sys.argv[1:]
    sep = args.index("--")
    launch(args[0], args[sep + 1 :])
