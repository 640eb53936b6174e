"""Grading on a Dask cluster: `python -m autograder grade ... --scheduler tcp://HOST:8786`.

The grading command stays the one process that collects submissions, keeps the resume state
(OUT/.state), writes the gradebook and the feedback: exactly as in a local run, each result goes
through the same `finish` callback. Only `grade_one` moves: each submission becomes one Dask task,
and the task carries the notebook's bytes, so a worker on another machine needs this repository and
its .venv but not the submissions folder.

On a worker, one grading process grades one notebook at a time, in its own sandbox: the task takes a
per-process lock (a worker started with several threads still runs one kernel at a time, since the
sandbox uid is claimed per process), makes the process a subreaper, and grades in a work folder of
its own under the worker's temporary directory. Start workers with `--nthreads 1` and as many
`--nworkers` as cores (docs/scaling.md).

Faults:
- a worker that dies mid-task (killed, out of memory, its machine gone) has its task re-run on
  another worker by the scheduler; `retries` re-runs a task that raised;
- a scheduler that disappears ends the command with `SchedulerLost`; every result that came back
  before is in the gradebook and OUT/.state, so running the same command again (against a new
  scheduler, or locally) grades only what is missing. Grades are keyed by (student, lesson,
  question) and overwritten, so nothing is counted twice;
- a scheduler with no worker at all for `NO_WORKER_TIMEOUT` seconds (none started, every one gone,
  or a `dask worker` that gave up at its `--death-timeout` before it could join: it exits quietly)
  ends the command with `NoWorkers`, resumable the same way. Dask itself would let the tasks wait
  for a worker forever, and the command with them, silently.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from autograder.collect.submissions import Submission
from autograder.judge.grade import grade_one, grader_fault, grading_version
from autograder.outcomes import Graded, GradingStopped, NoWorkers, SchedulerLost, WorkerMismatch
from autograder.run import sandbox, users, workdirs
from autograder.run.runner import Station

# How long the command waits while the scheduler has no worker at all before it stops (seconds).
# Generous: an adaptive cluster (dask-jobqueue's `adapt`) starts workers only once tasks wait.
NO_WORKER_TIMEOUT = 600.0


@functools.cache
def code_version() -> str:
    """A hash of everything a grade depends on (`grade.grading_version`). A worker refuses to grade
    when its hash is not the command's."""
    return grading_version()


# ---------------------------------------------------------------------------------------------
# worker side


class WorkerStation:
    """A Dask worker process's place to grade: a work folder of its own (made on the first task,
    after sweeping what killed workers left) and one `runner.Station` in it. Tasks of a worker
    started with several threads take turns: the station runs one kernel at a time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.base: Path | None = None
        self.station: Station | None = None

    def folder(self) -> Path:
        if self.base is None or not self.base.exists():
            import torch

            torch.set_num_threads(1)
            parent = workdirs.grading_parent()  # room for the kernels' unix sockets
            sweep_dead_workers(parent)
            self.base = Path(tempfile.mkdtemp(prefix=f"tbb-dask-{os.getpid()}-", dir=parent))
            os.chmod(self.base, 0o711)
            atexit.register(shutil.rmtree, str(self.base), True)
            if self.station is not None:  # its folder is gone: a new station in the new one
                self.station.close()
                self.station = None
        return self.base

    def close(self) -> None:
        """Remove the work folder, then give the station back (the worker is closing, and its
        nanny may not wait long: the folder first)."""
        base, self.base = self.base, None
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
        if self.station is not None:
            self.station.close()
            self.station = None

    def grade(self, sub: Submission, limits: sandbox.Limits, hide: list) -> Graded:
        base = self.folder()
        if self.station is None or self.station.limits != limits:
            if self.station is not None:
                self.station.close()
            self.station = Station(limits, base / "work", 0)
        self.station.hide = sandbox.secret_paths(list(hide) + [str(base / "incoming")])
        return grade_one(sub, self.station)


# A Dask task is handed nothing but its arguments, so this worker process's station lives here.
_here = WorkerStation()


class TidyOnClose(WorkerPlugin):
    """A Dask worker plugin (registered by `grade_on_cluster`): a worker that closes removes its
    work folder. Its atexit hook is not enough: a nanny's worker process ends with os._exit, which
    runs none. (A killed worker's folder is swept by the next worker, `sweep_dead_workers`.)"""

    name = "tbb-tidy-on-close"

    def teardown(self, worker) -> None:
        _here.close()


def sweep_dead_workers(tmp: str | None = None) -> int:
    """A worker process killed mid-task (SIGKILL, out of memory) leaves its kernel and work folder
    behind: kill such kernels and remove such folders of workers that are no longer alive. Every
    worker does this when it starts grading; returns how many folders were swept."""
    import signal

    swept = 0
    for folder in Path(tmp or tempfile.gettempdir()).glob("tbb-dask-*-*"):
        try:
            pid = int(folder.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        killed = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:  # a cold kernel names its folder on its command line; a warm (forked) one is in it
                mine = str(folder).encode() in (proc / "cmdline").read_bytes()
                mine = mine or os.readlink(proc / "cwd").startswith(str(folder) + "/")
                if mine:
                    os.kill(int(proc.name), signal.SIGKILL)
                    killed.append(int(proc.name))
            except (OSError, ProcessLookupError):
                pass
        time.sleep(0.1 if killed else 0)
        for pid in killed:  # orphans are re-parented to a subreaper, maybe us: reap them
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        shutil.rmtree(folder, ignore_errors=True)
        swept += 1
    return swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) is dead too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def grade_task(
    student: str,
    lesson: str,
    note: str,
    filename: str,
    data: bytes,
    limits: sandbox.Limits,
    hide: list,
    version: str = "",
) -> Graded:
    """One submission, graded on whichever worker process runs this task."""
    if version and version != code_version():
        raise WorkerMismatch(_mismatch_message(version, {socket.gethostname(): code_version()}))
    with _here.lock:
        users.become_subreaper()
        incoming = _here.folder() / "incoming" / uuid.uuid4().hex
        incoming.mkdir(parents=True, mode=0o700)
        try:
            path = incoming / filename
            path.write_bytes(data)
            return _here.grade(Submission(student, lesson, path, note), limits, hide)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# the grading command's side


def grade_on_cluster(
    scheduler: str,
    runnable: list,
    limits: sandbox.Limits,
    hide: list,
    finish,
    retries: int = 2,
    connect_timeout: float | None = None,
    window: int | None = None,
    no_worker_timeout: float | None = None,
) -> int:
    """Grade `runnable` [(submission, fingerprint, state_path)] on the cluster at `scheduler`,
    calling `finish(sub, fp, saved, graded)` in this process as each result arrives. At most
    `window` tasks are in flight (default: 4 per worker thread, at least 16), so a course of any
    size never sits whole in the scheduler's memory. Stops with `NoWorkers` when the scheduler has
    had no worker for `no_worker_timeout` seconds (default `NO_WORKER_TIMEOUT`). Returns how many
    were graded."""
    from distributed import Client, as_completed

    try:
        # timeout: how long to wait for the scheduler, at the start and again if it goes away
        # (default: dask's distributed.comm.timeouts.connect, 30 s)
        kwargs = {} if connect_timeout is None else {"timeout": connect_timeout}
        client = Client(scheduler, set_as_default=False, **kwargs)
    except (OSError, TimeoutError) as exc:
        raise SchedulerLost(
            f"could not reach the Dask scheduler at {scheduler} ({exc}); nothing was graded on the cluster"
        ) from exc
    done = 0
    try:
        if window is None:
            threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values())
            window = max(16, 4 * threads)
        version = code_version()
        theirs = {w: v for w, v in client.run(code_version).items() if v != version}
        client.register_plugin(TidyOnClose(), name=TidyOnClose.name)
        if theirs:
            raise WorkerMismatch(_mismatch_message(version, theirs))
        queue = list(runnable)
        inflight: dict = {}

        def submit_next(ac=None):
            sub, fp, saved = queue.pop(0)
            fut = client.submit(
                grade_task,
                sub.student,
                sub.lesson,
                sub.note,
                sub.path.name,
                sub.path.read_bytes(),
                limits,
                list(hide),
                version,
                retries=retries,
                pure=False,
                key=f"grade-{sub.student}-{sub.lesson}-{uuid.uuid4().hex[:8]}",
            )
            inflight[fut] = (sub, fp, saved)
            if ac is not None:
                ac.add(fut)
            return fut

        try:
            first = [submit_next() for _ in range(min(window, len(queue)))]
            ac = as_completed(first, loop=client.loop)
            alone = NO_WORKER_TIMEOUT if no_worker_timeout is None else no_worker_timeout

            def no_workers():
                return NoWorkers(_no_workers(scheduler, alone, done, len(runnable)))

            for fut in _as_they_finish(ac, client, alone, no_workers):
                sub, fp, saved = inflight.pop(fut)
                if fut.status == "cancelled" or client.status not in ("running", "connecting"):
                    raise SchedulerLost(_lost(scheduler, done, len(runnable)))
                try:
                    g = fut.result()
                except WorkerMismatch:
                    raise
                except Exception as exc:  # noqa: BLE001 - a grader fault on one submission
                    if _is_lost(exc) or client.status not in ("running", "connecting"):
                        raise SchedulerLost(_lost(scheduler, done, len(runnable))) from exc
                    g = grader_fault(sub, exc)
                fut.release()
                finish(sub, fp, saved, g)
                done += 1
                if queue:
                    submit_next(ac)
        except GradingStopped:
            raise
        except (OSError, TimeoutError) as exc:
            raise SchedulerLost(_lost(scheduler, done, len(runnable))) from exc
        except Exception as exc:
            if _is_lost(exc):
                raise SchedulerLost(_lost(scheduler, done, len(runnable))) from exc
            raise
    finally:
        try:
            client.close(timeout=5)
        except Exception:  # noqa: BLE001 - closing a client whose scheduler is gone
            pass
    return done


def _as_they_finish(ac, client, alone_s: float, stop):
    """The futures of `ac` as they finish (as iterating it gives them), except that it raises
    `stop()` once the scheduler has had no worker at all for `alone_s` seconds: a task then waits
    for a worker forever, and so would the command."""
    alone_since = None
    next_look = time.monotonic()
    while not ac.is_empty():
        batch = ac.next_batch(block=False)
        if batch:
            yield from batch
            continue
        now = time.monotonic()
        if now >= next_look:
            next_look = now + 2
            n = _worker_count(client)
            if n == 0:
                alone_since = now if alone_since is None else alone_since
                if now - alone_since >= alone_s:
                    raise stop()
            elif n is not None:
                alone_since = None
        time.sleep(0.1)


def _worker_count(client) -> int | None:
    """How many workers the scheduler has now; None when it cannot say (it is not answering: its
    loss is told apart by the futures)."""
    if client.status != "running":
        return None
    try:
        info = client.sync(client.scheduler.identity, n_workers=0, callback_timeout=10)
        return int(info["n_workers"])
    except Exception:  # noqa: BLE001 - a scheduler going away, an old one without n_workers
        return None


def _no_workers(scheduler: str, alone_s: float, done: int, total: int) -> str:
    return (
        f"the Dask scheduler at {scheduler} has had no worker for {alone_s:.0f} s, so nothing more "
        f"can be graded ({done} of {total} submissions came back). Start workers for it (`dask worker "
        f"{scheduler} --nthreads 1 --nworkers N`, docs/scaling.md) and check that they stay connected "
        "(a worker that cannot join within its --death-timeout exits). Every one that came back is in "
        "the gradebook and in OUT/.state: run the same command again and it resumes with the rest."
    )


def _mismatch_message(version: str, theirs: dict) -> str:
    where = ", ".join(f"{w} has {v}" for w, v in sorted(theirs.items()))
    return (
        f"Dask workers grade with other solutions/checks than this command ({version}): {where}. "
        "Deploy the same commit of the repository to every worker (docs/scaling.md); nothing "
        "graded so far is lost: fix the workers and run the same command again."
    )


def _is_lost(exc: BaseException) -> bool:
    from asyncio import CancelledError

    from distributed.comm.core import CommClosedError

    return isinstance(exc, (CancelledError, CommClosedError)) or "scheduler-connection-lost" in str(exc)


def _lost(scheduler: str, done: int, total: int) -> str:
    return (
        f"lost the Dask scheduler at {scheduler} after {done} of {total} submissions came back. "
        "Every one that came back is in the gradebook and in OUT/.state: run the same command "
        "again (with a new scheduler, or without --scheduler to grade locally) and it resumes "
        "with the rest; nothing is graded twice into the totals."
    )


def wait_for_workers(scheduler: str, n: int, timeout: float = 60) -> None:
    """Block until `n` workers are connected (for scripts and benchmarks)."""
    from distributed import Client

    with Client(scheduler, timeout=timeout, set_as_default=False) as client:
        client.wait_for_workers(n, timeout=timeout)
