"""The sandbox users: a uid of its own for each grading process, the folders it may write before
its kernel is up, and the processes it leaves behind (killed, reaped)."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from autograder.run.sandbox import Limits, can_isolate


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
