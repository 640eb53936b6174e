"""Typed outcomes that the grader's modules hand each other. Messages are for people: no module
decides anything by reading another's message text (it may be localized, redacted or reworded).

- `Status`: the contract's status of a question or a lesson.
- `Row.fault` / `Row.not_done` (grade.py) and `RunResult.kernel_lost` (runner.py) carry the facts
  that used to be parsed out of messages.
- `GradingStopped`: the exceptions the CLI reports as one line (no traceback).
"""

from __future__ import annotations

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
