"""Past one machine, with the real parts: a throwaway PostgreSQL server (Debian's packages, on
loopback) as the gradebook and a local Dask cluster of worker processes as the graders.

- the same grades through PostgreSQL + Dask as through SQLite locally;
- several graders writing one PostgreSQL gradebook at once lose and double-count nothing;
- a worker killed mid-task loses no submission;
- a scheduler that disappears stops the command with a clear error, and the same command resumes.
"""

import csv
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from autograder.classroom import grade_class
from autograder.distributed import SchedulerLost, sweep_dead_workers, wait_for_workers
from autograder.record import gradebook
from autograder.state import to_json as _graded_to_json
from examples.build import CLASS

STUDENTS = ("alice", "bob", "carol")  # a right answer, wrong ones, partly right ones
LESSONS = ("01_attention", "02_layernorm")


# ---------------------------------------------------------------------------------------------
# a throwaway PostgreSQL cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_bindir() -> Path:
    """Debian's PostgreSQL binaries (`make test-full` installs them with .ci/install-postgres.sh)."""
    hits = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if not hits:
        pytest.fail(
            "got no PostgreSQL server binaries, expected /usr/lib/postgresql/*/bin/initdb: "
            "run `bash .ci/install-postgres.sh` (what make test-full does) first"
        )
    return Path(hits[-1]).parent


def _results(out: Path) -> dict:
    """{file: mtime} of the graded submissions in OUT/.state (manual.json holds a person's grades)."""
    return {p.name: p.stat().st_mtime_ns for p in (out / ".state").glob("*.json") if p.name != "manual.json"}


@pytest.fixture(scope="session")
def postgres():
    """(server URL without database, create_database(name) -> URL); stopped and removed at the end."""
    bindir = _postgres_bindir()
    root = Path(tempfile.mkdtemp(prefix="tbb-pg-"))
    as_user = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as the postgres user
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root but there is no `postgres` user to run the server as")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        as_user = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", "--"]
    port = _free_port()
    data, log = root / "data", root / "server.log"

    def run(*cmd, **kw):
        return subprocess.run(
            as_user + [str(bindir / cmd[0]), *cmd[1:]],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=120,
            **kw,
        )

    proc = run("initdb", "-D", str(data), "-A", "trust", "-U", "tbb", "-E", "UTF8", "--locale=C", "--no-sync")
    if proc.returncode != 0:
        pytest.fail(f"initdb failed:\n{proc.stdout}\n{proc.stderr}")
    opts = f"-h 127.0.0.1 -p {port} -k {root} -F -c max_connections=200"
    proc = run("pg_ctl", "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60", "start")
    if proc.returncode != 0:
        pytest.fail(
            f"pg_ctl start failed:\n{proc.stdout}\n{proc.stderr}\n{log.read_text() if log.exists() else ''}"
        )
    server = f"postgresql+psycopg2://tbb@127.0.0.1:{port}"

    def create_database(name: str) -> str:
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="tbb", dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return f"{server}/{name}"

    try:
        yield server, create_database
    finally:
        run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# a local Dask cluster, the small class, and the reference run (SQLite, local pool)


@pytest.fixture(scope="session")
def dask_cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
        silence_logs=40,
    )
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(2, timeout=120)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()
        sweep_dead_workers()  # workers the nanny had to kill leave their folders


@pytest.fixture(scope="session")
def small_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("small-class")
    for student in STUDENTS:
        (root / student).mkdir()
        for lesson in LESSONS:
            shutil.copy(CLASS / student / f"{lesson}.ipynb", root / student / f"{lesson}.ipynb")
    return root


@pytest.fixture(scope="session")
def local_run(small_class, tmp_path_factory):
    out = tmp_path_factory.mktemp("local-sqlite")
    result = grade_class(small_class, out, workers=2, quiet=True)
    return out, result


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _count(db_url: str, table: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(f"SELECT count(*) FROM {table}")).scalar()
    finally:
        engine.dispose()


def _check_gradebook(db_url: str, local_out: Path, submissions: int) -> None:
    """Scores equal the reference run's; one row per student, submission and graded question."""
    expected = gradebook.scores(gradebook.default_url(local_out))
    got = gradebook.scores(db_url)
    wrong = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
    assert not wrong and set(got) == set(expected), (
        f"gradebook scores (got, expected): {wrong or set(got) ^ set(expected)}"
    )
    assert _count(db_url, "submitted_assignment") == submissions
    assert _count(db_url, "grade") == len(expected), "duplicate grade rows"
    with gradebook.open_gradebook(db_url) as gb:  # nbgrader's own totals: nothing added twice
        for row in _rows(local_out / "summary.csv"):
            sub = gb.find_submission(row["lesson"], row["student"])
            assert sub.score == float(row["points"]), f"{row['student']}/{row['lesson']}: total {sub.score}"


# ---------------------------------------------------------------------------------------------
# the tests


def test_postgres_and_dask_give_the_same_grades_as_sqlite_locally(
    postgres, dask_cluster, local_run, small_class, tmp_path
):
    """Is grades.csv byte for byte the local SQLite run's when PostgreSQL and Dask do the work?"""
    local_out, _ = local_run
    cluster, _ = dask_cluster
    _, create_database = postgres
    db_url = create_database("same_grades")
    out = tmp_path / "out"
    grade_class(small_class, out, db_url=db_url, scheduler=cluster.scheduler_address, quiet=True)
    assert (out / "grades.csv").read_text() == (local_out / "grades.csv").read_text()
    assert (out / "summary.csv").read_text() == (local_out / "summary.csv").read_text()
    _check_gradebook(db_url, local_out, len(STUDENTS) * len(LESSONS))
    for student in STUDENTS:
        for lesson in LESSONS:
            assert (out / "feedback" / student / f"{lesson}.html").exists()


_WRITER = """
import json, random, sys, time
from autograder.record import gradebook
from autograder.state import from_json as _graded_from_json
db_url, results, start, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
graded = [_graded_from_json(d) for d in json.load(open(results))]
time.sleep(max(0.0, start - time.time()))
gradebook.register_lessons(db_url, sorted({g.lesson for g in graded}))
gb = gradebook.open_gradebook(db_url)
rng = random.Random(seed)
for _ in range(3):                      # every grader records every submission, three times over
    rng.shuffle(graded)
    for g in graded:
        gradebook.record(gb, [g])
gb.close()
"""


def test_concurrent_graders_share_one_postgres_gradebook(postgres, local_run, tmp_path):
    """Do four grader processes writing one fresh PostgreSQL gradebook at the same moment (schema
    creation, lesson registration, the same students and submissions) lose or double-count nothing?"""
    local_out, result = local_run
    _, create_database = postgres
    db_url = create_database("concurrent")
    results = tmp_path / "results.json"
    results.write_text(json.dumps([_graded_to_json(g) for g in result["graded"]]))
    start = time.time() + 6  # past the import time of every process: they start together
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, db_url, str(results), str(start), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for seed in range(4)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, f"a grader failed:\n{text[-3000:]}"
    _check_gradebook(db_url, local_out, len(STUDENTS) * len(LESSONS))
    assert _count(db_url, "student") == len(STUDENTS)
    assert _count(db_url, "assignment") == len(LESSONS)


def test_killed_worker_loses_no_submission(postgres, dask_cluster, local_run, small_class, tmp_path):
    """Is every submission graded, with the same grades, when a worker process is killed while it
    grades (after the first result came back)?"""
    local_out, _ = local_run
    cluster, client = dask_cluster
    _, create_database = postgres
    db_url = create_database("killed_worker")
    out = tmp_path / "out"
    killed = {}

    def killer():
        deadline = time.time() + 240
        while time.time() < deadline and not _results(out):
            time.sleep(0.1)
        while time.time() < deadline:
            busy = {w: keys for w, keys in client.processing().items() if keys}
            if busy:
                worker, keys = sorted(busy.items())[0]
                pid = client.run(os.getpid, workers=[worker])[worker]
                os.kill(pid, signal.SIGKILL)
                killed.update(worker=worker, pid=pid, keys=list(keys))
                return
            time.sleep(0.1)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    grade_class(small_class, out, db_url=db_url, scheduler=cluster.scheduler_address, quiet=True)
    t.join(timeout=10)
    assert killed, "no worker was busy to be killed: the test did not test anything"
    assert (out / "grades.csv").read_text() == (local_out / "grades.csv").read_text()
    _check_gradebook(db_url, local_out, len(STUDENTS) * len(LESSONS))
    sweep_dead_workers()  # the killed worker's kernel and folder
    client.wait_for_workers(2, timeout=120)  # the nanny restarts it for the next test


def test_lost_scheduler_stops_clearly_and_the_same_command_resumes(
    postgres, dask_cluster, local_run, small_class, tmp_path
):
    """When the scheduler is killed mid-run, does grading stop with a clear error, and does running
    it again grade only what is missing, with the same grades and nothing counted twice?"""
    import dask

    local_out, _ = local_run
    cluster, _ = dask_cluster
    _, create_database = postgres
    db_url = create_database("lost_scheduler")
    out = tmp_path / "out"
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask_bin = Path(sys.executable).parent / "dask"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    scheduler = subprocess.Popen(
        [str(dask_bin), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    worker = subprocess.Popen(
        [
            str(dask_bin),
            "worker",
            address,
            "--nthreads",
            "1",
            "--nworkers",
            "1",
            "--no-dashboard",
            # the nanny's whole start (joining the scheduler, which starts at the same moment, and
            # spawning the worker process) must fit in it, or `dask worker` exits without a word:
            # 10 s did not on two loaded cores (two pytest processes), and nothing was ever graded
            "--death-timeout",
            "120",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )

    def kill_scheduler():
        deadline = time.time() + 240
        while time.time() < deadline and not _results(out):
            time.sleep(0.1)
        scheduler.kill()

    try:
        try:  # kill_scheduler's 240 s start once the worker has joined
            wait_for_workers(address, 1, timeout=150)
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"the test's Dask worker did not join (its exit status: {worker.poll()}): {exc!r}")
        t = threading.Thread(target=kill_scheduler, daemon=True)
        t.start()
        with dask.config.set({"distributed.comm.timeouts.connect": "20s"}):
            with pytest.raises(SchedulerLost, match="run the same command again"):
                grade_class(small_class, out, db_url=db_url, scheduler=address, quiet=True)
        t.join(timeout=10)
    finally:
        scheduler.kill()
        try:
            os.killpg(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        scheduler.wait()
        worker.wait()
        time.sleep(1)
        sweep_dead_workers()
    first = _results(out)
    total = len(STUDENTS) * len(LESSONS)
    assert 1 <= len(first) < total, f"{len(first)} of {total} graded before the scheduler was killed"
    grade_class(small_class, out, db_url=db_url, scheduler=cluster.scheduler_address, quiet=True)
    again = _results(out)
    assert len(again) == total
    assert all(again[name] == mtime for name, mtime in first.items()), (
        "a finished submission was graded again"
    )
    assert (out / "grades.csv").read_text() == (local_out / "grades.csv").read_text()
    _check_gradebook(db_url, local_out, total)


def test_a_worker_with_other_solutions_is_refused(dask_cluster, small_class, tmp_path):
    """Does the command refuse, before grading anything, a cluster whose workers would grade with
    other solutions or checks than its own (a stale deployment)?"""
    from autograder.distributed import WorkerMismatch

    def stale():  # on each worker: its hash of the grading code is another commit's
        import functools

        import autograder.distributed as d

        d.code_version = functools.wraps(d.code_version)(lambda: "0000stale0000000")

    def fresh():
        import autograder.distributed as d

        d.code_version = d.code_version.__wrapped__

    cluster, client = dask_cluster
    client.run(stale)
    try:
        with pytest.raises(WorkerMismatch, match="same commit"):
            grade_class(small_class, tmp_path / "out", scheduler=cluster.scheduler_address, quiet=True)
    finally:
        client.run(fresh)
    assert not _results(tmp_path / "out"), "something was graded by a stale worker"


def test_a_scheduler_without_workers_stops_clearly(small_class, tmp_path, monkeypatch):
    """Does the command stop with a clear error, instead of waiting forever, when its scheduler has
    no worker (none started, every one gone, or a `dask worker` that could not join within its
    --death-timeout, which exits without a word)?"""
    from distributed import LocalCluster

    import autograder.distributed as d

    monkeypatch.setattr(d, "NO_WORKER_TIMEOUT", 3.0)
    outcome = {}

    def grade(address):
        try:
            outcome["returned"] = grade_class(small_class, tmp_path / "out", scheduler=address, quiet=True)
        except Exception as exc:  # noqa: BLE001
            outcome["raised"] = exc

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=40,
    ) as cluster:
        t0 = time.monotonic()
        t = threading.Thread(target=grade, args=(cluster.scheduler_address,), daemon=True)
        t.start()
        t.join(timeout=90)
        waited = time.monotonic() - t0
    t.join(timeout=30)
    assert waited < 60, f"the command still waited for a worker after {waited:.0f} s"
    exc = outcome.get("raised")
    assert isinstance(exc, d.NoWorkers), f"expected NoWorkers, got {outcome}"
    assert "no worker" in str(exc) and "run the same command again" in str(exc), str(exc)
    assert not _results(tmp_path / "out"), "something was graded without a worker"


def test_a_closed_worker_removes_its_work_folder(small_class, tmp_path):
    """Does a Dask worker that closes normally remove its `tbb-dask-<pid>-*` work folder itself,
    before any later worker sweeps it? (Its atexit hook never runs: a nanny ends its worker process
    with os._exit.)"""
    from distributed import Client, LocalCluster

    from autograder.run import workdirs

    one = tmp_path / "class" / STUDENTS[0]
    one.mkdir(parents=True)
    shutil.copy(small_class / STUDENTS[0] / f"{LESSONS[0]}.ipynb", one / f"{LESSONS[0]}.ipynb")
    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
        silence_logs=40,
    ) as cluster:
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)
            (pid,) = client.run(os.getpid).values()
            grade_class(one.parent, tmp_path / "out", scheduler=cluster.scheduler_address, quiet=True)
            folders = list(Path(workdirs.grading_parent()).glob(f"tbb-dask-{pid}-*"))
            assert folders, "the worker made no work folder: the test would prove nothing"
    left = [f for f in folders if f.exists()]
    assert not left, f"got {left} left after the worker closed, expected its folder removed"
