"""Typed outcomes that the grader's modules hand each other. Messages are for people: no module
decides anything by reading another's message text (it may be localized, redacted or reworded).

- `Status`: the contract's status of a question or a lesson.
- `Row`, `Graded`: one row of grades.csv and everything one submission produced; `Row.fault`,
  `Row.not_done`, `Row.knock_on` (and `RunResult.kernel_lost` in runner.py) carry the facts other
  modules act on, never a message.
- `CONTRACT_COLUMNS`, `contract_row`, `summary_rows`, `number`: the contract's CSVs.
- `safe_name`: a student's label as one path component of what is written for them.
- `GradingStopped`: the exceptions the CLI reports as one line (no traceback).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum


class Status(str, Enum):
    """A question's or a lesson's status; equal to (and written as) its contract string."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    UNGRADABLE = "ungradable"
    NEEDS_GRADING = "needs grading"  # a written answer waiting for a person (extends the contract)

    __str__ = str.__str__
    __format__ = str.__format__

    @classmethod
    def of_lesson(cls, statuses) -> Status:
        """A lesson's status from its rows' statuses: ungradable beats waiting-for-a-person beats
        failed; passed only when every row passed."""
        statuses = set(statuses)
        if cls.UNGRADABLE in statuses:
            return cls.UNGRADABLE
        if cls.NEEDS_GRADING in statuses:
            return cls.NEEDS_GRADING
        return cls.PASSED if statuses == {cls.PASSED} else cls.FAILED


class GradingStopped(RuntimeError):
    """Grading could not go on for a reason outside any one submission: the CLI says it in one
    line and exits 1."""


class SchedulerLost(GradingStopped):
    """The Dask scheduler went away (or never answered) before every submission came back."""


class NoWorkers(GradingStopped):
    """The Dask scheduler had no worker at all for too long while submissions waited."""


class WorkerMismatch(GradingStopped):
    """A worker grades with other solutions or checks than the grading command's checkout."""


CONTRACT_COLUMNS = ("student", "lesson", "question", "points", "max_points", "status", "message")


@dataclass
class Row:
    """One row of grades.csv (the contract's columns), plus the facts other modules act on."""

    student: str
    lesson: str
    question: str
    points: float
    max_points: float
    status: Status
    message: str = ""
    fault: bool = False  # the grader's own failure, not the submission's: retried on the next run
    not_done: bool = False  # the answer is still the blank stub (nbgrader's "No response")
    knock_on: bool = False  # it fails because a graded piece it uses fails (not a mistake of its own)

    def __post_init__(self):
        self.status = Status(self.status)

    @classmethod
    def from_dict(cls, d: dict) -> Row:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class Graded:
    """Everything one submission produced: contract rows, feedback, timings."""

    student: str
    lesson: str
    rows: list
    feedback_html: str = ""
    seconds: float = 0.0
    # (question, English hint, the hint in the notebook's language) for the class report
    hints: list = field(default_factory=list)
    notebook: str = ""  # the executed notebook (JSON), for nbgrader's autograded/ folder
    lang: str = ""  # the submitted notebook's language (its messages are in it); "" = read `notebook`
    steps: dict = field(default_factory=dict)  # step -> seconds (`make bench` prints their medians)
    stopped: list = field(
        default_factory=list
    )  # [cell number, limit in s] of each cell its time limit stopped

    @property
    def language(self) -> str:
        """The language the submitted notebook speaks (its messages are in it): `known_language`, or
        English where nothing was read to know it."""
        return self.known_language or "en"

    @property
    def known_language(self) -> str:
        """`lang`, as the judge found it, or for a grade saved without it, the executed notebook's
        metadata; "" when no notebook was read (a refused file, one that is not a notebook)."""
        if self.lang or not self.notebook:
            return self.lang
        try:
            lang = json.loads(self.notebook).get("metadata", {}).get("language")
        except (ValueError, AttributeError):
            return ""
        # the judge checked it against the checks' catalogues; here only its shape (it names a file)
        return lang if isinstance(lang, str) and re.fullmatch(r"[a-z]{2,3}(?:_[A-Z]{2})?", lang) else "en"


def summary_rows(graded: list) -> list:
    from autograder.course import lesson_max

    out = []
    for g in graded:
        pts = sum(r.points for r in g.rows)
        # the lesson's every point, whatever rows this submission produced (an ungradable file, a
        # grade saved before a question was added): totals compare across students
        mx = lesson_max(g.lesson, sum(r.max_points for r in g.rows))
        status = Status.of_lesson(r.status for r in g.rows)
        out.append(
            {
                "student": g.student,
                "lesson": g.lesson,
                "points": number(pts),
                "max_points": number(mx),
                "status": status,
            }
        )
    return out


def number(x: float):
    """A point count as the CSVs write it: 2, not 2.0; 1.33, not 1.3333."""
    return int(x) if float(x).is_integer() else round(x, 2)


def contract_row(r: Row) -> dict:
    """The row as grades.csv writes it: the contract's columns only."""
    d = {k: getattr(r, k) for k in CONTRACT_COLUMNS}
    d["points"], d["max_points"], d["status"] = number(r.points), number(r.max_points), str(r.status)
    return d


def safe_name(name: str) -> str:
    """A student's label as one safe path component (feedback pages, LMS exports, saved state)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "_"
