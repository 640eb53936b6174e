"""The class run's last step: the contract's CSVs (grades.csv, summary.csv), students.csv,
submissions.csv, the LMS exports under OUT/lms/ and the class report under OUT/report/, all from
the whole class graded into OUT so far; and the short table `make grade` prints."""

from __future__ import annotations

import csv
from pathlib import Path

from byhand.width import pad, width

from autograder.collect import lateness, lms
from autograder.outcomes import CONTRACT_COLUMNS, contract_row, number, summary_rows

# exactly the contract's five columns (a consumer may read them by position); lateness and the
# penalised points are in submissions.csv, the feedback page and the report
SUMMARY_COLUMNS = ("student", "lesson", "points", "max_points", "status")
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
    "attempts",
)


def export(
    out: Path,
    graded: list,
    metas: list | None = None,
    cfg: lateness.Config | None = None,
    report: bool = True,
    db_url: str | None = None,
) -> list:
    """The contract's grades.csv and summary.csv (columns exactly as the contract says), plus
    students.csv (the LMS identity of every `student`), submissions.csv (file, time, lateness,
    penalty per student x lesson), the LMS exports under OUT/lms/ and, with `report`, the class
    report (OUT/report/index.html); with `db_url`, the late penalties and due dates in nbgrader's
    gradebook. Returns submissions.csv's rows."""
    metas = metas if metas is not None else [{} for _ in graded]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, CONTRACT_COLUMNS, lineterminator="\n")
        w.writeheader()
        for g in graded:
            for r in g.rows:
                w.writerow(contract_row(r))
    summary = summary_rows(graded)
    lates = [lateness.assess(cfg, meta, g.lesson) for g, meta in zip(graded, metas)]
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, SUMMARY_COLUMNS, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        for row, late in zip(summary, lates):  # one total everywhere: the points after any penalty
            w.writerow({**row, "points": number(lateness.penalised(row["points"], late["penalty_percent"]))})
    students: dict = {}
    for g, meta in zip(graded, metas):
        students.setdefault(
            g.student, {"student": g.student, **{k: meta.get(k, "") for k in STUDENT_COLUMNS[1:]}}
        )
    _write(out / "students.csv", STUDENT_COLUMNS, [students[k] for k in sorted(students)])
    rows = []
    for g, meta, summ, late in zip(graded, metas, summary, lates):
        late = dict(late)
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
    _late_notices(out, graded, rows)
    if db_url:  # formgrader's gradebook: the penalty and the due dates, as nbgrader keeps them
        from autograder.record import gradebook

        gradebook.set_lateness(db_url, rows, cfg)
    if report:
        from autograder.record.report import write_report

        write_report(out, graded, rows, counted=lms.counted_lessons(cfg, rows), chosen=_chosen(cfg))
    return rows


def _chosen(cfg) -> bool:
    """Whether the course config (or `make grade LESSONS=...`) says which lessons count."""
    return cfg is not None and cfg.lessons is not None


def _late_notices(out: Path, graded: list, rows: list) -> None:
    """The lateness on each student's own feedback page (set, changed or taken off)."""
    from autograder.record.feedback import late_text, set_late_notice
    from autograder.record.folders import feedback_page

    for g, row in zip(graded, rows):
        if not g.lesson:
            continue
        page = feedback_page(out, g)
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        new = set_late_notice(text, late_text(row, g.language) if row["late"].startswith("yes") else "")
        if new != text:
            page.write_text(new, encoding="utf-8")


def _write(path: Path, columns: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def table(graded: list, submissions: list | None = None) -> str:
    """The short table `make grade` prints: one line per student, one column per lesson; the points
    after any late penalty (`submissions`: submissions.csv's rows), as in every other file."""
    lessons = sorted({g.lesson for g in graded if g.lesson})
    students = sorted({g.student for g in graded})
    after = {(r["student"], r["lesson"]): r["points_after_penalty"] for r in submissions or []}
    cell = {}
    for row in summary_rows(graded):
        mark = "!" if row["status"] == "ungradable" else ""
        points = after.get((row["student"], row["lesson"]), row["points"])
        cell[(row["student"], row["lesson"])] = f"{points}/{row['max_points']}{mark}"
    # padded by display width: a Chinese student's name takes two columns a character
    w = max([width(s) for s in students] + [7])
    head = pad("student", w) + "  " + "  ".join(pad(les, 14) for les in lessons)
    lines = [head, "-" * width(head)]
    for s in students:
        lines.append(pad(s, w) + "  " + "  ".join(pad(cell.get((s, les), "-"), 14) for les in lessons))
        if (s, "") in cell:
            lines[-1] += "  (no gradable notebook)"
    lines.append("('!' = ungradable, '-' = not submitted)")
    return "\n".join(lines)
