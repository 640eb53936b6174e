"""Collect: turn a folder or zip of submissions into (student, lesson, file) items, safely.

Accepted layouts (a zip of any of them too, with or without one enclosing folder):

- the contract's `<student>/<lesson>.ipynb` (extra files and `.ipynb_checkpoints` ignored);
- Canvas's "Download Submissions" zip: flat files `<name>[_LATE]_<user id>_<attachment id>_<file>`;
- Moodle's "Download all submissions": flat files `<Full Name>_<participant id>_assignsubmission_file_<file>`,
  or (the default since Moodle 3.1) one folder per student `<Full Name>_<participant id>_assignsubmission_file[_]/`;
- Blackboard's "Assignment File Download": `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>`
  plus a receipt `<assignment>_<username>_attempt_<timestamp>.txt`;
- `--pattern REGEX` with `(?P<student>...)`, `(?P<lesson>...)` and optionally `(?P<id>...)` for another LMS.

Identity: a student is what the LMS says, name *and* id. Two files are the same student only when the LMS
ids agree (Canvas `smithjane_1111_...` and `smithjane_2222_...` are two students), and the `student`
label always carries the id (`smithjane_1111`, `Bo Lee_4502`; Blackboard's username is its id), so it
is unique and can be matched back to the LMS (OUT/students.csv).

Safety: the tree is read by `tree.py` (no link followed, sizes capped, zips checked before and while
extracting); this module sees only the private copies it staged.

A browser's rename (`01_attention (1).ipynb`, `01_attention-Copy1.ipynb`, `Attention.ipynb`) maps to
its lesson when exactly one lesson fits. Every student and every notebook-looking file yields at least
one item, so nothing is silently dropped.
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from byhand import i18n
from byhand.i18n import N_, msg

from autograder.collect.tree import MAX_FILE_MB, MAX_ZIP_MB, read_tree

# The default --pattern: kept for the CLI; LMS exports are recognised by the parsers below.
DEFAULT_LMS_PATTERN = ""


# --- LMS file-name formats -------------------------------------------------------------------
# Canvas: lib/content_zipper.rb (instructure/canvas-lms), `get_filename` + `add_upload_submission`:
#   [sortable name with non-word characters removed, downcased] + ["LATE" if submission.late?] + user_id,
#   joined by "_", then "_<attachment id>_<display name>"; anonymous grading uses "anon_<anonymous id>"
#   and no name. Canvas re-upload (Assignment#infer_comment_context_from_filename) reads the first two
#   all-digit "_" fields as user id and attachment id: the same fields this keeps.
CANVAS = re.compile(
    r"^(?:(?P<name>.+?)_)??(?:(?P<late>LATE)_)?(?P<id>\d+|anon_[A-Za-z0-9]+)_(?P<attachment>\d+)_(?P<file>.+)$"
)
# Moodle: mod/assign/locallib.php `download_submissions()`: prefix = clean_filename(fullname with "_"
#   replaced by " " + "_" + get_uniqueid_for_user(userid)) (the participant id; "Participant" instead of
#   the name under blind marking), then "_" + plugin subtype + "_" + plugin type + "_" + file name when
#   flat, or that prefix as a folder ("..._file_" before Moodle 4.1, "..._file" since) holding the files.
MOODLE_FLAT = re.compile(r"^(?P<name>[^_]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)$")
MOODLE_FOLDER = re.compile(r"^(?P<name>[^_]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
# Blackboard Learn "Assignment File Download" (Grade Centre): "<assignment>_<username>_attempt_
#   <YYYY-MM-DD-HH-MM-SS>_<original file name>", plus "<assignment>_<username>_attempt_<timestamp>.txt",
#   a receipt starting "Name: <Full Name> (<username>)" (as BBGradebookOrganiser and similar tools parse
#   it). The timestamp is the server's local time. A username with "_" is taken from the receipt.
BLACKBOARD = re.compile(
    r"^(?P<assignment>.+)_(?P<id>[^_]+)_attempt_(?P<ts>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)(?:_(?P<file>.+))?$"
)
BLACKBOARD_RECEIPT_NAME = re.compile(r"^Name:\s*(?P<name>.*?)\s*\((?P<id>[^()]+)\)\s*$", re.M)


@dataclass(frozen=True)
class Submission:
    student: str
    lesson: str  # "" when no lesson could be recognised
    path: Path | None  # a private copy of the file; None when there is nothing to grade
    # why a file was chosen or why there is nothing (shown to the student): a byhand.i18n.Msg, the
    # collector's notes joined by "; " (its English text), each rendered in the notebook's language
    note: str = ""
    name: str = ""  # the student's name as the LMS writes it
    lms: str = ""  # canvas | moodle | blackboard | pattern | "" (the folder layout)
    lms_id: str = ""  # Canvas user id, Moodle participant id, Blackboard username
    attachment_id: str = ""  # Canvas: the attachment id (feedback re-upload needs it)
    file: str = ""  # the file's path in the submissions (relative)
    submitted_at: str = ""  # ISO 8601
    time_source: str = ""  # where submitted_at comes from: lms | file mtime | zip entry time
    lms_late: bool = False  # the LMS marked it late (Canvas `_LATE_`)
    attempts: str = ""  # every file found for this lesson, newest first, the graded one marked

    @property
    def key(self) -> str:
        return f"{self.student}/{self.lesson}"

    @property
    def notes(self) -> list:
        """The collector's notes, each a `Msg` (a plain note, of an older grader, as one)."""
        parts = getattr(self.note, "parts", ()) if getattr(self.note, "msgid", "") is None else ()
        if parts and all(isinstance(p, i18n.Msg) or p == NOTE_SEPARATOR for p in parts):
            return [p for p in parts if p != NOTE_SEPARATOR]
        return [self.note] if self.note else []

    def meta(self) -> dict:
        d = asdict(self)
        d.pop("path")
        return d


# between two of the collector's notes in `Submission.note` (grades.csv and submissions.csv keep it;
# the feedback page says it in the notebook's language)
NOTE_SEPARATOR = N_("; ")


def joined(notes: list) -> str:
    """The collector's notes as `Submission.note`: "" when none."""
    notes = [n for n in notes if n]
    return i18n.join(NOTE_SEPARATOR, notes) if notes else ""


def lesson_of(filename: str, lessons: list) -> str:
    """The lesson a file name stands for, or "" when none or several fit."""
    stem = filename[:-6] if filename.lower().endswith(".ipynb") else filename
    if stem in lessons:
        return stem
    norm = re.sub(r"(\s*\(\d+\)|[-_ ]?copy\d*|-\d+|[-_ ]?\d{4}-\d\d-\d\d.*)+$", "", stem.strip(), flags=re.I)
    norm = re.sub(r"[\s\-]+", "_", norm).lower()
    exact = [lesson for lesson in lessons if lesson.lower() == norm]
    if exact:
        return exact[0]
    topic = [
        lesson
        for lesson in lessons
        if lesson.split("_", 1)[-1].lower() == norm
        or norm.startswith(lesson.lower())
        or (len(norm) >= 4 and lesson.split("_", 1)[-1].lower().startswith(norm))
    ]
    return topic[0] if len(topic) == 1 else ""


# ---------------------------------------------------------------------------------------------
# entries -> submissions


def _parse_flat(name: str, custom) -> dict | None:
    """Who a top-level file belongs to, from its name: {student, name, lms, lms_id, file, ...}."""
    if custom is not None:
        m = custom.match(name)
        if m:
            g = m.groupdict()
            ident = g.get("id") or ""
            student = g["student"] + (f"_{ident}" if ident else "")
            lesson_file = g["lesson"] if g["lesson"].lower().endswith(".ipynb") else g["lesson"] + ".ipynb"
            return {
                "student": student,
                "name": g["student"],
                "lms": "pattern",
                "lms_id": ident,
                "file": lesson_file,
            }
    m = MOODLE_FLAT.match(name)
    if m:
        return _moodle(m, m["file"])
    m = BLACKBOARD.match(name)
    if m:
        return {
            "student": m["id"],
            "name": "",
            "lms": "blackboard",
            "lms_id": m["id"],
            "file": m["file"] or "",
            "ts": m["ts"],
            "attempt": name[: m.end("ts")],
        }
    m = CANVAS.match(name)
    if m:
        ident, who = m["id"], m["name"] or ""
        attachment, file = m["attachment"], m["file"]
        if attachment.startswith("0"):  # no Canvas id starts with 0: `<name>_<id>_01_attention.ipynb`
            attachment, file = "", f"{attachment}_{file}"
        return {
            "student": f"{who}_{ident}" if who else ident,
            "name": who,
            "lms": "canvas",
            "lms_id": ident,
            "attachment_id": attachment,
            "file": file,
            "late": bool(m["late"]),
        }
    return None


def _moodle(m, file: str) -> dict:
    return {
        "student": f"{m['name']}_{m['id']}",
        "name": m["name"],
        "lms": "moodle",
        "lms_id": m["id"],
        "file": file,
    }


def _blackboard_time(ts: str) -> str:
    return dt.datetime.strptime(ts, "%Y-%m-%d-%H-%M-%S").isoformat()


def _iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class _Student:
    student: str
    info: dict
    candidates: list = field(default_factory=list)  # (lesson, Entry, meta)
    refused: list = field(default_factory=list)  # (lesson, Entry)
    others: list = field(default_factory=list)  # names of files that are not notebooks of a lesson


def _classify(entries: list, lessons: list, pattern: str | None, lesson_map: list | None = None) -> list:
    custom = re.compile(pattern) if pattern else None
    lesson_map = lesson_map or []
    students: dict = {}
    receipts: dict = {}
    loose: list = []  # top-level notebooks no pattern recognises

    def student_for(info: dict) -> _Student:
        key = (info["lms"], info["lms_id"]) if info["lms_id"] else ("", info["student"])
        if key not in students:
            students[key] = _Student(info["student"], info)
        return students[key]

    # Blackboard receipts first: they name the student, and fix usernames holding "_"
    for e in entries:
        if len(e.parts) == 1 and e.name.lower().endswith(".txt") and e.staged is not None:
            m = BLACKBOARD.match(e.name[:-4])
            if m and not m["file"]:
                text = e.staged.read_text(encoding="utf-8", errors="replace")[:4000]
                r = BLACKBOARD_RECEIPT_NAME.search(text)
                ident = r["id"] if r and e.name[:-4].endswith(f"_{r['id']}_attempt_{m['ts']}") else m["id"]
                full = r["name"] if r else ""
                receipts[e.name[:-4]] = (full, ident)
                # a receipt is an attempt: its student gets a row even with no notebook attached
                student_for({"student": ident, "name": full, "lms": "blackboard", "lms_id": ident})
    for e in entries:
        if len(e.parts) == 1:
            info = _parse_flat(e.name, custom)
            if info is None:
                if e.name.lower().endswith(".ipynb") or e.refused:
                    loose.append(e)
                continue
            if info["lms"] == "blackboard":
                if not info["file"]:
                    continue  # the receipt itself
                prefix = next((k for k in receipts if e.name.startswith(k + "_")), None)
                if prefix is not None:
                    full, ident = receipts[prefix]
                    info.update(student=ident, lms_id=ident, name=full, file=e.name[len(prefix) + 1 :])
            file = info["file"]
        else:
            m = MOODLE_FOLDER.match(e.parts[0])
            info = (
                _moodle(m, "/".join(e.parts[1:]))
                if m
                else {
                    "student": e.parts[0],
                    "name": "",
                    "lms": "",
                    "lms_id": "",
                    "file": "/".join(e.parts[1:]),
                }
            )
            file = e.parts[-1]
        s = student_for(info)
        mapped = mapped_lesson(lesson_map, ["/".join(e.parts), Path(file).name])
        if mapped:
            lesson = mapped
        else:
            lesson = (
                lesson_of(Path(file).name, lessons) if file.lower().endswith(".ipynb") or e.refused else ""
            )
        if e.refused:
            s.refused.append((lesson, e))
            continue
        if e.staged is None or not file.lower().endswith(".ipynb") or not lesson:
            if not (info["lms"] == "blackboard" and not info["file"]):
                s.others.append(Path(file).name)
            continue
        meta = {
            "file": "/".join(e.parts),
            "attachment_id": info.get("attachment_id", ""),
            "lms_late": info.get("late", False),
        }
        if info.get("ts"):
            meta.update(submitted_at=_blackboard_time(info["ts"]), time_source="lms")
        else:
            meta.update(submitted_at=_iso(e.mtime), time_source=e.time_source if e.mtime else "")
        meta["original"] = Path(file).name
        s.candidates.append((lesson, e, meta))

    items: list = []
    for s in students.values():
        items += _choose(s)
    for e in loose:
        why = msg(
            "this file's name matches no known layout (a folder per student, or a Canvas, Moodle or "
            "Blackboard export; --pattern for others): put it in a folder named after the student, "
            "<student>/<lesson>.ipynb"
        )
        if e.refused:
            why = msg("{file} {why}", file=e.name, why=e.refused)
        items.append(Submission(e.name, "", None, joined([why]), file=e.name))
    return sorted(items, key=lambda s: (s.student, s.lesson))


def _choose(s: _Student) -> list:
    base = {k: s.info.get(k, "") for k in ("name", "lms", "lms_id")}
    by_lesson: dict = {}
    for lesson, e, meta in s.candidates:
        by_lesson.setdefault(lesson, []).append((e, meta))
    refused_by_lesson: dict = {}
    for lesson, e in s.refused:
        refused_by_lesson.setdefault(lesson, []).append(("/".join(e.parts[1:]) or e.name, e.refused))
    out = []
    for lesson, found in sorted(by_lesson.items()):
        found.sort(key=lambda item: _newest_first(item, lesson))
        e, meta = found[0]
        attempts = "; ".join(_attempt(m) + (" (graded)" if i == 0 else "") for i, (_, m) in enumerate(found))
        shown = meta["original"]
        notes = []
        if Path(shown).stem != lesson:
            notes.append(msg("graded {file} as {lesson}", file=shown, lesson=lesson))
        if len(found) > 1:
            others = ", ".join(m["original"] for _, m in found[1:])
            notes.append(_also_found(others, shown, _evidence(found)))
        meta = {k: v for k, v in meta.items() if k != "original"}
        meta["attempts"] = attempts if len(found) > 1 else ""
        notes += [_refused(f, why) for f, why in refused_by_lesson.pop(lesson, [])]
        out.append(Submission(s.student, lesson, e.staged, joined(notes), **base, **meta))
    for lesson, reasons in sorted(refused_by_lesson.items()):
        if lesson or not out:
            # one "refused: " before the first file (grades.csv's English as it always was)
            notes = [_refused(*reasons[0])] + [msg("{file} {why}", file=f, why=why) for f, why in reasons[1:]]
            out.append(Submission(s.student, lesson, None, joined(notes), **base))
        else:  # refusals of no recognisable lesson, next to graded notebooks: noted on the first
            first = out[0]
            note = joined(first.notes + [_refused(f, why) for f, why in reasons])
            out[0] = Submission(**{**asdict(first), "note": note, "path": first.path})
    if not out:
        names = ", ".join(sorted(set(s.others)))
        if names:
            why = msg(
                "no notebook of a known lesson found ({names}); name it like 01_attention.ipynb", names=names
            )
        else:
            why = msg("no notebook of a known lesson found (no .ipynb file); name it like 01_attention.ipynb")
        out.append(Submission(s.student, "", None, joined([why]), **base))
    return out


def _refused(file: str, why) -> i18n.Msg:
    """The note on a file the collector did not read (`why`: tree.py's reason, a `Msg`)."""
    return msg("refused: {file} {why}", file=file, why=why)


def _also_found(others: str, shown: str, evidence: str) -> i18n.Msg:
    """The note on a student's other files for the same lesson, and why the graded one was chosen."""
    if evidence == "submission time":
        return msg(
            "also found {others}: graded {file}, the newest by its submission time", others=others, file=shown
        )
    if evidence == "attachment id":
        return msg(
            "also found {others}: graded {file}, the newest by its attachment id", others=others, file=shown
        )
    if evidence == "re-upload number":
        return msg(
            "also found {others}: graded {file}, the newest by its re-upload number",
            others=others,
            file=shown,
        )
    return msg("also found {others}: graded {file}", others=others, file=shown)


# A re-upload's suffix: Canvas saves a second file of the same name as `name-1.ipynb`, browsers
# download one as `name (1).ipynb`; the larger the number, the later the file.
_REUPLOAD = re.compile(r"(?:-(\d+)|\s*\((\d+)\))$")


def _reupload(original: str) -> int:
    m = _REUPLOAD.search(Path(original).stem)
    return int(m[1] or m[2]) if m else 0


def _newest_first(item, lesson: str) -> tuple:
    """The order of one student's files for one lesson, newest first, by the LMS's own evidence: its
    submission time (Blackboard's attempt), then Canvas's attachment id (ids grow with every upload),
    then a re-upload suffix; only then the file whose name is exactly the lesson's."""
    e, meta = item
    lms_time = meta.get("time_source") == "lms"
    attachment = meta.get("attachment_id") or ""
    return (
        0 if lms_time else 1,
        "" if not lms_time else _neg(meta["submitted_at"]),
        -int(attachment) if attachment.isdigit() else 0,
        -_reupload(meta["original"]),
        Path(meta["original"]).stem != lesson,
        len(e.name),
        e.name,
    )


def _attempt(meta: dict) -> str:
    what = [f"attachment {meta['attachment_id']}"] if meta.get("attachment_id") else []
    if meta.get("submitted_at") and meta.get("time_source") == "lms":
        what.append(f"submitted {meta['submitted_at']}")
    return meta["original"] + (f" ({', '.join(what)})" if what else "")


def _evidence(found: list) -> str:
    """What says the first of `found` is the newest ("" when nothing does)."""
    (_, first), (_, second) = found[0], found[1]
    if first.get("time_source") == "lms" and first.get("submitted_at") != second.get("submitted_at"):
        return "submission time"
    if (first.get("attachment_id") or "") != (second.get("attachment_id") or "") and first.get(
        "attachment_id"
    ):
        return "attachment id"
    if _reupload(first["original"]) != _reupload(second["original"]):
        return "re-upload number"
    return ""  # nothing in the export says which is newer: the file named exactly as the lesson


def read_lesson_map(specs: list, lessons: list) -> list:
    """`--map` values as [(glob, lesson)]: `GLOB=LESSON` (a file name or path, wildcards allowed),
    `LESSON` alone (every file of this export is that lesson: a per-assignment download), or a CSV
    file with `file,lesson` columns. The lesson must be one of the course's."""
    out = []
    for spec in specs or []:
        path = Path(spec)
        if spec.lower().endswith(".csv") and path.is_file():
            with open(path, newline="", encoding="utf-8-sig") as f:
                pairs = [(r.get("file", "").strip(), r.get("lesson", "").strip()) for r in csv.DictReader(f)]
        elif "=" in spec:
            glob, _, lesson = spec.rpartition("=")
            pairs = [(glob.strip(), lesson.strip())]
        else:
            pairs = [("*", spec.strip())]
        for glob, lesson in pairs:
            if lesson.endswith(".ipynb"):
                lesson = lesson[:-6]
            if lesson not in lessons:
                raise ValueError(f"--map {spec}: {lesson!r} is not a lesson (one of {', '.join(lessons)})")
            if not glob:
                raise ValueError(f"--map {spec}: no file name before '='")
            out.append((glob, lesson))
    return out


def mapped_lesson(lesson_map: list, names: list) -> str:
    """The lesson `--map` gives a file (its path in the export or its own name), "" when none."""
    for glob, lesson in lesson_map:
        if any(fnmatch.fnmatchcase(name, glob) or name.endswith("/" + glob) for name in names):
            return lesson
    return ""


def _neg(iso: str) -> str:
    """A sort key that orders ISO timestamps latest first."""
    return "".join(chr(0x10FFFF - ord(c)) for c in iso)


def _strip_enclosing(entries: list) -> list:
    """Drop one enclosing folder (as zips made by right-click > compress have) while it is the only
    top-level folder of the readable entries and holds a class (folders, or LMS-named files), not
    one student's notebooks. Refused entries outside it (`/abs/...`) keep their path."""
    while True:
        inside = [e for e in entries if not e.refused]
        if not inside or not all(len(e.parts) >= 2 for e in inside) or len({e.parts[0] for e in inside}) != 1:
            return entries
        top = inside[0].parts[0]
        inner = [e.parts[1:] for e in entries if e.parts[0] == top]
        holds_folders = any(len(p) >= 2 for p in inner)
        holds_lms = any(len(p) == 1 and _parse_flat(p[0], None) for p in inner)
        if not (holds_folders or holds_lms):
            return entries
        for e in entries:
            if e.parts[0] == top and len(e.parts) >= 2:
                e.parts = e.parts[1:]


# ---------------------------------------------------------------------------------------------


def collect(
    source: Path,
    lessons: list,
    pattern: str | None = DEFAULT_LMS_PATTERN,
    workdir: Path | None = None,
    max_file_mb: int = MAX_FILE_MB,
    max_zip_mb: int = MAX_ZIP_MB,
    lesson_map: list | None = None,
) -> list:
    """All submissions under `source` (a folder or a .zip), sorted by student then lesson.

    Every file that is graded is first copied (safely, see tree.py) into `workdir`; the
    returned submissions point at those copies. `lesson_map`: [(glob, lesson)] from
    `read_lesson_map` (`--map`), which wins over the file's name."""
    source = Path(source)
    if not source.exists() and not source.is_symlink():
        raise FileNotFoundError(f"no such folder or zip: {source}")
    workdir = Path(workdir or tempfile.mkdtemp(prefix="tbb-collect-"))
    entries, zipped = read_tree(source, workdir / "staged", max_file_mb, max_zip_mb)
    return _classify(_strip_enclosing(entries) if zipped else entries, lessons, pattern or None, lesson_map)
