"""The grading pipeline, one step per function:

    collect -> load -> restore -> execute (sandboxed) -> verdicts (trusted) -> record -> export

`grade_class()` drives it for a whole class (in parallel, resumable); `grade_one()` is one
submission, and is what a worker runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tempfile
import time
from pathlib import Path
from types import MappingProxyType

import byhand as checks
import nbformat
from byhand import _depends, i18n
from byhand._core import AnswerError, CheckFailure, NotDone, judge_all, ordered_cases
from byhand.i18n import N_, msg

from autograder import course
from autograder.collect.submissions import Submission
from autograder.outcomes import Graded, Row, Status
from autograder.run import outputs, prune, restore, rootfs, runner

GRADER_VERSION = "1"
# The grader's modules whose code decides a grade or what a feedback page says (a change in any of
# them, in the checks package or in a lesson's source makes every submission be graded again)
GRADING_CODE = (
    "judge/grade.py",
    "run/runner.py",
    "run/probe.py",
    "run/restore.py",
    "run/prune.py",
    "run/outputs.py",
    "run/sandbox.py",
    "run/rootfs.py",
    "run/zygote.py",
    "record/feedback.py",
    "record/public.py",
    "course.py",
)


def grading_files() -> list:
    """(name, path) of every file a grade depends on: the solution notebooks (hidden tests and the
    reference answers), the checks package and the grading modules."""
    root = course.ROOT
    files = [(f"solutions/{f.name}", f) for f in sorted(course.SOLUTIONS.glob("*.ipynb"))]
    files += [
        (f"byhand/{f.relative_to(rootfs.BYHAND).as_posix()}", f) for f in sorted(rootfs.BYHAND.rglob("*.py"))
    ]
    # the released translations: what a translated submission's cells are compared with (course.lesson_text)
    files += [(f"notebooks/{f.parent.name}/{f.name}", f) for f in sorted(course.NOTEBOOKS.glob("*/*.ipynb"))]
    files += [(f"autograder/{n}", root / "autograder" / n) for n in GRADING_CODE]
    return files


def grading_version() -> str:
    """A hash of `grading_files()`: what a saved grade must match to be reused, and what every Dask
    worker must agree on."""
    h = hashlib.sha256()
    for name, f in grading_files():
        if f.exists():
            h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


# What a saved grade of one submission depends on, part by part: a change names its reason, and
# a change to one lesson's checks regrades that lesson only (classroom.plan, state.py).
REASONS = MappingProxyType(
    {
        "submission": "its file changed",
        "lesson": "the lesson's notebook changed",
        "checks": "the lesson's checks changed",
        "grader": "the grader changed",
        "limits": "the limits changed",
    }
)


def _sha(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p + b"\0")
    return h.hexdigest()[:16]


def _check_modules(lesson: str) -> list:
    """The checks package's files a lesson's checks read: its own module (every module of it, when
    the lesson's checks are a package), the other lessons' modules it imports, and every shared
    module (the judge, the messages, ...)."""
    import byhand

    topics = set(byhand.LESSONS.values())

    def files_of(name: str) -> list:
        package = rootfs.BYHAND / name
        return sorted(package.rglob("*.py")) if package.is_dir() else [rootfs.BYHAND / f"{name}.py"]

    mine, todo = set(), [byhand.LESSONS[lesson]] if lesson in byhand.LESSONS else []
    while todo:
        name = todo.pop()
        if name in mine:
            continue
        mine.add(name)
        for f in files_of(name):
            text = f.read_text(encoding="utf-8")
            up = re.escape("." * len(f.parent.relative_to(rootfs.BYHAND).parts) + ".")  # byhand, from f
            used = set(re.findall(rf"^from {up}(\w+) import", text, re.M))
            for group in re.findall(rf"^from {up} import ([\w, ]+)", text, re.M):
                used |= {n.strip() for n in group.split(",")}
            todo += [n for n in used if n in topics]
    # shared: the top-level modules that are no lesson's (_judge.py, i18n.py, ...) and the shared
    # packages (_core/: the wire, the steps, the verdict, the failures)
    shared = [f for f in rootfs.BYHAND.glob("*.py") if f.stem not in topics]
    shared += [f for d in rootfs.BYHAND.glob("_*") if d.is_dir() for f in d.rglob("*.py")]
    return sorted(shared + [f for name in mine for f in files_of(name)])


def lesson_version(lesson: str) -> dict:
    """{"checks", "lesson", "grader"}: hashes of what a grade of `lesson` depends on besides the
    submission and the limits."""
    grader = [GRADER_VERSION.encode()] + [
        n.encode() + b"\0" + (course.ROOT / "autograder" / n).read_bytes() for n in GRADING_CODE
    ]
    checks_ = [
        f.relative_to(rootfs.BYHAND).as_posix().encode() + b"\0" + f.read_bytes()
        for f in _check_modules(lesson)
    ]
    sources = [course.SOLUTIONS / f"{lesson}.ipynb", *sorted(course.NOTEBOOKS.glob(f"*/{lesson}.ipynb"))]
    notebooks = [
        str(p.relative_to(course.ROOT)).encode() + b"\0" + p.read_bytes() for p in sources if p.exists()
    ]
    return {"checks": _sha(*checks_), "lesson": _sha(*notebooks), "grader": _sha(*grader)}


def fingerprint_parts(sub: Submission, version: dict, limits=None) -> dict:
    """The parts of `fingerprint`: `version` from `lesson_version(sub.lesson)` ({} for no lesson)."""
    data = sub.path.read_bytes() if sub.path is not None and sub.path.exists() else b""
    return {
        **{k: version.get(k, "") for k in ("checks", "lesson", "grader")},
        "limits": _sha(repr(limits).encode()),
        "submission": _sha(sub.key.encode(), sub.note.encode(), data),
    }


def fingerprint_of(parts: dict) -> str:
    return _sha(*(f"{k}={parts[k]}".encode() for k in sorted(parts)))


def changed_because(old: dict, new: dict) -> list:
    """Why a saved grade is not reused: the REASONS of the parts that differ (all of them for a
    grade saved before the parts were kept)."""
    if not old:
        return ["it was saved by an older grader"]
    return [REASONS[k] for k in REASONS if old.get(k) != new.get(k)]


# ---------------------------------------------------------------------------------------------
# load


def load(path: Path) -> tuple:
    """(notebook, "") or (None, why it cannot be read)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, msg("the file could not be read ({error})", error=exc.strerror)
    if not raw.strip():
        return None, msg("the file is empty: save the notebook in Jupyter and submit it again")
    try:
        data = json.loads(raw.decode("utf-8", errors="strict"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, msg(
            "the file is not a valid notebook (invalid JSON: {error}); submit the .ipynb "
            "file that Jupyter saves, not a copy edited by hand",
            error=str(exc),
        )
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        return None, msg("the file is JSON but not a Jupyter notebook (no cells)")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)  # upgrades older formats (v3)
    except Exception as exc:  # noqa: BLE001
        return None, msg(
            "the notebook format could not be read ({error})", error=f"{type(exc).__name__}: {exc}"
        )
    for cell in nb.cells:
        if cell.cell_type not in ("code", "markdown", "raw") or not isinstance(cell.get("source", ""), str):
            return None, msg("the notebook has a malformed cell")
    return nb, ""


# ---------------------------------------------------------------------------------------------
# verdicts


@functools.cache
def _question_cases(lesson: str) -> dict:
    """Every question's cases, hidden ones included (deterministic: built once per process)."""
    module = checks.for_lesson(lesson)
    return {name: ordered_cases(module.QUESTIONS[name], hidden=True) for name in course.questions(lesson)}


@functools.cache
def _check_names(lesson: str) -> frozenset:
    return frozenset(prune.check_names(_question_cases(lesson)))


@functools.cache
def _names_per_question(lesson: str) -> dict:
    """question -> the names its checks look up: its cases' and those of the questions it uses."""
    module, cases = checks.for_lesson(lesson), _question_cases(lesson)
    own = {q: prune.check_names({q: cases[q]}) for q in cases}
    return {q: frozenset(own[q].union(*(own.get(n, {n}) for n in module.QUESTIONS[q].needs))) for q in cases}


NOT_DONE_HINT = N_("not done")  # the class report's name for a blank answer (not a mistake)
RAISED_HINT = N_("raised an exception")  # the class report's name for an answer that raised
# a check's hint that says another graded piece must pass first ("first make Encoder ... pass")
KNOCK_ON_PREFIXES = ("first make ",)


def verdict(question: str, cases: list, probe: list, probe_error: str, module) -> tuple:
    """(status, message, hint) of the trusted check for one question."""
    if probe_error:
        return Status.ERROR, probe_error, ""
    q = module.QUESTIONS[question]
    if not isinstance(probe, list) or len(probe) != len(cases):
        n = len(probe) if isinstance(probe, list) else 0
        return (
            Status.ERROR,
            msg("the grader got {n} results back for {cases} cases", n=n, cases=len(cases)),
            "",
        )
    if not all(isinstance(result, dict) for result in probe):
        return Status.ERROR, msg("the grader could not read your function's results"), ""
    try:
        judge_all(q, zip(cases, probe))
    # the message as the check built it (a byhand.i18n.Msg: its catalogue ids, rendered in the
    # notebook's language by `localized`); str(exc) would flatten it to English
    except NotDone as exc:
        return Status.FAILED, i18n.message_of(exc), NOT_DONE_HINT
    except AnswerError as exc:
        return Status.ERROR, i18n.message_of(exc), RAISED_HINT
    except CheckFailure as exc:
        return Status.FAILED, i18n.message_of(exc), exc.hint or first_line(i18n.message_of(exc))
    except Exception as exc:  # noqa: BLE001 - malformed results never crash the grader
        why = f"{type(exc).__name__}: {exc}"
        return Status.ERROR, msg("the grader could not judge your result ({why})", why=why), ""
    return Status.PASSED, "", ""


def first_line(message: str) -> str:
    """A message's first line, its `Msg` when the message was built of them."""
    parts = getattr(message, "parts", ())
    if parts and isinstance(parts[0], i18n.Msg) and "\n" not in parts[0]:
        return parts[0]
    return str(message).splitlines()[0] if message else ""


def grader_fault(sub: Submission, exc: BaseException) -> Graded:
    """The row for a submission the grader itself failed on (a crashed worker, a lost result)."""
    total = course.max_points(sub.lesson) if sub.lesson else 0
    row = Row(
        sub.student, sub.lesson, "", 0, total, Status.UNGRADABLE, f"grader fault: {type(exc).__name__}: {exc}"
    )
    row.fault = True
    return Graded(sub.student, sub.lesson, [row])


def grade_one(sub: Submission, station: runner.Station) -> Graded:
    """Grade one submission at `station` (never raises for a submission's fault)."""
    t0 = time.monotonic()
    maxes = course.questions(sub.lesson)
    total = sum(maxes.values()) + sum(course.manual_questions(sub.lesson).values())

    def ungradable(why, lang=""):
        """The row of a notebook that could not be read or run: in its language when it was read
        far enough to know it ("" = unknown: English, and not counted in the class's language)."""
        return Graded(
            sub.student,
            sub.lesson,
            [Row(sub.student, sub.lesson, "", 0, total, Status.UNGRADABLE, localized(why, lang))],
            seconds=time.monotonic() - t0,
            lang=lang,
        )

    steps = {}
    clock = runner._Clock(steps)
    nb_student, problem = load(sub.path)
    clock.lap("load")
    if nb_student is None:
        return ungradable(problem, _language_of_file(sub.path))
    lang = language(nb_student)
    if not nb_student.cells:  # nothing of the lesson: not "an older version" of it
        return ungradable(msg(EMPTY_NOTEBOOK), lang)
    source = course.lesson_text(sub.lesson, lang)
    nb, skip, notes = restore.restore(nb_student, source)
    skip |= prune.skippable(nb, skip, source, _check_names(sub.lesson))
    if lang != i18n.DEFAULT:  # the restored notebook keeps the language it speaks
        nb.metadata["language"] = lang
    clock.lap("restore")
    if sub.note:  # the collector's notes, one line on the page
        notes.insert(0, sub.note)
    module = checks.for_lesson(sub.lesson)
    cases = _question_cases(sub.lesson)
    # run; if the kernel dies in a cell, skip that cell and run again (at most twice more)
    deaths = []
    for _attempt in range(3):
        result = runner.run(nb, skip, cases, station, _names_per_question(sub.lesson))
        for step, seconds in result.steps.items():
            steps[step] = steps.get(step, 0.0) + seconds
        clock.t = time.monotonic()
        # a cell that hit the memory limit raises MemoryError but keeps what it allocated, and the
        # kernel then dies under the grader's calls: run again without it
        hoarders = {i for i, (ename, _) in result.cell_errors.items() if ename == "MemoryError"} - skip
        if result.died_at is None and result.kernel_lost and hoarders:
            cells = ", ".join(str(i + 1) for i in sorted(hoarders))
            deaths.append(
                msg(
                    "cell {cells} ran out of memory and kept it, and the kernel died when the grader "
                    "called your functions; that cell was skipped and the notebook run again",
                    cells=cells,
                )
            )
            skip = skip | hoarders
        elif result.died_at is None or result.died_at < 0:
            break
        else:
            deaths.append(
                msg(
                    "the kernel died in cell {cell} ({why}); that cell was skipped and the notebook run again",
                    cell=result.died_at + 1,
                    why=result.death,
                )
            )
            skip = skip | {result.died_at}
        nb = result.nb
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
    notes += deaths
    if result.died_at is not None and result.died_at < 0:
        return ungradable(msg("the notebook could not be run: {why}", why=result.death), lang)
    index_of = {
        course.nbgrader_meta(c).get("grade_id"): i
        for i, c in enumerate(result.nb.cells)
        if course.nbgrader_meta(c).get("grade")
    }
    rows, hints = [], []
    older = older_version_questions(nb_student, sub.lesson)
    limit = station.limits.cell_timeout
    stopped = sorted(set(result.timed_out))
    for i in stopped:  # said on the page: which cell, the limit, what did not run
        notes.append(msg(STOPPED_CELL, cell=i + 1, s=limit))
    for name, max_points in maxes.items():
        probe_error = result.probe_errors.get(name, "")
        if result.probe is None:
            probe_error = result.probe_error or result.death or msg("the grader's checks could not run")
        status, message, hint = verdict(
            name, cases[name], (result.probe or {}).get(name, []), probe_error, module
        )
        i = index_of.get(name)
        if status == Status.PASSED and i is not None:
            if i in result.timed_out:
                status, message = (
                    Status.ERROR,
                    msg("the test cell timed out after {s} s", s=station.limits.cell_timeout),
                )
            elif i in result.cell_errors:
                ename, evalue = result.cell_errors[i]
                status, message = (
                    Status.FAILED,
                    msg(
                        "your functions pass the grader's checks, but the notebook's own test cell "
                        "failed: {error}",
                        error=f"{ename}: {evalue}",
                    ),
                )
        # the earlier answers its check ran with the reference in place (they fail their own
        # check: byhand._depends, which the kernel ran by the same rule), and those it keeps
        failed = {r.question for r in rows if r.status != Status.PASSED}
        replaced = _depends.replaced(name, None, module.QUESTIONS, passed=lambda n: n not in failed)
        if replaced:
            line = _depends.note(replaced)
            message = message + "\n  " + line if message else line
        failing_needs = [n for n in module.QUESTIONS[name].needs if n in failed and n not in replaced]
        if status != Status.PASSED and failing_needs:
            names = ", ".join(failing_needs)
            if len(failing_needs) == 1:
                note = msg(
                    "note: {name} uses your {needs}, which fails its own check: fix that first",
                    name=name,
                    needs=names,
                )
            else:
                note = msg(
                    "note: {name} uses your {needs}, which fail their own check: fix that first",
                    name=name,
                    needs=names,
                )
            message += "\n  " + note
        if name in older:  # not the NameError its absence causes: what the student can act on
            message, hint = msg(OLDER_NOTEBOOK, name=name), ""  # not a mistake in the report
        if hint:  # its English names the mistake; the report shows it as the feedback said it
            hints.append((name, str(hint), localized(hint, lang)))
        if deaths and status != Status.PASSED:  # translated apart: a line's frame must match it whole
            message = f"{localized(message, lang)} ({localized(deaths[0], lang)})"
        elif stopped and status != Status.PASSED and i is not None and i >= stopped[0]:
            # a question at or after a stopped cell: what that cell did not define may be why
            message = f"{localized(message, lang)} ({localized(msg(STOPPED_ROW, s=limit), lang)})"
        rows.append(
            Row(
                sub.student,
                sub.lesson,
                name,
                max_points if status == Status.PASSED else 0,
                max_points,
                status,
                # the message in the submitted notebook's language (metadata.language of a translation)
                localized(message, lang),
                not_done=hint == NOT_DONE_HINT,
                knock_on=status != Status.PASSED
                and bool(failing_needs or hint.lower().startswith(KNOCK_ON_PREFIXES)),
            )
        )
    outputs.localize_cut_notes(result.nb, lang)
    rows += written_rows(sub, result.nb, lang)
    notes = [localized_note(note, lang) for note in notes]
    clock.lap("verdicts")
    from autograder.record.feedback import render

    html = render(sub, result.nb, rows, notes, lang=lang)
    clock.lap("feedback")
    notebook = nbformat.writes(result.nb)
    clock.lap("notebook")
    return Graded(
        sub.student,
        sub.lesson,
        rows,
        html,
        time.monotonic() - t0,
        hints,
        notebook,
        lang,
        steps,
        stopped=[[i + 1, limit] for i in stopped],
    )


STOPPED_CELL = N_(
    "Cell {cell} ran past the {s} s limit for a cell and was stopped: the rest of that cell did not run, "
    "so what it would have defined or changed after that point is missing for the cells below"
)
EMPTY_NOTEBOOK = N_(
    "the notebook has no cells: none of the lesson and none of your answers. Submit the lesson's "
    "notebook, saved with your answers in it"
)
STOPPED_ROW = N_("a cell ran past the {s} s limit and was stopped")

OLDER_NOTEBOOK = N_(
    "your notebook is an older version of this lesson: it has no exercise {name}. Download the "
    "current notebook and copy your answers into it"
)


def older_version_questions(nb, lesson: str) -> set:
    """The autograded questions a submitted notebook has neither the test cell nor any answer cell
    of: an exercise added to the lesson after the student downloaded it (a student who deletes a
    locked test cell keeps its answer cell)."""
    have = {course.nbgrader_meta(c).get("grade_id") for c in nb.cells}
    targets = course.comment_targets(lesson)
    older = set()
    for name in course.questions(lesson):
        answers = [gid for gid, q in targets.items() if q == name and gid != name]
        if name not in have and not any(gid in have for gid in answers):
            older.add(name)
    return older


NOT_ANSWERED = N_("not done yet: write your answer in the cell below the question")
NEEDS_GRADING = N_("a written answer: your instructor grades it by hand")


def language(nb) -> str:
    """The language a submitted notebook speaks (metadata.language of a translation; else English).
    The notebook is the student's: a language the checks have no messages in is English."""
    lang = nb.metadata.get("language") if isinstance(nb.metadata, dict) else None
    return lang if known_language(lang) else i18n.DEFAULT


def known_language(lang) -> bool:
    """A language byhand has messages in: its gettext catalogue exists
    (`locale/<lang>/LC_MESSAGES/byhand.mo`; a forged metadata.language must not reach a path)."""
    if not isinstance(lang, str) or not i18n.LANGUAGE_NAME.fullmatch(lang):
        return False
    return lang == i18n.DEFAULT or i18n.catalogued(lang)


def localized(message: str, lang: str) -> str:
    """A verdict's message (judged in English) as grades.csv and the feedback page give it: in the
    notebook's language, with no grader paths. The self-check translates the same English text
    the same way (byhand._core.judge_all), so both say the same lines."""
    return _redact(i18n.localize(message, lang or i18n.DEFAULT))


# where one note of the collector joins the next ("graded x as y; refused: z ...; also found ...") in
# a plain-text note (a submission collected by an older grader)
NOTE_PARTS = re.compile(r"; (?=refused: |also found |graded \S)")


def localized_note(note: str, lang: str) -> str:
    """A note about the notebook in `lang`. The collector's (`Submission.note`) is its notes joined
    (a renamed file, the other files found, the files it refused), each a `Msg` rendered on its own."""
    if lang == i18n.DEFAULT or isinstance(note, i18n.Msg):  # built from catalogue ids
        return localized(note, lang)
    return "；".join(localized(part, lang) for part in NOTE_PARTS.split(note))


def _language_of_file(path) -> str:
    """The language of a file `load` could not take as a notebook, when it is JSON with a notebook's
    metadata (English when that names none); "" when unknown: the message is English."""
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
        meta = data.get("metadata") if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return ""
    if not isinstance(meta, dict):
        return ""
    return language(nbformat.NotebookNode(metadata=meta))


def written_rows(sub: Submission, nb, lang: str = i18n.DEFAULT) -> list:
    """One row per written answer: `needs grading` (0 points until a person grades it in
    formgrader) when answered, `failed` when the cell still holds the stub; the message in `lang`."""
    cells = {course.nbgrader_meta(c).get("grade_id"): c for c in course.manual_cells(nb)}
    rows = []
    for name, max_points in course.manual_questions(sub.lesson).items():
        text = cells[name].source.strip() if name in cells else ""
        answered = text not in ("", course.TEXT_STUB)
        status, message = (Status.NEEDS_GRADING, NEEDS_GRADING) if answered else (Status.FAILED, NOT_ANSWERED)
        message = localized(message, lang)
        rows.append(Row(sub.student, sub.lesson, name, 0, max_points, status, message, not_done=not answered))
    return rows


def _redact(text: str) -> str:
    """No grader paths in anything a student sees."""
    for path in {str(course.ROOT), tempfile.gettempdir()}:
        text = text.replace(path, "…")
    return text


# ---------------------------------------------------------------------------------------------
# class level: ordering, resuming, exporting
