"""Grading a whole class: parallel workers, progress, resuming, and the contract's output files."""

from __future__ import annotations

import csv
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from . import course, gradebook, sandbox
from .grade import Graded, Row, fingerprint, grade_one, nothing_to_grade, row_dict, summary_rows
from .submissions import DEFAULT_LMS_PATTERN, collect

GRADE_COLUMNS = ["student", "lesson", "question", "points", "max_points", "status", "message"]
SUMMARY_COLUMNS = ["student", "lesson", "points", "max_points", "status"]

_slot = None
_worker_args = None


def _init_worker(slots, args):
    global _slot, _worker_args
    _slot = slots.get()
    _worker_args = args
    sandbox.become_subreaper()
    import torch  # noqa: F401  - pay the import once per worker, not per submission

    torch.set_num_threads(1)


def _work(sub):
    limits, base, hide = _worker_args
    return grade_one(sub, limits, Path(base), _slot, hide)


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
) -> dict:
    """Grade every submission under `source` into `out`. Returns {"graded": [...], "seconds": ...}."""
    t0 = time.monotonic()
    limits = limits or sandbox.Limits()
    sandbox.become_subreaper()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    state = out / ".state"
    state.mkdir(exist_ok=True)
    lessons = course.lessons()
    tmp = Path(tempfile.mkdtemp(prefix="tbb-grade-"))
    os.chmod(tmp, 0o711)
    try:
        subs = collect(Path(source), lessons, pattern, workdir=tmp / "unzipped")
        source_dir = Path(source).resolve()
        hide = sandbox.secret_paths(
            [out, source_dir if source_dir.is_dir() else source_dir.parent, tmp / "unzipped"]
        )
        db_url = db_url or gradebook.default_url(out)
        gradebook.register_lessons(db_url, sorted({s.lesson for s in subs if s.lesson}))
        results: dict = {}
        todo = []
        for sub in subs:
            fp = fingerprint(sub)
            saved = state / f"{_safe(sub.student)}__{_safe(sub.lesson)}.json"
            if resume and saved.exists():
                data = json.loads(saved.read_text())
                if data.get("fingerprint") == fp:
                    results[sub.key] = _graded_from_json(data)
                    continue
            todo.append((sub, fp, saved))
        progress = Progress(len(subs), stream=open(os.devnull, "w") if quiet else sys.stderr)
        for g in results.values():
            progress.update(g, resumed=True)

        gb = gradebook.open_gradebook(db_url)

        def finish(sub, fp, saved, g):
            results[sub.key] = g
            gradebook.record(gb, [g])
            _write_feedback(out, g)
            if not any(r.message.startswith("grader fault") for r in g.rows):  # faults are retried next run
                saved.write_text(json.dumps({"fingerprint": fp, **_graded_to_json(g)}))
            progress.update(g)

        runnable = [(s, fp, p) for s, fp, p in todo if s.path is not None and s.lesson]
        for s, fp, p in todo:
            if s.path is None or not s.lesson:
                finish(s, fp, p, nothing_to_grade(s))
        workers = workers or min(os.cpu_count() or 1, 8)
        if scheduler:  # a Dask cluster grades; results come back through the same finish()
            from .distributed import grade_on_cluster

            grade_on_cluster(scheduler, runnable, limits, hide, finish)
        elif workers <= 1 or len(runnable) <= 1:
            for sub, fp, saved in runnable:
                finish(sub, fp, saved, grade_one(sub, limits, tmp, 0, hide))
        else:
            ctx = mp.get_context("forkserver")
            slots = ctx.Manager().Queue()
            for i in range(workers):
                slots.put(i)
            with ProcessPoolExecutor(
                workers, mp_context=ctx, initializer=_init_worker, initargs=(slots, (limits, str(tmp), hide))
            ) as pool:
                futures = {pool.submit(_work, sub): (sub, fp, saved) for sub, fp, saved in runnable}
                for fut in as_completed(futures):
                    sub, fp, saved = futures[fut]
                    try:
                        g = fut.result()
                    except Exception as exc:  # noqa: BLE001 - a grader fault on one submission
                        g = Graded(
                            sub.student,
                            sub.lesson,
                            [
                                Row(
                                    sub.student,
                                    sub.lesson,
                                    "",
                                    0,
                                    0,
                                    "ungradable",
                                    f"grader fault: {type(exc).__name__}: {exc}",
                                )
                            ],
                        )
                    finish(sub, fp, saved, g)
        gb.close()
        graded = [results[s.key] for s in subs]
        export(out, graded)
        return {"graded": graded, "seconds": time.monotonic() - t0, "db_url": db_url}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "_"


def _graded_to_json(g: Graded) -> dict:
    return {
        "student": g.student,
        "lesson": g.lesson,
        "rows": [row_dict(r) for r in g.rows],
        "seconds": g.seconds,
        "hints": g.hints,
    }


def _graded_from_json(d: dict) -> Graded:
    return Graded(
        d["student"],
        d["lesson"],
        [Row(**r) for r in d["rows"]],
        "",
        d.get("seconds", 0),
        [tuple(h) for h in d.get("hints", [])],
    )


def _write_feedback(out: Path, g: Graded) -> None:
    if not g.lesson:
        return
    folder = out / "feedback" / _safe(g.student)
    folder.mkdir(parents=True, exist_ok=True)
    html = g.feedback_html
    if not html:
        from .feedback import summary_html
        from .submissions import Submission

        html = (
            "<html><body>"
            + summary_html(Submission(g.student, g.lesson, None), g.rows, [])
            + "</body></html>"
        )
    (folder / f"{g.lesson}.html").write_text(html, encoding="utf-8")


def export(out: Path, graded: list) -> None:
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, GRADE_COLUMNS, lineterminator="\n")
        w.writeheader()
        for g in graded:
            for r in g.rows:
                w.writerow(row_dict(r))
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, SUMMARY_COLUMNS, lineterminator="\n")
        w.writeheader()
        for row in summary_rows(graded):
            w.writerow(row)


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
