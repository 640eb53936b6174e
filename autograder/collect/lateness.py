"""Deadlines, extensions and a late policy, from a small TOML file (`make grade CONFIG=course.toml`).

    timezone = "Europe/Berlin"          # for every time written without a zone (default UTC)
    deadline = "2026-03-01 23:59"       # every lesson, unless [deadlines] names it
    lessons = ["01_attention", "02_layernorm"]  # the lessons the totals count (default: all handed in)
    [deadlines]
    "02_layernorm" = "2026-03-08 23:59"
    [extensions]                        # by student label, LMS id or name; optionally "/<lesson>"
    "smithjane_1111" = "2026-03-03 23:59"   # a new deadline
    "Bo Lee_4502/01_attention" = 2          # or extra days
    [late_policy]
    percent_per_day = 10                # of the points earned, per started day late
    max_percent = 50                    # the penalty never exceeds this
    grace_minutes = 15
    trust_mtime = false                 # a file's mtime is not a submission time unless you say so
    [lms]
    roster = "roster.csv"               # optional: lms,lms_id,student,email,id_number (see lms.py)
    times = "submission_times.csv"      # optional: student (label, LMS id or name),lesson,submitted_at
    [lms.columns]                       # optional: the LMS's own column name per lesson
    "01_attention" = "Lesson 1: Attention (12345)"
    [limits]                            # seconds: a cell, the whole notebook, one question's probe
    cell_timeout = 60                   # (the command line wins)
    notebook_timeout = 300
    question_timeout = 30

Every key is checked before anything is graded (`parse`, `check_students`): a typo is an error that
names the file, the line and the key, never a silent change of grades (docs/grading.md).
The submission time comes from the LMS when its export holds one (Blackboard's attempt timestamp),
or from `[lms] times` (a CSV of the LMS's submission times, e.g. Canvas's submissions API
`submitted_at` or Moodle's grading table: Canvas's download names and zip entries carry no time,
Canvas writes each entry at export time); otherwise from the zip entry's or file's mtime, which is
noted but neither makes a row late nor is penalised unless `trust_mtime = true` (copying a folder
resets mtimes). Canvas's `_LATE_` marker is kept: with a known time, the time decides how many days;
with none, a policy charges one day's percent and says so. Only late rows say late.
The points in grades.csv stay the autograder's; summary.csv, the report, nbgrader's gradebook and the
LMS exports count the points after the penalty; the feedback page and OUT/submissions.csv show the
lateness, the penalty and the points before and after it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from zoneinfo import ZoneInfo

try:
    import tomllib
except ImportError:  # Python 3.10: the same parser, as the tomli package
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None


@dataclass
class Config:
    timezone: str = "UTC"
    deadline: dt.datetime | None = None
    deadlines: dict = field(default_factory=dict)  # lesson -> datetime
    extensions: dict = field(default_factory=dict)  # key -> datetime | timedelta
    percent_per_day: float = 0.0
    max_percent: float = 100.0
    grace: dt.timedelta = dt.timedelta(0)
    trust_mtime: bool = False
    columns: dict = field(default_factory=dict)  # lesson -> LMS column header
    roster: Path | None = None
    times: Path | None = None  # a CSV of submission times from the LMS
    source: str = ""  # the TOML text, kept in OUT/.state for later partial regrades
    path: Path | None = None  # the file it was read from (named in errors)
    lines: dict = field(default_factory=dict)  # key path -> line, for errors
    lessons: list | None = None  # the lessons that count toward the totals; None: every lesson graded
    limits: dict = field(default_factory=dict)  # cell_timeout, notebook_timeout, question_timeout (s)

    @property
    def has_policy(self) -> bool:
        return self.percent_per_day > 0


class ConfigError(ValueError):
    pass


def _time(value, tz: ZoneInfo, where: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        t = value
    elif isinstance(value, dt.date):
        t = dt.datetime.combine(value, dt.time(23, 59, 59))
    elif isinstance(value, str):
        try:
            t = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"{where}: {value!r} is not a date and time like 2026-03-01 23:59") from None
    else:
        raise ConfigError(f"{where}: expected a date and time, got {value!r}")
    return t if t.tzinfo else t.replace(tzinfo=tz)


# every key the config knows: a table's keys, or None where the keys are the instructor's (lessons,
# students); anything else is a typo that would change grades silently (`percent_per_dya`)
SCHEMA = MappingProxyType(
    {
        "timezone": "",
        "deadline": "",
        "lessons": "",
        "deadlines": None,
        "extensions": None,
        "late_policy": MappingProxyType(
            {"percent_per_day": "", "max_percent": "", "grace_minutes": "", "trust_mtime": ""}
        ),
        "lms": MappingProxyType({"roster": "", "times": "", "columns": None}),
        "limits": MappingProxyType({"cell_timeout": "", "notebook_timeout": "", "question_timeout": ""}),
    }
)
_KEY_PART = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_\-]+)')


def _key_parts(text: str) -> tuple:
    return tuple(a or b or c for a, b, c in _KEY_PART.findall(text))


def key_lines(text: str) -> dict:
    """{key path (a tuple): its line number} for every table header and key of a TOML text (tomllib
    keeps no positions); the first line a key is on."""
    out: dict = {}
    table: tuple = ()
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        head = re.match(r"^\[\[?\s*(.+?)\s*\]\]?\s*(#.*)?$", s)
        if head:
            table = _key_parts(head.group(1))
            out.setdefault(table, n)
            continue
        key = re.match(
            r'^((?:"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_\-]+)(?:\s*\.\s*(?:"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_\-]+))*)\s*=',
            s,
        )
        if key:
            out.setdefault(table + _key_parts(key.group(1)), n)
    return out


class _Where:
    """Names a key of the config for an error: "course.toml, line 9: late_policy.percent_per_dya"."""

    def __init__(self, text: str, path: Path | None) -> None:
        self.lines, self.path = key_lines(text), path

    def __call__(self, *key) -> str:
        line = self.lines.get(tuple(key))
        dotted = ".".join(str(k) for k in key)
        place = str(self.path) if self.path else "the course config"
        return f"{place}, line {line}: {dotted}" if line else f"{place}: {dotted}"


def _check_keys(data: dict, schema: Mapping, where: _Where, prefix: tuple = ()) -> None:
    for key, value in data.items():
        if key not in schema:
            known = ", ".join(schema)
            raise ConfigError(f"{where(*prefix, key)}: unknown key (the keys here: {known})")
        sub = schema[key]
        if isinstance(sub, Mapping):
            if not isinstance(value, dict):
                raise ConfigError(f"{where(*prefix, key)}: expected a table [{'.'.join((*prefix, key))}]")
            _check_keys(value, sub, where, (*prefix, key))
        elif sub is None and not isinstance(value, dict):
            raise ConfigError(f"{where(*prefix, key)}: expected a table [{'.'.join((*prefix, key))}]")


def _number(value, where: str, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if value < low or (high is not None and value > high):
        limits = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        raise ConfigError(f"{where}: {value!r} must be {limits}")
    return float(value)


def parse(text: str, base: Path | None = None, path: Path | None = None, known_lessons=None) -> Config:
    """The config in `text`, checked: an unknown key, a lesson that is not one of `known_lessons`
    (default: the course's), a time that does not parse, each a `ConfigError` naming `path`, the
    line and the key. The students it names are checked against the class by `check_students`."""
    if tomllib is None:
        raise ConfigError("reading the course config needs Python 3.11+ or `pip install tomli`")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path or 'the course config'} is not valid TOML: {exc}") from None
    where = _Where(text, path)
    _check_keys(data, SCHEMA, where)
    if known_lessons is None:
        from autograder import course

        known_lessons = course.lessons()
    known_lessons = list(known_lessons)

    def lesson_of(lesson, *key) -> str:
        if lesson not in known_lessons:
            raise ConfigError(
                f"{where(*key)}: there is no lesson {lesson!r} (the lessons: {', '.join(known_lessons)})"
            )
        return lesson

    try:
        tz = ZoneInfo(data.get("timezone", "UTC"))
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError
        raise ConfigError(f"{where('timezone')}: unknown timezone {data.get('timezone')!r}") from None
    cfg = Config(timezone=str(tz), source=text, path=path)
    cfg.lines = where.lines
    if "deadline" in data:
        cfg.deadline = _time(data["deadline"], tz, where("deadline"))
    if "lessons" in data:
        if not isinstance(data["lessons"], list) or not all(isinstance(x, str) for x in data["lessons"]):
            raise ConfigError(f'{where("lessons")}: expected a list of lessons, like ["01_attention"]')
        cfg.lessons = [lesson_of(x, "lessons") for x in data["lessons"]]
    for lesson, value in data.get("deadlines", {}).items():
        cfg.deadlines[lesson_of(lesson, "deadlines", lesson)] = _time(value, tz, where("deadlines", lesson))
    for key, value in data.get("extensions", {}).items():
        if "/" in key:
            lesson_of(key.rsplit("/", 1)[1], "extensions", key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            cfg.extensions[key] = dt.timedelta(days=value)
        else:
            cfg.extensions[key] = _time(value, tz, where("extensions", key))
    policy = data.get("late_policy", {})
    cfg.percent_per_day = _number(
        policy.get("percent_per_day", 0), where("late_policy", "percent_per_day"), 0, 100
    )
    cfg.max_percent = _number(policy.get("max_percent", 100), where("late_policy", "max_percent"), 0, 100)
    cfg.grace = dt.timedelta(
        minutes=_number(policy.get("grace_minutes", 0), where("late_policy", "grace_minutes"), 0)
    )
    trust = policy.get("trust_mtime", False)
    if not isinstance(trust, bool):
        raise ConfigError(f"{where('late_policy', 'trust_mtime')}: expected true or false, got {trust!r}")
    cfg.trust_mtime = trust
    lms = data.get("lms", {})
    cfg.columns = {lesson_of(k, "lms", "columns", k): str(v) for k, v in lms.get("columns", {}).items()}
    if lms.get("times"):
        times = Path(lms["times"])
        cfg.times = times if times.is_absolute() or base is None else base / times
    if lms.get("roster"):
        roster = Path(lms["roster"])
        cfg.roster = roster if roster.is_absolute() or base is None else base / roster
    for key, value in data.get("limits", {}).items():
        cfg.limits[key] = int(_number(value, where("limits", key), 1))
    return cfg


def load(path: Path) -> Config:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the course config {path}: {exc.strerror}") from None
    return parse(text, path.parent, path)


def known_lessons(lessons: list, where: str) -> list:
    """`lessons`, each a lesson of the course, or a `ConfigError` naming the stranger."""
    from autograder import course

    known = course.lessons()
    for lesson in lessons:
        if lesson not in known:
            raise ConfigError(f"{where}: there is no lesson {lesson!r} (the lessons: {', '.join(known)})")
    return list(lessons)


def check_students(cfg: Config | None, known: set) -> None:
    """An extension for a student neither in the class (label, LMS id or name) nor in the roster is
    a typo that would leave a student's late work penalised: a `ConfigError` naming file, line, key."""
    if cfg is None:
        return
    where = _Where(cfg.source, cfg.path)
    where.lines = cfg.lines or where.lines
    for key in cfg.extensions:
        who = key.rsplit("/", 1)[0] if "/" in key else key
        if who not in known:
            raise ConfigError(
                f"{where('extensions', key)}: no student {who!r} in the class or the roster "
                "(give a student's label, LMS id or name, as in students.csv)"
            )


def deadline_for(cfg: Config, meta: dict, lesson: str) -> tuple:
    """(deadline or None, "extension" note)."""
    base = cfg.deadlines.get(lesson, cfg.deadline)
    keys = [k for k in (meta.get("student"), meta.get("lms_id"), meta.get("name")) if k]
    for key in [f"{k}/{lesson}" for k in keys] + keys:
        if key in cfg.extensions:
            ext = cfg.extensions[key]
            if isinstance(ext, dt.timedelta):
                if base is None:
                    return None, ""
                return base + ext, f"extension +{ext.days}d"
            return ext, "extension"
    return base, ""


def assess(cfg: Config | None, meta: dict, lesson: str) -> dict:
    """The lateness columns of one submission."""
    out = {
        "deadline": "",
        "late": "",
        "late_by_hours": "",
        "penalty_percent": "",
        "late_note": "",
    }
    marker = bool(meta.get("lms_late"))
    if marker:
        out["late"] = "yes (LMS)"
    if cfg is None or not lesson:
        return out
    deadline, note = deadline_for(cfg, meta, lesson)
    notes = [note] if note else []
    if deadline is None:
        out["late_note"] = "; ".join(notes)
        return out
    out["deadline"] = deadline.isoformat()
    when = meta.get("submitted_at") or ""
    source = meta.get("time_source") or ""
    trusted = source == "lms" or (source and cfg.trust_mtime)
    days = 0
    if when:
        t = dt.datetime.fromisoformat(when)
        t = t if t.tzinfo else t.replace(tzinfo=ZoneInfo(cfg.timezone))
        late_by = t - deadline
        hours = f"{max(late_by.total_seconds(), 0) / 3600:.2f}"
        if late_by > cfg.grace:
            days = math.ceil((late_by - cfg.grace) / dt.timedelta(days=1))
        if trusted:
            out["late_by_hours"] = hours
            if days:
                out["late"] = "yes" + (" (LMS)" if marker else "")
            else:  # the LMS's marker is against its own due date: the time and any extension decide
                out["late"] = "no"
                if marker:
                    notes.append("marked late by the LMS; on time by the course's deadline")
        elif days:  # a copy's time is no submission time: noted, never "late" on its own
            notes.append(f"the {source} is {hours} h after the deadline; not a submission time (trust_mtime)")
        else:
            notes.append(f"time from the {source}, not the LMS")
    if cfg.has_policy:
        if when and trusted:
            charged = days
        elif marker:
            charged = 1
            notes.append("marked late by the LMS, time unknown: one day's penalty")
        else:
            charged = 0
        out["penalty_percent"] = f"{min(cfg.max_percent, cfg.percent_per_day * charged):g}"
    out["late_note"] = "; ".join(notes)
    return out


def penalised(points: float, penalty_percent: str) -> float:
    if not penalty_percent:
        return points
    return round(points * (1 - float(penalty_percent) / 100), 2)


def read_times(cfg: Config | None) -> dict:
    """`[lms] times`: {(who, lesson): ISO time} where who is a student label, LMS id or name."""
    import csv

    if cfg is None or cfg.times is None:
        return {}
    try:
        with open(cfg.times, newline="", encoding="utf-8-sig") as f:
            rows = [
                {(k or "").strip().lower(): (v or "").strip() for k, v in r.items()}
                for r in csv.DictReader(f)
            ]
    except OSError as exc:
        raise ConfigError(f"cannot read the submission times {cfg.times}: {exc.strerror}") from None
    tz = ZoneInfo(cfg.timezone)
    out = {}
    for i, r in enumerate(rows, 2):
        who, lesson, when = r.get("student", ""), r.get("lesson", ""), r.get("submitted_at", "")
        if not (who and lesson and when):
            raise ConfigError(f"{cfg.times}, line {i}: expected student, lesson and submitted_at")
        out[(who, lesson)] = _time(when, tz, f"{cfg.times}, line {i}").isoformat()
    return out


def apply_times(subs: list, cfg: Config | None) -> list:
    """The submissions with the LMS's submission time from `[lms] times` where it gives one."""
    import dataclasses

    times = read_times(cfg)
    if not times:
        return subs
    out = []
    for s in subs:
        when = next(
            (times[(k, s.lesson)] for k in (s.student, s.lms_id, s.name) if k and (k, s.lesson) in times), ""
        )
        out.append(dataclasses.replace(s, submitted_at=when, time_source="lms") if when else s)
    return out
