"""Grading a whole class: parallel workers, progress, resuming, and the contract's output files."""

from __future__ import annotations

import contextlib
import csv
import json
import multiprocessing as mp
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict
from pathlib import Path

from autograder import course
from autograder.collect import lateness, lms
from autograder.collect.submissions import (
    DEFAULT_LMS_PATTERN,
    MAX_FILE_MB,
    MAX_ZIP_MB,
    CollectError,
    Submission,
    collect,
)
from autograder.judge.grade import fingerprint, grade_one, grader_fault, grading_version
from autograder.outcomes import CONTRACT_COLUMNS, Graded, Row, Status, contract_row, number, summary_rows
from autograder.record import gradebook
from autograder.run import sandbox
from autograder.run.runner import Station

SUMMARY_COLUMNS = ("student", "lesson", "points", "max_points", "status")

# A pool worker's station (runner.Station), made by `_init_worker` in each worker process: a
# process pool hands its tasks nothing but their arguments, so the worker's module holds it.
_station: dict = {}


def _init_worker(slots, args, grader_pid=None):
    limits, base, hide = args
    _station["here"] = Station(limits, Path(base), slots.get(), hide)
    sandbox.become_subreaper()
    if grader_pid:  # a killed grader takes its workers, their zygotes and kernels with it
        sandbox.exit_when_gone(grader_pid)
    import torch  # noqa: F401  - pay the import once per worker, not per submission

    torch.set_num_threads(1)


def _work(sub):
    return grade_one(sub, _station["here"])


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
) -> dict:
    """Grade every submission under `source` (or those of the students in `only`) into `out`.

    `out` accumulates the class: a student graded before and not in this run keeps their rows, a
    student in this run gets the new results for the lessons submitted now, and grades.csv,
    summary.csv, students.csv, submissions.csv, the LMS exports and `graded` always describe the
    whole class graded so far (from OUT/.state). Returns {"graded": [...whole class], "this_run": [...],
    "seconds": ...}."""
    t0 = time.monotonic()
    limits = limits or sandbox.Limits()
    sandbox.become_subreaper()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    state = out / ".state"
    state.mkdir(exist_ok=True)
    lessons = course.lessons()
    cfg = _course_config(state, config)
    # the run's folder is removed at the end, also after Ctrl-C; a killed run's by the next run
    with sandbox.grading_dir() as tmp:
        subs = collect(
            Path(source),
            lessons,
            pattern,
            workdir=tmp / "unzipped",
            max_file_mb=max_file_mb,
            max_zip_mb=max_zip_mb,
        )
        subs = lms.apply_roster(subs, lms.read_roster(cfg))
        if only:
            wanted = set(only)
            subs = [s for s in subs if wanted & {s.student, s.lms_id, s.name}]
            if not subs:
                raise CollectError(f"--only: no submission of {', '.join(only)} in {source}")
        source_dir = Path(source).resolve()
        hide = sandbox.secret_paths(
            [out, source_dir if source_dir.is_dir() else source_dir.parent, tmp / "unzipped"]
        )
        db_url = db_url or gradebook.default_url(out)
        graded_lessons = sorted({s.lesson for s in subs if s.lesson})
        gradebook.register_lessons(db_url, graded_lessons)
        course.layout(out, graded_lessons, db_url)  # OUT is also formgrader's course root
        _install_feedback_assets(out)
        results: dict = {}
        todo = []
        version = grading_version()  # a changed check, grader module or lesson source regrades
        for sub in subs:
            fp = fingerprint(sub, version, limits)
            saved = state / f"{course.safe_name(sub.student)}__{course.safe_name(sub.lesson)}.json"
            if resume and saved.exists():
                data = json.loads(saved.read_text())
                if data.get("fingerprint") == fp:
                    results[sub.key] = _graded_from_json(data)
                    if data.get("submission") != sub.meta():  # e.g. a new mtime: same grades
                        saved.write_text(json.dumps({**data, "submission": sub.meta()}))
                    continue
            todo.append((sub, fp, saved))
        progress = Progress(len(subs), stream=open(os.devnull, "w") if quiet else sys.stderr)
        for g in results.values():
            progress.update(g, resumed=True)

        gb = gradebook.open_gradebook(db_url)

        fresh = set()

        def finish(sub, fp, saved, g):
            results[sub.key] = g
            fresh.add((g.student, g.lesson))
            stamp = nbgrader_folders(out, sub, g)
            gradebook.record(gb, [g], {(g.student, g.lesson): stamp} if stamp else None)
            _write_feedback(out, g)
            if not any(r.fault for r in g.rows):  # faults are retried next run
                saved.write_text(
                    json.dumps({"fingerprint": fp, **_graded_to_json(g), "submission": sub.meta()})
                )
            progress.update(g)

        runnable = [(s, fp, p) for s, fp, p in todo if s.path is not None and s.lesson]
        for s, fp, p in todo:
            if s.path is None or not s.lesson:
                finish(s, fp, p, _nothing_to_grade(s))
        workers = workers or min(os.cpu_count() or 1, 8)
        if scheduler:  # a Dask cluster grades; results come back through the same finish()
            from autograder.distributed import grade_on_cluster

            grade_on_cluster(scheduler, runnable, limits, hide, finish)
        elif workers <= 1 or len(runnable) <= 1:
            with Station(limits, tmp, 0, hide) as station:
                for sub, fp, saved in runnable:
                    finish(sub, fp, saved, grade_one(sub, station))
        else:
            ctx = mp.get_context("forkserver")
            pending = runnable
            # a worker that dies (the OOM killer, a signal from outside) breaks the whole pool: the
            # submissions it left unfinished are graded again in a fresh pool, up to POOL_TRIES times
            for attempt in range(POOL_TRIES):
                pending = _grade_in_pool(ctx, pending, workers, limits, tmp, hide, finish)
                if not pending:
                    break
                if not quiet and attempt + 1 < POOL_TRIES:
                    print(
                        f"a grading worker died; grading its {len(pending)} unfinished submissions again "
                        f"(try {attempt + 2} of {POOL_TRIES})",
                        file=sys.stderr,
                        flush=True,
                    )
            for sub, fp, saved in pending:
                finish(
                    sub, fp, saved, grader_fault(sub, BrokenProcessPool("its grading worker died every time"))
                )
        gb.close()
        graded = [results[s.key] for s in subs]
        whole = _whole_class(state, subs, results)
        everyone = apply_manual_grades(out, [g for g, _ in whole], db_url, fresh)
        export(out, everyone, [m for _, m in whole], cfg)
        return {
            "graded": everyone,
            "this_run": graded,
            "seconds": time.monotonic() - t0,
            "db_url": db_url,
        }


POOL_TRIES = 3


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


def _nothing_to_grade(sub: Submission) -> Graded:
    """An ungradable row for a submission with no file to grade (refused, or no known lesson)."""
    total = sum(course.questions(sub.lesson).values()) if sub.lesson else 0
    return Graded(
        sub.student, sub.lesson, [Row(sub.student, sub.lesson, "", 0, total, Status.UNGRADABLE, sub.note)]
    )


def _course_config(state: Path, config) -> lateness.Config | None:
    """The course config given now (saved in OUT/.state for later partial regrades), else the saved one."""
    saved = state / "course.toml"
    if config:
        cfg = lateness.load(Path(config))
        saved.write_text(cfg.source, encoding="utf-8")
        (state / "course.base").write_text(str(Path(config).resolve().parent), encoding="utf-8")
        return cfg
    if saved.exists():
        base = state / "course.base"
        return lateness.parse(
            saved.read_text(encoding="utf-8"), Path(base.read_text()) if base.exists() else None
        )
    return None


def _whole_class(state: Path, subs: list, results: dict) -> list:
    """[(Graded, submission meta)] for every student x lesson graded into this OUT so far, sorted.

    This run's results win; a student in this run who now has lessons loses an old "no notebook
    found" row; everyone else keeps what their saved state says."""
    entries: dict = {}
    for path in sorted(state.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "rows" not in data:  # other state (manual.json), not a result
            continue
        entries[(data["student"], data["lesson"])] = (
            _graded_from_json(data),
            data.get("submission", {}),
            path,
        )
    this_run = {(s.student, s.lesson) for s in subs}
    for student in {s.student for s in subs}:
        old = entries.get((student, ""))
        if old and (student, "") not in this_run:
            old[2].unlink(missing_ok=True)
            del entries[(student, "")]
    for s in subs:
        entries[(s.student, s.lesson)] = (results[s.key], s.meta(), None)
    return [
        (g, {**meta, "student": g.student, "lesson": g.lesson})
        for g, meta, _ in (entries[k] for k in sorted(entries))
    ]


def _graded_to_json(g: Graded) -> dict:
    return {
        "student": g.student,
        "lesson": g.lesson,
        "rows": [asdict(r) for r in g.rows],
        "seconds": g.seconds,
        "hints": g.hints,
        "language": g.language,
    }


def _graded_from_json(d: dict) -> Graded:
    return Graded(
        d["student"],
        d["lesson"],
        [Row.from_dict(r) for r in d["rows"]],
        "",
        d.get("seconds", 0),
        [tuple(h) for h in d.get("hints", [])],
        lang=d.get("language", ""),
    )


def _feedback_page(out: Path, g: Graded) -> Path:
    return out / "feedback" / course.safe_name(g.student) / f"{g.lesson}.html"


def _write_feedback(out: Path, g: Graded) -> None:
    if not g.lesson:
        return
    page = _feedback_page(out, g)
    page.parent.mkdir(parents=True, exist_ok=True)
    html = g.feedback_html
    if not html:
        from autograder.collect.submissions import Submission
        from autograder.record.feedback import plain_page

        html = plain_page(Submission(g.student, g.lesson, None), g.rows)
    page.write_text(html, encoding="utf-8")


def _install_feedback_assets(out: Path) -> None:
    from autograder.record.feedback import install_assets

    install_assets(out / "feedback")


# ---------------------------------------------------------------------------------------------
# nbgrader's course layout and manual grades (formgrader)


def _nbgrader_id_ok(student: str) -> bool:
    """A student id nbgrader can use as a folder name."""
    return bool(student) and student not in (".", "..") and "/" not in student and "\0" not in student


def nbgrader_folders(out: Path, sub, g: Graded) -> str | None:
    """What formgrader reads for one submission: `submitted/<student>/<lesson>/` (the student's
    file and timestamp.txt) and `autograded/<student>/<lesson>/` (the executed notebook, hidden
    tests included, with each written answer's rubric below it; or, for a notebook that could not
    be graded, the student version with the reason on top). Returns the timestamp text."""
    import datetime as dt

    import nbformat

    if not g.lesson or sub.path is None or not _nbgrader_id_ok(g.student):
        return None
    when = getattr(sub, "submitted_at", None)
    if not isinstance(when, dt.datetime):
        when = dt.datetime.fromtimestamp(sub.path.stat().st_mtime, dt.timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    stamp = gradebook.timestamp_text(when)
    submitted = out / "submitted" / g.student / g.lesson
    autograded = out / "autograded" / g.student / g.lesson
    for folder in (submitted, autograded):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text(stamp + "\n")
    shutil.copyfile(sub.path, submitted / f"{g.lesson}.ipynb")
    if g.notebook:
        nb = nbformat.reads(g.notebook, as_version=4)
        nb = _with_rubrics(nb, g.lesson, g.language)
    else:
        nb = nbformat.read(course.NOTEBOOKS / f"{g.lesson}.ipynb", as_version=4)
        why = "; ".join(r.message for r in g.rows if r.status == Status.UNGRADABLE) or "not graded"
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**This submission could not be graded:** {why}"))
    nbformat.write(nb, autograded / f"{g.lesson}.ipynb")
    return stamp


def _with_rubrics(nb, lesson: str, lang: str | None = None):
    """Below each written answer, its model answer and rubric from solutions/ (for the person
    grading in formgrader; feedback pages are made from the notebook without them)."""
    import re

    import nbformat

    from autograder.tooling import translations

    rubric = {}
    for cell in course.manual_cells(course.read_solution(lesson)):
        m = re.search(r"### BEGIN SOLUTION\n?(.*?)### END SOLUTION", cell.source, re.S)
        rubric[course.nbgrader_meta(cell)["grade_id"]] = (m.group(1) if m else cell.source).strip()
    heading = "**For the grader (from solutions/, not in the student's notebook)**"
    lang = lang or nb.metadata.get("language")
    if isinstance(lang, str) and lang in translations.LANGUAGES:  # a translated notebook: its rubric
        translated = translations.rubrics(lesson, lang)
        rubric.update({gid: text.strip() for gid, text in translated.items() if gid in rubric})
        heading = getattr(translations._catalogue(lang), "RUBRIC_HEADING", heading) if translated else heading
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        gid = course.nbgrader_meta(cell).get("grade_id")
        if gid in rubric and course.nbgrader_meta(cell).get("solution"):
            note = nbformat.v4.new_markdown_cell(
                f"> {heading}\n>\n" + "\n".join("> " + line for line in rubric[gid].splitlines())
            )
            note["id"] = f"rubric-{gid}"[:64]
            cells.append(note)
    nb.cells = cells
    return nb


def apply_manual_grades(out: Path, graded: list, db_url: str, fresh: set) -> list:
    """Manual grades and comments from the gradebook (entered in formgrader) applied to the
    results, and the feedback pages they change rewritten (only those: a page graded in this run,
    or whose manual grades differ from the last run's)."""
    from autograder.record.feedback import update_scores

    entered = gradebook.manual(db_url)
    merged = gradebook.overlay(graded, entered)
    memo = out / ".state" / "manual.json"
    before = json.loads(memo.read_text()) if memo.exists() else {}
    now = json.loads(json.dumps({f"{st}/{le}": v for (st, le), v in entered.items()}, sort_keys=True))
    for g in merged:
        key = f"{g.student}/{g.lesson}"
        if not g.lesson or not (
            (g.student, g.lesson) in fresh and key in now or before.get(key) != now.get(key)
        ):
            continue
        page = _feedback_page(out, g)
        if page.exists():
            text = page.read_text(encoding="utf-8")
            new = update_scores(text, g.rows)
            if new != text:
                page.write_text(new, encoding="utf-8")
    memo.write_text(json.dumps(now, sort_keys=True))
    return merged


STUDENT_COLUMNS = ("student", "name", "lms", "lms_id")
SUBMISSION_COLUMNS = (
    "student",
    "lesson",
    "name",
    "lms",
    "lms_id",
    "file",
    "submitted_at",
    "time_source",
    "deadline",
    "late",
    "late_by_hours",
    "penalty_percent",
    "points",
    "points_after_penalty",
    "max_points",
    "status",
    "note",
)


def export(out: Path, graded: list, metas: list | None = None, cfg: lateness.Config | None = None) -> None:
    """The contract's grades.csv and summary.csv (columns exactly as the contract says), plus
    students.csv (the LMS identity of every `student`), submissions.csv (file, time, lateness,
    penalty per student x lesson) and the LMS exports under OUT/lms/."""
    metas = metas if metas is not None else [{} for _ in graded]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, CONTRACT_COLUMNS, lineterminator="\n")
        w.writeheader()
        for g in graded:
            for r in g.rows:
                w.writerow(contract_row(r))
    summary = summary_rows(graded)
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, SUMMARY_COLUMNS, lineterminator="\n")
        w.writeheader()
        for row in summary:
            w.writerow(row)
    students: dict = {}
    for g, meta in zip(graded, metas):
        students.setdefault(
            g.student, {"student": g.student, **{k: meta.get(k, "") for k in STUDENT_COLUMNS[1:]}}
        )
    _write(out / "students.csv", STUDENT_COLUMNS, [students[k] for k in sorted(students)])
    rows = []
    for g, meta, summ in zip(graded, metas, summary):
        late = lateness.assess(cfg, meta, g.lesson)
        note = "; ".join(filter(None, [late.pop("late_note"), meta.get("note", "")]))
        rows.append(
            {
                **{k: meta.get(k, "") for k in (*SUBMISSION_COLUMNS, "attachment_id")},
                **late,
                "student": g.student,
                "lesson": g.lesson,
                "points": summ["points"],
                "points_after_penalty": number(lateness.penalised(summ["points"], late["penalty_percent"])),
                "max_points": summ["max_points"],
                "status": summ["status"],
                "note": note,
            }
        )
    _write(out / "submissions.csv", SUBMISSION_COLUMNS, rows)
    lms.write_exports(out, rows, cfg)


def _write(path: Path, columns: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def table(graded: list) -> str:
    """The short table `make grade` prints: one line per student, one column per lesson."""
    lessons = sorted({g.lesson for g in graded if g.lesson})
    students = sorted({g.student for g in graded})
    cell = {}
    for row in summary_rows(graded):
        mark = "!" if row["status"] == "ungradable" else ""
        cell[(row["student"], row["lesson"])] = f"{row['points']}/{row['max_points']}{mark}"
    w = max([len(s) for s in students] + [7])
    head = "student".ljust(w) + "  " + "  ".join(les.ljust(14) for les in lessons)
    lines = [head, "-" * len(head)]
    for s in students:
        lines.append(s.ljust(w) + "  " + "  ".join(cell.get((s, les), "-").ljust(14) for les in lessons))
        if (s, "") in cell:
            lines[-1] += "  (no gradable notebook)"
    lines.append("('!' = ungradable, '-' = not submitted)")
    return "\n".join(lines)
