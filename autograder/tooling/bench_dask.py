"""`make bench` rows for the Dask path: the same generated class graded by `python -m autograder grade
--scheduler ...` on a local Dask cluster of 1 and 2 worker processes (one thread each).

    from autograder.tooling.bench_dask import bench_dask
    rows = bench_dask(cls, tmp, n)     # -> [{"name", "workers", "wall", "per_notebook", "cpu", "rss",
                                       #      "startup", "notebooks"}, ...]

`wall` is the grading command's wall time against an already started cluster (what a course with
standing workers pays); `startup` is the time to start the cluster and see its workers, paid once.
`cpu` adds the grading command's CPU time to the workers' (kernels included); `rss` is the largest
peak resident size (MB) among the grading command and the workers. Not a test: numbers depend on the
machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _worker_usage():
    r_self = resource.getrusage(resource.RUSAGE_SELF)
    r_kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r_self.ru_utime + r_self.ru_stime + r_kids.ru_utime + r_kids.ru_stime
    return cpu, max(r_self.ru_maxrss, r_kids.ru_maxrss) / 1024


def bench_dask(cls: Path, tmp: Path, n: int, workers=(1, 2)) -> list:
    """Grade the class at `cls` (n notebooks) through a local Dask cluster of each size in `workers`;
    outputs go under `tmp`. Returns one dict per cluster size."""
    from distributed import Client, LocalCluster

    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    rows = []
    for k in workers:
        t0 = time.perf_counter()
        with (
            LocalCluster(
                n_workers=k,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                host="127.0.0.1",
                silence_logs=40,
            ) as cluster,
            Client(cluster, set_as_default=False) as client,
        ):
            client.wait_for_workers(k, timeout=120)
            startup = time.perf_counter() - t0
            before = client.run(_worker_usage)
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t1 = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade",
                    str(cls),
                    "--out",
                    str(tmp / f"dask-{k}"),
                    "--scheduler",
                    cluster.scheduler_address,
                    "--quiet",
                    "--no-resume",
                ],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            wall = time.perf_counter() - t1
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            after = client.run(_worker_usage)
        grader_cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        worker_cpu = sum(after[w][0] - before.get(w, (0, 0))[0] for w in after)
        rss = max([r1.ru_maxrss / 1024] + [v[1] for v in after.values()])
        rows.append(
            {
                "name": f"ours on Dask, {k} worker{'s' if k > 1 else ''}",
                "workers": k,
                "wall": wall,
                "per_notebook": wall / max(n, 1),
                "cpu": grader_cpu + worker_cpu,
                "rss": rss,
                "startup": startup,
                "notebooks": n,
            }
        )
        print(f"  ours on Dask x{k}: {wall:.1f} s (cluster start {startup:.1f} s)", flush=True)
    return rows


def main(students: int = 8) -> int:
    """Stand-alone: `python -m autograder.tooling.bench_dask [STUDENTS]`."""
    import tempfile

    from autograder.tooling.checkout import examples

    examples()
    from examples import lessons_with_answers
    from examples.build import benchmark_class

    lessons = lessons_with_answers()
    with tempfile.TemporaryDirectory(prefix="tbb-bench-dask-") as tmp:
        tmp = Path(tmp)
        n = benchmark_class(tmp / "class", students, lessons)
        print(f"benchmark class: {students} students x {len(lessons)} lessons = {n} notebooks", flush=True)
        rows = bench_dask(tmp / "class", tmp, n)
    print(
        f"\n{'grader':34s} {'wall s':>8s} {'s/notebook':>10s} {'CPU s':>8s} {'peak MB':>8s} {'start s':>8s}"
    )
    for r in rows:
        print(
            f"{r['name']:34s} {r['wall']:8.1f} {r['per_notebook']:10.2f} {r['cpu']:8.1f} {r['rss']:8.0f} "
            f"{r['startup']:8.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8))
