"""The LMS round trip: grades and feedback pages in the forms Canvas and Moodle import.

Written to `OUT/lms/` on every `make grade`, for the whole class graded so far; points are after the
late penalty (OUT/submissions.csv shows both). A lesson a student did not submit is left empty.

- `grades_wide.csv`: one row per student (`student,name,lms,lms_id,email,id_number`), one column per
  lesson, `total` and `max_total`. For any LMS or spreadsheet.
- `canvas_gradebook.csv` (Canvas students only): Canvas's gradebook import format (Grades > Import):
  `Student,ID,SIS User ID,SIS Login ID,Section`, one column per lesson, then `Final Points`; the second
  row is `Points Possible`. `ID` is the Canvas user id from the submission file names. A lesson column
  is named after the lesson unless `[lms.columns]` in the course config gives Canvas's own column name,
  e.g. "Lesson 1: Attention (12345)", so the import fills that assignment instead of creating one.
  `Final Points` is one of Canvas's read-only export columns, shown for checking, not imported.
- `moodle_worksheet_<lesson>.csv` (Moodle students): the assignment's offline grading worksheet
  (Assignment > Grading action > Upload grading worksheet; mod/assign/feedback/offline reads the
  `Identifier`, `Grade` and `Last modified (grade)` columns), one per lesson, since Moodle's participant
  ids belong to one assignment. `Identifier` is "Participant <id>" as in the downloaded file names.
- `moodle_grades.csv` (Moodle students): for the course gradebook's CSV import (Grades > Import > CSV
  file): `First name,Last name,ID number,Email address,Participant`, one column per lesson, `Course
  total`. Moodle maps students by ID number or email, which the submissions do not hold: give them
  in a roster (`[lms] roster = "roster.csv"`, columns `lms,lms_id,student,email,id_number`).
- `canvas_feedback_<lesson>.zip`: each feedback page named `<name>_<user id>_<attachment id>_
  feedback_<lesson>.html`, for Canvas's "Re-Upload Submissions" (files become submission comments;
  Canvas reads the first two all-digit "_" fields as user and attachment id,
  Assignment#infer_comment_context_from_filename).
- `moodle_feedback_<lesson>.zip`: `<Full Name>_<participant id>_assignfeedback_file_<lesson>.html`,
  for "Upload multiple feedback files in a zip" (assignfeedback_file's zip importer splits the name
  on "_" into name, participant id, plugin type, plugin name and file name).

A roster can also join students an LMS splits: Moodle gives a student a different participant id in
each assignment, so without one, a student's lessons from two Moodle assignments are two students
(never two students merged into one); a roster row per (lms, lms_id) with the same `student` joins them.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import shutil
import zipfile
from pathlib import Path

from autograder import course
from autograder.outcomes import number, safe_name

ROSTER_COLUMNS = ("lms", "lms_id", "student", "email", "id_number", "sis_login_id", "section")


def read_roster(cfg) -> list:
    if cfg is None or cfg.roster is None:
        return []
    with open(cfg.roster, newline="", encoding="utf-8-sig") as f:
        return [
            {k.strip().lower(): (v or "").strip() for k, v in row.items() if k} for row in csv.DictReader(f)
        ]


def _roster_row(roster: list, lms: str, lms_id: str) -> dict:
    for row in roster:
        if row.get("lms_id") == lms_id and lms_id and row.get("lms", lms) in ("", lms):
            return row
    return {}


def apply_roster(subs: list, roster: list) -> list:
    """Submissions with `student` taken from the roster where it names one for their (lms, lms_id)."""
    if not roster:
        return subs
    out = []
    for s in subs:
        row = _roster_row(roster, s.lms, s.lms_id)
        out.append(dataclasses.replace(s, student=row["student"]) if row.get("student") else s)
    return out


def write_exports(out: Path, rows: list, cfg) -> None:
    """`rows`: OUT/submissions.csv's rows (one per student x lesson, with attachment_id)."""
    folder = Path(out) / "lms"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    roster = read_roster(cfg)
    columns = dict(cfg.columns) if cfg else {}
    graded = [r for r in rows if r["lesson"]]
    lessons = counted_lessons(cfg, rows)
    # every question of a lesson, autograded and written, the same for every student: a student's
    # points never exceed them (summary.csv's max_points, from course.max_points)
    maxes = {
        lesson: number(
            course.lesson_max(
                lesson, max([float(r["max_points"] or 0) for r in graded if r["lesson"] == lesson] or [0])
            )
        )
        for lesson in lessons
    }
    max_total = number(sum(float(maxes[lesson]) for lesson in lessons))
    by_student: dict = {}
    for r in graded:
        if r["lesson"] in maxes:  # a lesson outside `lessons` is graded, never counted
            by_student.setdefault(r["student"], {})[r["lesson"]] = r
    people = {}
    for r in rows:
        people.setdefault(r["student"], r)

    def ident(student):
        p = people[student]
        extra = _roster_row(roster, p.get("lms", ""), p.get("lms_id", ""))
        return p, extra

    wide = []
    for student in sorted(people):
        p, extra = ident(student)
        marks = by_student.get(student, {})
        total = sum(float(m["points_after_penalty"]) for m in marks.values())
        wide.append(
            {
                "student": student,
                "name": p.get("name", ""),
                "lms": p.get("lms", ""),
                "lms_id": p.get("lms_id", ""),
                "email": extra.get("email", ""),
                "id_number": extra.get("id_number", ""),
                **{
                    lesson: marks[lesson]["points_after_penalty"] if lesson in marks else ""
                    for lesson in lessons
                },
                "total": number(total),
                "max_total": max_total,
            }
        )
    _write(
        folder / "grades_wide.csv",
        ["student", "name", "lms", "lms_id", "email", "id_number", *lessons, "total", "max_total"],
        wide,
    )
    canvas = [w for w in wide if w["lms"] == "canvas"]
    if canvas:
        heads = [columns.get(lesson, lesson) for lesson in lessons]
        # a status column per lesson: "final", or "pending" while written answers wait for a person;
        # "(read only)" under it, as Canvas marks its own computed columns, so its import skips it
        statuses = [f"{head} status" for head in heads]
        head = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *heads, "Final Points", *statuses]
        lines = [
            [
                "Points Possible",
                "",
                "",
                "",
                "",
                *[maxes[lesson] for lesson in lessons],
                "",
                *["(read only)"] * len(lessons),
            ]
        ]
        for w in canvas:
            extra = _roster_row(roster, "canvas", w["lms_id"])
            marks = by_student.get(w["student"], {})
            lines.append(
                [
                    w["name"] or w["student"],
                    w["lms_id"] if w["lms_id"].isdigit() else "",
                    extra.get("id_number", ""),
                    extra.get("sis_login_id", ""),
                    extra.get("section", ""),
                    *[w[lesson] for lesson in lessons],
                    w["total"],
                    *[_status(marks.get(lesson)) for lesson in lessons],
                ]
            )
        _write_rows(folder / "canvas_gradebook.csv", head, lines)
    moodle = [w for w in wide if w["lms"] == "moodle"]
    if moodle:
        head = [
            "First name",
            "Last name",
            "ID number",
            "Email address",
            "Participant",
            *[columns.get(lesson, lesson) for lesson in lessons],
            "Course total",
        ]
        lines = []
        for w in moodle:
            first, _, last = w["name"].partition(" ")
            marks = by_student.get(w["student"], {})
            lines.append(
                [
                    first,
                    last,
                    w["id_number"],
                    w["email"],
                    w["lms_id"],
                    # as in the worksheet: no grade Moodle would take as final while a person must grade
                    *["" if _pending(marks.get(lesson, {})) else w[lesson] for lesson in lessons],
                    w["total"],
                ]
            )
        _write_rows(folder / "moodle_grades.csv", head, lines)
        stamp = dt.datetime.now().strftime("%A, %d %B %Y, %I:%M %p")
        for lesson in lessons:
            sheet = [
                r for r in graded if r["lesson"] == lesson and r.get("lms") == "moodle" and r.get("lms_id")
            ]
            if not sheet:
                continue
            _write_rows(
                folder / f"moodle_worksheet_{lesson}.csv",
                [
                    "Identifier",
                    "Full name",
                    "Status",
                    "Grade",
                    "Maximum Grade",
                    "Grade can be changed",
                    "Last modified (submission)",
                    "Last modified (grade)",
                    "Feedback comments",
                ],
                [
                    [
                        f"Participant {r['lms_id']}",
                        r["name"],
                        r["status"],
                        # Moodle takes a grade in the worksheet as final: none while written answers wait
                        "" if _pending(r) else r["points_after_penalty"],
                        maxes[lesson],
                        "Yes",
                        r.get("submitted_at", ""),
                        stamp,
                        (
                            f"written answers not graded yet; autograded so far: {r['points']}/{r['max_points']}"
                            if _pending(r)
                            else f"autograded: {r['points']}/{r['max_points']}"
                        )
                        + (
                            f", late penalty {r['penalty_percent']}%"
                            if r.get("penalty_percent") not in ("", "0")
                            else ""
                        ),
                    ]
                    for r in sheet
                ],
            )
    _feedback_zips(Path(out), folder, graded)


def counted_lessons(cfg, rows: list) -> list:
    """The lessons the totals count: the course config's `lessons` (`make grade LESSONS=...`), else
    every lesson someone in the class handed in."""
    if cfg is not None and cfg.lessons is not None:
        return list(cfg.lessons)
    return sorted({r["lesson"] for r in rows if r["lesson"]})


def _pending(row) -> bool:
    return row.get("status") == "needs grading"


def _status(row) -> str:
    """A lesson's state in Canvas's status column."""
    if row is None:
        return ""
    return "pending: written answers not graded yet" if _pending(row) else "final"


def _feedback_zips(out: Path, folder: Path, graded: list) -> None:
    for lesson in sorted({r["lesson"] for r in graded}):
        files = {"canvas": [], "moodle": []}
        for r in graded:
            if r["lesson"] != lesson:
                continue
            page = out / "feedback" / safe_name(r["student"]) / f"{lesson}.html"
            if not page.is_file():
                continue
            if r.get("lms") == "canvas" and r.get("attachment_id") and r["lms_id"].isdigit():
                who = "".join(ch for ch in (r.get("name") or "") if ch.isalnum())
                name = f"{who + '_' if who else ''}{r['lms_id']}_{r['attachment_id']}_feedback_{lesson}.html"
                files["canvas"].append((name, page))
            elif r.get("lms") == "moodle" and r.get("lms_id"):
                who = (r.get("name") or "Participant").replace("_", " ")
                files["moodle"].append((f"{who}_{r['lms_id']}_assignfeedback_file_{lesson}.html", page))
        for lms, items in files.items():
            if not items:
                continue
            with zipfile.ZipFile(folder / f"{lms}_feedback_{lesson}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
                for name, page in sorted(items):
                    zf.write(page, name)


def _write(path: Path, columns: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _write_rows(path: Path, head: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(head)
        w.writerows(rows)
