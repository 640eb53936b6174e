"""`make bench`: how fast is grading a class, against plain serial `nbgrader autograde`?

Generates a class (students x lessons: perfect, partial, mistaken and broken submissions), grades
it with our grader (parallel, sandboxed, trusted re-check) and with nbgrader's own autograde on the
same submissions, and prints one table. Also times each solution notebook's execution.
Not a test: numbers depend on the machine. Record them in the README.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import course


def _children_usage():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime, r.ru_maxrss / 1024


def _timed(cmd, cwd=None, env=None, check=True):
    cpu0, _ = _children_usage()
    t0 = time.perf_counter()
    # nbgrader autograde exits 1 when any notebook of the class fails (the broken uploads): not fatal
    subprocess.run(cmd, cwd=cwd, env=env, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    cpu1, rss = _children_usage()
    return wall, cpu1 - cpu0, rss


def nbgrader_course(root: Path, cls: Path, lessons: list) -> Path:
    course_dir = course.assemble(root / "nbgrader-course")
    for student in sorted(p.name for p in cls.iterdir()):
        for lesson in lessons:
            src = cls / student / f"{lesson}.ipynb"
            if src.exists():
                dst = course_dir / "submitted" / student / lesson
                dst.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst / f"{lesson}.ipynb")
    return course_dir


def main(students: int = 40, lessons: list | None = None, skip_nbgrader: bool = False) -> int:
    course.with_examples()  # the benchmark class is made from examples/ of the checkout
    from examples import lessons_with_answers
    from examples.build import benchmark_class

    lessons = lessons or lessons_with_answers()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="tbb-bench-") as tmp:
        tmp = Path(tmp)
        cls = tmp / "class"
        n = benchmark_class(cls, students, lessons)
        print(f"benchmark class: {students} students x {len(lessons)} lessons = {n} notebooks", flush=True)
        for workers in (1, 2):
            wall, cpu, rss = _timed(
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade",
                    str(cls),
                    "--out",
                    str(tmp / f"ours-{workers}"),
                    "--workers",
                    str(workers),
                    "--quiet",
                ],
                env=env,
            )
            rows.append((f"ours, {workers} worker{'s' if workers > 1 else ''}", wall, n, cpu, rss))
            print(f"  ours x{workers}: {wall:.1f} s", flush=True)
        try:
            from autograder.tooling.bench_dask import (
                bench_dask,  # optional: the Dask path (see docs/scaling.md)
            )

            for r in bench_dask(cls, tmp, n):
                rows.append((r["name"], r["wall"], n, r.get("cpu", float("nan")), r.get("rss", float("nan"))))
        except ImportError:
            pass
        if not skip_nbgrader:
            course_dir = nbgrader_course(tmp, cls, lessons)
            total = [0.0, 0.0, 0.0]
            for lesson in lessons:
                _timed(
                    [sys.executable, "-m", "nbgrader", "generate_assignment", lesson, "--force"],
                    cwd=course_dir,
                    env=env,
                )
                wall, cpu, rss = _timed(
                    [sys.executable, "-m", "nbgrader", "autograde", lesson, "--create", "--force"],
                    cwd=course_dir,
                    env=env,
                    check=False,
                )
                total = [total[0] + wall, total[1] + cpu, max(total[2], rss)]
                print(f"  nbgrader autograde {lesson}: {wall:.1f} s", flush=True)
            rows.append(("nbgrader autograde (serial)", total[0], n, total[1], total[2]))
    base = next((r[1] for r in rows if r[0].startswith("nbgrader")), None)
    print(
        f"\n{'grader':34s} {'wall s':>8s} {'s/notebook':>10s} {'CPU s':>8s} {'peak MB':>8s} {'vs nbgrader':>11s}"
    )
    for name, wall, count, cpu, rss in rows:
        ratio = f"{wall / base:.2f}x" if base else "-"
        print(f"{name:34s} {wall:8.1f} {wall / count:10.2f} {cpu:8.1f} {rss:8.0f} {ratio:>11s}")
    print("\nsolution notebooks, executed in full:")
    from autograder.tooling.execute import SOLUTIONS

    for lesson in lessons:
        tmpnb = Path(tempfile.mkdtemp()) / f"{lesson}.ipynb"
        shutil.copyfile(SOLUTIONS / f"{lesson}.ipynb", tmpnb)
        t0 = time.perf_counter()
        from autograder.tooling.execute import execute_solution

        execute_solution(tmpnb)
        print(f"  {lesson:24s} {time.perf_counter() - t0:6.1f} s")
    return 0
