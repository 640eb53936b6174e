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
from autograder.tooling.checkout import examples
from autograder.tooling.nbgrader_course import assemble


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
    course_dir = assemble(root / "nbgrader-course")
    for student in sorted(p.name for p in cls.iterdir()):
        for lesson in lessons:
            src = cls / student / f"{lesson}.ipynb"
            if src.exists():
                dst = course_dir / "submitted" / student / lesson
                dst.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst / f"{lesson}.ipynb")
    return course_dir


STEPS = (
    "load",
    "restore",
    "kernel start",
    "cells",
    "probe",
    "kernel stop",
    "verdicts",
    "feedback",
    "notebook",
)


def nbgrader_autograde(course_dir: Path, lesson: str, env: dict) -> tuple:
    """`nbgrader generate_assignment` then `nbgrader autograde` of one lesson: (wall, cpu, rss) of the latter."""
    _timed(
        [sys.executable, "-m", "nbgrader", "generate_assignment", lesson, "--force"], cwd=course_dir, env=env
    )
    return _timed(
        [sys.executable, "-m", "nbgrader", "autograde", lesson, "--create", "--force"],
        cwd=course_dir,
        env=env,
        check=False,
    )


def grade_command(cls: Path, out: Path, *options: str) -> list:
    """`python -m autograder grade CLS --out OUT ... --quiet`, as a benchmark runs it."""
    return [sys.executable, "-m", "autograder", "grade", str(cls), "--out", str(out), *options, "--quiet"]


def steps_table(cls: Path) -> list:
    """Where a notebook's time goes: every notebook of `cls` graded once, serially, at one warm
    station (one worker, as a pool worker grades); per step, the median over the notebooks."""
    import statistics

    from autograder.collect.submissions import collect
    from autograder.judge import grade
    from autograder.run import runner, sandbox

    with tempfile.TemporaryDirectory(prefix="tbb-steps-") as tmp:
        subs = [s for s in collect(cls, course.lessons(), workdir=Path(tmp) / "in") if s.path is not None]
        with runner.Station(sandbox.Limits(), Path(tmp) / "station") as station:
            grade.grade_one(subs[0], station)  # the station's zygote and imports, paid once
            graded = [grade.grade_one(s, station) for s in subs]
    print(f"\nwhere a notebook's time goes ({len(graded)} notebooks of {cls.name}, one warm worker):")
    print(f"  {'step':14s} {'median s':>9s} {'total s':>8s}")
    for step in STEPS:
        values = [g.steps.get(step, 0.0) for g in graded]
        print(f"  {step:14s} {statistics.median(values):9.3f} {sum(values):8.1f}")
    seconds = [g.seconds for g in graded]
    print(f"  {'per notebook':14s} {statistics.median(seconds):9.3f} {sum(seconds):8.1f}", flush=True)
    return graded


def copies_of_one_lesson(tmp: Path, lesson: str, copies: int, env: dict, skip_nbgrader: bool) -> list:
    """`copies` copies of the perfect example student's `lesson`: ours with 1 and 2 workers, and
    plain serial `nbgrader autograde` on the same files; rows for the table."""
    import nbformat

    from examples import answers_for
    from examples.build import fill

    perfect = next(v for k, v in answers_for(lesson).STUDENTS.items() if k.startswith("alice"))
    cls = tmp / f"copies-{lesson}"
    for i in range(copies):
        (cls / f"c{i:02d}").mkdir(parents=True)
        nbformat.write(fill(lesson, perfect), cls / f"c{i:02d}" / f"{lesson}.ipynb")
    rows = []
    for workers in (1, 2):
        cmd = grade_command(cls, tmp / f"copies-ours-{workers}", "--workers", str(workers))
        wall, cpu, rss = _timed(cmd, env=env)
        rows.append(
            (f"{copies} x {lesson}: ours, {workers} worker{'s' * (workers > 1)}", wall, copies, cpu, rss)
        )
    if not skip_nbgrader:
        course_dir = nbgrader_course(tmp / "copies-nbgrader", cls, [lesson])
        wall, cpu, rss = nbgrader_autograde(course_dir, lesson, env)
        rows.append((f"{copies} x {lesson}: nbgrader autograde (serial)", wall, copies, cpu, rss))
    return rows


def _table(rows: list) -> None:
    base = next((r[1] for r in rows if "nbgrader" in r[0]), None)
    print(
        f"\n{'grader':48s} {'wall s':>8s} {'s/notebook':>10s} {'CPU s':>8s} {'peak MB':>8s} {'vs nbgrader':>11s}"
    )
    for name, wall, count, cpu, rss in rows:
        ratio = f"{wall / base:.2f}x" if base else "-"
        print(f"{name:48s} {wall:8.1f} {wall / count:10.2f} {cpu:8.1f} {rss:8.0f} {ratio:>11s}")


def main(
    students: int = 0, lessons: list | None = None, skip_nbgrader: bool = False, copies: int = 12
) -> int:
    """The per-step table on the example class, `copies` copies of lesson 01 against nbgrader and,
    with `students`, a generated class of that many students against nbgrader (long)."""
    examples()
    from examples.build import CLASS

    steps_table(CLASS)
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    with tempfile.TemporaryDirectory(prefix="tbb-bench-") as tmp:
        _table(copies_of_one_lesson(Path(tmp), "01_attention", copies, env, skip_nbgrader))
    if students:
        return class_table(students, lessons, skip_nbgrader)
    return 0


def class_table(students: int = 40, lessons: list | None = None, skip_nbgrader: bool = False) -> int:
    examples()  # the benchmark class is made from examples/ of the checkout
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
                grade_command(cls, tmp / f"ours-{workers}", "--workers", str(workers)),
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
                wall, cpu, rss = nbgrader_autograde(course_dir, lesson, env)
                total = [total[0] + wall, total[1] + cpu, max(total[2], rss)]
                print(f"  nbgrader autograde {lesson}: {wall:.1f} s", flush=True)
            rows.append(("nbgrader autograde (serial)", total[0], n, total[1], total[2]))
    _table(rows)
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
