"""The local way to grade many notebooks: a pool of worker processes on this machine, each with a
station of its own (`runner.Station`: a slot, a sandbox uid, a warm-kernel zygote). A worker that
dies breaks the pool; what it left unfinished is graded again in a fresh pool (`POOL_TRIES`)."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from autograder.judge.grade import grade_one, grader_fault
from autograder.run import sandbox, users
from autograder.run.runner import Station

POOL_TRIES = 3

# A pool worker's station (runner.Station), made by `_init_worker` in each worker process: a
# process pool hands its tasks nothing but their arguments, so the worker's module holds it.
_station: dict = {}


def _init_worker(slots, args, grader_pid=None):
    limits, base, hide = args
    _station["here"] = Station(limits, Path(base), slots.get(), hide)
    users.become_subreaper()
    if grader_pid:  # a killed grader takes its workers, their zygotes and kernels with it
        sandbox.exit_when_gone(grader_pid)
    import torch  # noqa: F401  - pay the import once per worker, not per submission

    torch.set_num_threads(1)


def _work(sub):
    return grade_one(sub, _station["here"])


def grade_in_pools(runnable, workers, limits, tmp, hide, finish, quiet=False) -> None:
    """Grade `runnable` [(submission, fingerprint, state path)] on `workers` processes; `finish` gets
    each result. A broken pool's unfinished submissions go to a fresh pool, up to POOL_TRIES times;
    after that they are graded as the grader's fault."""
    ctx = mp.get_context("forkserver")
    pending = runnable
    for attempt in range(POOL_TRIES):
        pending = _grade_in_pool(ctx, pending, workers, limits, tmp, hide, finish)
        if not pending:
            return
        if not quiet and attempt + 1 < POOL_TRIES:
            print(
                f"a grading worker died; grading its {len(pending)} unfinished submissions again "
                f"(try {attempt + 2} of {POOL_TRIES})",
                file=sys.stderr,
                flush=True,
            )
    for sub, fp, saved in pending:
        finish(sub, fp, saved, grader_fault(sub, BrokenProcessPool("its grading worker died every time")))


def _grade_in_pool(ctx, runnable, workers, limits, tmp, hide, finish) -> list:
    """Grade `runnable` in one process pool; return those a broken pool left unfinished."""
    slots = ctx.Queue()  # no Manager: its server process would outlive a killed grader
    for i in range(workers):
        slots.put(i)
    unfinished = []
    with (
        _forkserver_in(tmp),
        ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(slots, (limits, str(tmp), hide), os.getpid()),
        ) as pool,
    ):
        futures = {pool.submit(_work, sub): (sub, fp, saved) for sub, fp, saved in runnable}
        for fut in as_completed(futures):
            sub, fp, saved = futures[fut]
            try:
                g = fut.result()
            except BrokenProcessPool:
                unfinished.append((sub, fp, saved))
                continue
            except Exception as exc:  # noqa: BLE001 - a grader fault on one submission
                g = grader_fault(sub, exc)
            finish(sub, fp, saved, g)
    return unfinished


@contextlib.contextmanager
def _forkserver_in(tmp: Path):
    """Run multiprocessing's forkserver with its socket in this run's locked folder `tmp`.

    The forkserver keeps its socket in a pymp-* folder of its own, which a killed grader leaves in
    /tmp; inside `tmp` it goes with the run, and a killed run's is swept by the next one. The server
    is one per process, so it is stopped on the way out: a later run in the same process (a test
    session, a notebook) would otherwise reach for a socket whose folder is gone.
    """
    from multiprocessing import forkserver, process

    config = process.current_process()._config
    before = config.get("tempdir")
    _stop_forkserver(forkserver)  # one started before this run listens in another folder
    config["tempdir"] = str(tmp)
    try:
        yield
    finally:
        _stop_forkserver(forkserver)
        if before is None:
            config.pop("tempdir", None)
        else:
            config["tempdir"] = before


def _stop_forkserver(forkserver) -> None:
    try:
        forkserver._forkserver._stop()
    except FileNotFoundError:  # its socket's folder was removed already; the server has ended
        forkserver._forkserver._forkserver_pid = None
