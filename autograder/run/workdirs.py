"""The temporary folder of a grading run: where it goes (short enough for unix sockets), locked
while the run lasts, removed after it, and swept when a killed run left it behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

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
