"""What a class run writes besides the CSVs: the output folder as formgrader's course root (its
config, `source/` and `release/`); for each submission its feedback page and what formgrader reads
(nbgrader's `submitted/` and `autograded/` folders, the rubric below each written answer); and the
manual grades entered in formgrader, applied to the results and their pages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from byhand import i18n
from byhand.i18n import N_

from autograder import course
from autograder.outcomes import Graded, Status, safe_name
from autograder.record import gradebook
from autograder.tooling.nbgrader_course import exchange_root

# A grading output folder as an nbgrader course root: formgrader (JupyterLab's Nbgrader menu, or
# /formgrader) started in this folder shows every submission the grader recorded.
GRADING_CONFIG = """\
# Written by `make grade`: this output folder is an nbgrader course root, so formgrader started
# here (`make formgrader OUT=...`, or `jupyter lab` in this folder, then Nbgrader > Formgrader)
# shows every graded submission (with JUPYTER_PATH=<this folder>/formgrader_assets/share, as
# `make formgrader` sets it, its math is typeset offline). Manual grades and comments given there are read back by the next
# `make grade` into grades.csv, summary.csv and the feedback pages (without re-running notebooks).
# Edit freely: `make grade` writes this file only when it is missing.
import os

c = get_config()
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.db_url = {db_url}
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Exchange.root = {exchange!r}
# our own feedback pages are feedback/<student>/<lesson>.html; nbgrader's generate_feedback writes
# feedback/<student>/<lesson>/<lesson>.html next to them
"""


def course_root(out: Path, lessons: list, db_url: str) -> None:
    """Make the grading output folder `out` an nbgrader course root for formgrader: its config,
    `source/<lesson>/` (the instructor's notebooks) and `release/<lesson>/` (the student versions)."""
    out = Path(out)
    config = out / "nbgrader_config.py"
    if not config.exists():
        default = f"sqlite:///{out}/gradebook.db?timeout=60"
        url = (
            '"sqlite:///" + c.CourseDirectory.root + "/gradebook.db?timeout=60"'
            if db_url == default
            else repr(db_url)
        )
        config.write_text(
            GRADING_CONFIG.format(course_id=course.COURSE_ID, db_url=url, exchange=str(exchange_root()))
        )
    for lesson in lessons:
        for step, src in (
            ("source", course.SOLUTIONS / f"{lesson}.ipynb"),
            ("release", course.NOTEBOOKS / f"{lesson}.ipynb"),
        ):
            dst = out / step / lesson / f"{lesson}.ipynb"
            if src.exists() and (not dst.exists() or dst.read_bytes() != src.read_bytes()):
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def feedback_page(out: Path, g: Graded) -> Path:
    return out / "feedback" / safe_name(g.student) / f"{g.lesson}.html"


def write_feedback(out: Path, g: Graded) -> None:
    if not g.lesson:
        return
    page = feedback_page(out, g)
    page.parent.mkdir(parents=True, exist_ok=True)
    html = g.feedback_html
    if not html:
        from autograder.collect.submissions import Submission
        from autograder.record.feedback import plain_page

        html = plain_page(Submission(g.student, g.lesson, None), g.rows, lang=g.language)
    page.write_text(html, encoding="utf-8")


def install_feedback_assets(out: Path) -> None:
    from autograder.record.assets import install_assets, install_formgrader_assets

    install_assets(out / "feedback")
    install_formgrader_assets(out)


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
    if isinstance(when, str) and when:  # the submission's ISO time (the LMS's, or the file's)
        try:
            when = dt.datetime.fromisoformat(when)
        except ValueError:
            when = None
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
        nb = with_rubrics(nb, g.lesson, g.language)
    else:
        nb = nbformat.read(course.NOTEBOOKS / f"{g.lesson}.ipynb", as_version=4)
        why = "; ".join(r.message for r in g.rows if r.status == Status.UNGRADABLE) or "not graded"
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**This submission could not be graded:** {why}"))
    nbformat.write(nb, autograded / f"{g.lesson}.ipynb")
    return stamp


def with_rubrics(nb, lesson: str, lang: str | None = None):
    """Below each written answer, its model answer and rubric from solutions/ (for the person
    grading in formgrader; feedback pages are made from the notebook without them)."""
    import re

    import nbformat

    from autograder.tooling import translations

    rubric = {}
    for cell in course.manual_cells(course.read_solution(lesson)):
        m = re.search(r"### BEGIN SOLUTION\n?(.*?)### END SOLUTION", cell.source, re.S)
        rubric[course.nbgrader_meta(cell)["grade_id"]] = (m.group(1) if m else cell.source).strip()
    heading = N_("**For the grader (from solutions/, not in the student's notebook)**")
    lang = lang or nb.metadata.get("language")
    if isinstance(lang, str) and lang in translations.LANGUAGES:  # a translated notebook: its rubric
        translated = translations.rubrics(lesson, lang)
        rubric.update({gid: text.strip() for gid, text in translated.items() if gid in rubric})
        heading = i18n.translations(lang).gettext(heading) if translated else heading
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
    entered = set_aside_stale(out, graded, entered, db_url, fresh)
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
        page = feedback_page(out, g)
        if page.exists():
            text = page.read_text(encoding="utf-8")
            new = update_scores(text, g.rows)
            if new != text:
                page.write_text(new, encoding="utf-8")
    memo.write_text(json.dumps(now, sort_keys=True))
    return merged


def answer_hashes(lesson: str, nb) -> dict:
    """question -> a digest of the answer that decides it in notebook `nb`: a written answer's own
    text; for an autograded question, the answer cells before its test cell (or all the code answer
    cells where it has none of its own). Whitespace at the ends does not count."""
    import hashlib

    targets = course.comment_targets(lesson)
    by_id = {course.nbgrader_meta(c).get("grade_id"): c for c in course.read_solution(lesson).cells}
    texts: dict = {}
    code = []
    for cell in nb.cells:
        meta = course.nbgrader_meta(cell)
        gid = meta.get("grade_id") or ""
        if not meta.get("solution") and gid not in by_id:
            continue
        if gid not in by_id or not course.nbgrader_meta(by_id[gid]).get("solution"):
            continue
        text = cell.source.strip()
        texts.setdefault(targets.get(gid, gid), []).append(text)
        if cell.cell_type == "code":
            code.append(text)
    out = {}
    for question in [*course.questions(lesson), *course.manual_questions(lesson)]:
        parts = texts.get(question) or code
        out[question] = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    return out


def _submitted_answers(out: Path, student: str, lesson: str) -> dict:
    import nbformat

    path = out / "submitted" / student / lesson / f"{lesson}.ipynb"
    try:
        return answer_hashes(lesson, nbformat.read(path, as_version=4))
    except Exception:  # noqa: BLE001 - no file, or one that is not a notebook: nothing to compare
        return {}


def set_aside_history(out: Path) -> list:
    """Every hand grade set aside so far in `out` (`set_aside_stale`), oldest first."""
    path = Path(out) / ".state" / "hand" / "history.json"
    try:
        history = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    except (OSError, ValueError):
        return []
    return history if isinstance(history, list) else []


def set_aside_stale(out: Path, graded: list, entered: dict, db_url: str, fresh: set | None = None) -> dict:
    """`entered` without the hand grades (and comments) whose answer changed since they were given.

    A hand grade is tied to the answer formgrader showed when it was given: the answers of the last
    run (OUT/.state/hand/answers.json), or, first seen with no last run, the answer now. When the
    submitted answer no longer has that digest, the grade and the comment on that answer are moved
    to OUT/.state/hand/history.json, cleared in the gradebook (formgrader flags that answer, and only
    that one, again) and the row goes back to the grader's: "needs grading" for a written answer."""
    import datetime as dt

    state = out / ".state" / "hand"  # a folder of its own: .state/*.json are the saved grades
    state.mkdir(parents=True, exist_ok=True)
    memo, ties_path, history_path = state / "answers.json", state / "ties.json", state / "history.json"
    before = json.loads(memo.read_text()) if memo.exists() else {}
    ties = json.loads(ties_path.read_text()) if ties_path.exists() else {}
    history = json.loads(history_path.read_text()) if history_path.exists() else []
    now = dict(before)
    known = {tuple(k.split("/")[:2]) for k in before}
    for g in graded:
        # a submission's file in submitted/ changes only when it is graded (`fresh`, None: all)
        if g.lesson and (
            fresh is None or (g.student, g.lesson) in fresh or (g.student, g.lesson) not in known
        ):
            for question, digest in _submitted_answers(out, g.student, g.lesson).items():
                now[f"{g.student}/{g.lesson}/{question}"] = digest
    kept = {}
    when = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
    for (student, lesson), entry in entered.items():
        targets = course.comment_targets(lesson) if lesson in course.lessons() else {}
        changed = set()
        for question in {*entry["scores"], *(targets.get(c, c) for c in entry["comments"])}:
            key = f"{student}/{lesson}/{question}"
            if key not in now:
                continue
            tie = ties.setdefault(key, before.get(key, now[key]))
            if tie != now[key]:
                changed.add(question)
        if not changed:
            kept[(student, lesson)] = entry
            continue
        cells = {c for c in entry["comments"] if targets.get(c, c) in changed}
        for question in sorted(changed):
            score = entry["scores"].get(question)
            history.append(
                {
                    "student": student,
                    "lesson": lesson,
                    "question": question,
                    "manual_score": score[0] if score else None,
                    "extra_credit": score[1] if score else None,
                    "comments": {
                        c: entry["comments"][c] for c in sorted(cells) if targets.get(c, c) == question
                    },
                    "graded_answer": ties.pop(f"{student}/{lesson}/{question}"),
                    "answer_now": now[f"{student}/{lesson}/{question}"],
                    "set_aside_at": when,
                    "why": "the answer changed after it was graded by hand",
                }
            )
        gradebook.set_aside(db_url, student, lesson, changed, cells)
        rest = {
            "scores": {q: v for q, v in entry["scores"].items() if q not in changed},
            "comments": {c: v for c, v in entry["comments"].items() if c not in cells},
        }
        if rest["scores"] or rest["comments"]:
            kept[(student, lesson)] = rest
    memo.write_text(json.dumps(now, sort_keys=True))
    ties_path.write_text(json.dumps(ties, sort_keys=True))
    history_path.write_text(json.dumps(history, indent=1, ensure_ascii=False))
    if history:  # for the instructor: what was set aside, when and why
        import csv

        with open(out / "hand_grades_set_aside.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["student", "lesson", "question", "manual_score", "comment", "set_aside_at", "why"])
            for h in history:
                comment = " / ".join(h["comments"].values())
                w.writerow(
                    [
                        h["student"],
                        h["lesson"],
                        h["question"],
                        h["manual_score"],
                        comment,
                        h["set_aside_at"],
                        h["why"],
                    ]
                )
    return kept
