"""Grading a whole class: one `ClassRun` collects the submissions, reuses the grades nothing has
changed (OUT/.state), grades the rest (one station, a local process pool or a Dask cluster),
records each result as it comes (feedback page, formgrader's folders, gradebook, state) and ends
with the export step (the CSVs, the LMS files, the report)."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

from autograder import course, state
from autograder.collect import lateness, lms
from autograder.collect.submissions import (
    DEFAULT_LMS_PATTERN,
    MAX_FILE_MB,
    MAX_ZIP_MB,
    Submission,
    collect,
    read_lesson_map,
)
from autograder.collect.tree import CollectError
from autograder.judge.grade import (
    changed_because,
    fingerprint_of,
    fingerprint_parts,
    grade_one,
    lesson_version,
)
from autograder.outcomes import Graded, Row, Status
from autograder.record import folders, gradebook
from autograder.record.export import export
from autograder.run import sandbox, users, workdirs
from autograder.run.runner import Station


class Progress:
    """A progress bar with counts and ETA on a terminal; plain log lines otherwise."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.start, self.stream = total, 0, time.monotonic(), stream
        self.tty = stream.isatty()

    def update(self, g: Graded, resumed: bool = False):
        self.done += 1
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0
        pts = sum(r.points for r in g.rows)
        mx = sum(r.max_points for r in g.rows)
        what = f"{g.student}/{g.lesson or '?'} {pts:g}/{mx:g}" + (" (resumed)" if resumed else "")
        if self.tty:
            width = 30
            fill = int(width * self.done / max(self.total, 1))
            self.stream.write(
                f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                f"eta {eta:5.0f}s  {what[:40]:40s}"
            )
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"graded {self.done}/{self.total}: {what} ({g.seconds:.1f}s, eta {eta:.0f}s)\n")
        self.stream.flush()


class ClassRun:
    """One `grade_class` call: its settings, what it collected, and its results so far.

    `finish()` records one result (whichever way it was graded, in whatever order); `results` ends
    with every submission of this run; the whole class is this run plus OUT/.state."""

    def __init__(self, out, limits: sandbox.Limits, quiet: bool, resume: bool, config) -> None:
        self.out = Path(out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        os.chmod(self.out, 0o700)
        self.state = self.out / ".state"
        self.state.mkdir(exist_ok=True)
        self.limits, self.quiet, self.resume = limits, quiet, resume
        self.config = config
        self.cfg = state.course_config(self.state, config, save=False)  # saved once checked
        self.results: dict = {}
        self.fresh: set = set()  # (student, lesson) graded in this run
        self.parts: dict = {}  # submission key -> its fingerprint parts
        self.reasons: dict = {}  # why saved grades were not reused -> how many
        self.gradebook = None
        self.progress: Progress | None = None

    def collect(
        self, source: Path, tmp: Path, pattern: str, only, max_file_mb: int, max_zip_mb: int, lesson_map=None
    ) -> list:
        subs = collect(
            source,
            course.lessons(),
            pattern,
            workdir=tmp / "unzipped",
            max_file_mb=max_file_mb,
            max_zip_mb=max_zip_mb,
            lesson_map=read_lesson_map(lesson_map, course.lessons()),
        )
        roster = lms.read_roster(self.cfg)
        subs = lms.apply_roster(subs, roster)
        known = {str(v) for s in subs for v in (s.student, s.lms_id, s.name) if v}
        known |= {v for row in roster for v in row.values() if v} | state.known_students(self.state)
        lateness.check_students(self.cfg, known)  # before anything is graded or saved
        if self.config:
            state.save_config(self.state, self.config, self.cfg)
        subs = lateness.apply_times(subs, self.cfg)
        if only:
            wanted = set(only)
            subs = [s for s in subs if wanted & {s.student, s.lms_id, s.name}]
            if not subs:
                raise CollectError(f"--only: no submission of {', '.join(only)} in {source}")
        return subs

    def plan(self, subs: list) -> list:
        """[(submission, fingerprint, state path)] to grade; the rest are reused from OUT/.state.
        A changed file, lesson source, check of that lesson, grader module or limit changes the
        fingerprint: a regrade of what it decides, and `reasons` says why (printed unless quiet)."""
        versions: dict = {}
        todo = []
        for sub in subs:
            if sub.lesson and sub.lesson not in versions:
                versions[sub.lesson] = lesson_version(sub.lesson)
            parts = fingerprint_parts(sub, versions.get(sub.lesson, {}), self.limits)
            fp = fingerprint_of(parts)
            self.parts[sub.key] = parts
            saved = self.resume and state.reuse(self.state, sub, fp)
            if saved:
                self.results[sub.key] = saved
                continue
            todo.append((sub, fp, state.saved_path(self.state, sub)))
            before = state.saved_parts(self.state, sub) if self.resume else None
            if before is not None:  # graded before: say what changed
                for why in changed_because(before, parts):
                    key = f"{why} ({sub.lesson})" if sub.lesson else why
                    self.reasons[key] = self.reasons.get(key, 0) + 1
        if self.reasons and not self.quiet:
            said = "; ".join(f"{n} because {why}" for why, n in sorted(self.reasons.items()))
            sys.stderr.write(f"grading again: {said}\n")
        self.progress = Progress(len(subs), stream=open(os.devnull, "w") if self.quiet else sys.stderr)
        for g in self.results.values():
            self.progress.update(g, resumed=True)
        return todo

    def finish(self, sub, fp: str, saved: Path, g: Graded) -> None:
        self.results[sub.key] = g
        self.fresh.add((g.student, g.lesson))
        stamp = folders.nbgrader_folders(self.out, sub, g)
        gradebook.record(self.gradebook, [g], {(g.student, g.lesson): stamp} if stamp else None)
        folders.write_feedback(self.out, g)
        if not any(r.fault for r in g.rows):  # faults are retried next run
            state.save(saved, fp, g, sub, self.parts.get(sub.key))
        self.progress.update(g)


def grade_class(
    source,
    out,
    workers: int = 0,
    limits: sandbox.Limits | None = None,
    pattern: str = DEFAULT_LMS_PATTERN,
    db_url: str | None = None,
    quiet: bool = False,
    resume: bool = True,
    scheduler: str | None = None,
    only: list | None = None,
    config: Path | None = None,
    max_file_mb: int = MAX_FILE_MB,
    max_zip_mb: int = MAX_ZIP_MB,
    report: bool = True,
    lesson_map: list | None = None,
    lessons: list | None = None,
) -> dict:
    """Grade every submission under `source` (or those of the students in `only`) into `out`.

    `out` accumulates the class: a student graded before and not in this run keeps their rows, a
    student in this run gets the new results for the lessons submitted now, and grades.csv,
    summary.csv, students.csv, submissions.csv, the LMS exports, the report (with `report`) and
    `graded` always describe the whole class graded so far (from OUT/.state). Returns
    {"graded": [...whole class], "this_run": [...], "seconds": ..., "db_url": ...}."""
    t0 = time.monotonic()
    # no limits given: the time limits are the course config's [limits], else the sandbox's
    limits = limits or sandbox.Limits(cell_timeout=None, notebook_timeout=None)
    users.become_subreaper()
    run = ClassRun(out, limits, quiet, resume, config)
    # the time limits: the command line's, else the course config's [limits], else the sandbox's
    given = {k: getattr(limits, k) for k in ("cell_timeout", "notebook_timeout")}
    from_config = run.cfg.limits if run.cfg else {}
    limits = dataclasses.replace(
        limits,
        **{
            k: v if v is not None else from_config.get(k, getattr(sandbox.Limits, k))
            for k, v in given.items()
        },
    )
    run.limits = limits
    if lessons:  # `make grade LESSONS=...`: the lessons that count, for this run, over the config's
        run.cfg = run.cfg or lateness.Config()
        run.cfg.lessons = lateness.known_lessons(lessons, "--lessons")
    # the run's folder is removed at the end, also after Ctrl-C; a killed run's by the next run
    with workdirs.grading_dir() as tmp:
        subs = run.collect(Path(source), tmp, pattern, only, max_file_mb, max_zip_mb, lesson_map)
        source_dir = Path(source).resolve()
        hide = sandbox.secret_paths(
            [run.out, source_dir if source_dir.is_dir() else source_dir.parent, tmp / "unzipped"]
        )
        db_url = db_url or gradebook.default_url(run.out)
        graded_lessons = sorted({s.lesson for s in subs if s.lesson})
        gradebook.register_lessons(db_url, graded_lessons)
        folders.course_root(run.out, graded_lessons, db_url)  # OUT is also formgrader's course root
        folders.install_feedback_assets(run.out)
        todo = run.plan(subs)
        run.gradebook = gradebook.open_gradebook(db_url)
        runnable = [(s, fp, p) for s, fp, p in todo if s.path is not None and s.lesson]
        for s, fp, p in todo:
            if s.path is None or not s.lesson:
                run.finish(s, fp, p, _nothing_to_grade(s))
        workers = workers or min(os.cpu_count() or 1, 8)
        if scheduler:  # a Dask cluster grades; results come back through the same finish()
            from autograder.distributed import grade_on_cluster

            grade_on_cluster(scheduler, runnable, limits, hide, run.finish)
        elif workers <= 1 or len(runnable) <= 1:
            with Station(limits, tmp, 0, hide) as station:
                for sub, fp, saved in runnable:
                    run.finish(sub, fp, saved, grade_one(sub, station))
        else:
            from autograder.pool import grade_in_pools

            grade_in_pools(runnable, workers, limits, tmp, hide, run.finish, quiet=quiet)
        run.gradebook.close()
        graded = [run.results[s.key] for s in subs]
        whole = state.whole_class(run.state, subs, run.results)
        everyone = folders.apply_manual_grades(run.out, [g for g, _ in whole], db_url, run.fresh)
        rows = export(run.out, everyone, [m for _, m in whole], run.cfg, report=report, db_url=db_url)
        return {
            "graded": everyone,
            "this_run": graded,
            "seconds": time.monotonic() - t0,
            "db_url": db_url,
            "regraded_because": dict(run.reasons),
            "submissions": rows,  # submissions.csv's rows: the points after any penalty
        }


def _nothing_to_grade(sub: Submission) -> Graded:
    """An ungradable row for a submission with no file to grade (refused, or no known lesson)."""
    total = course.max_points(sub.lesson) if sub.lesson else 0
    return Graded(
        sub.student, sub.lesson, [Row(sub.student, sub.lesson, "", 0, total, Status.UNGRADABLE, sub.note)]
    )
