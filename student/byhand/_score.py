"""The score in the notebook: the lesson's last code cell (given, not graded) prints the points the
grader will give each autograded question, their total, and the written answers that wait for the
instructor.

It runs each question's check with its hidden cases, as the grader does (`_core.check`, the earlier
answers replaced by their references where they fail: `_depends`), silently, and counts a question's
points when its check passes. What the grader sees and this cell cannot (a test cell of the notebook
that raised, a cell stopped by the time limit) is said on the feedback page.
"""

from __future__ import annotations

import contextlib
import io

from . import _core, i18n
from .i18n import N_, msg

HEADER = N_("The points the grader will give your answers as they are now (hidden cases included):")
ROW = N_("{name} {points} / {max}")
TOTAL = N_("total: {points} / {max} autograded points")
WRITTEN = N_("written answers your instructor grades by hand: {names}")
WRITTEN_ONE = N_("{name} (at most {points})")
NO_WRITTEN = N_("no written answers in this lesson")


def points(questions: dict, namespace: dict, maxes: dict) -> dict:
    """question -> the points its check gives (all of `maxes[question]` when it passes, else 0)."""
    got = {}
    for name, most in maxes.items():
        try:
            with contextlib.redirect_stdout(io.StringIO()), i18n.using(i18n.DEFAULT):
                _core.check(questions, name, namespace, hidden=True)
            got[name] = int(most)
        except Exception:  # noqa: BLE001 - a failure, a stub, an error, a question it does not know
            got[name] = 0
    return got


def score(questions: dict, namespace: dict, maxes: dict, written: dict) -> dict:
    """Print each autograded question's points, the total and the written answers (`written`: name
    -> points); returns the points by question."""
    maxes = {n: int(p) for n, p in maxes.items()}
    written = {n: int(p) for n, p in written.items()}
    got = points(questions, namespace, maxes)
    width = max((len(n) for n in maxes), default=0)
    lines = [msg(HEADER)]
    for name, most in maxes.items():
        lines.append("  " + msg(ROW, name=(name + ":").ljust(width + 1), points=got[name], max=most))
    lines.append("  " + msg(TOTAL, points=sum(got.values()), max=sum(maxes.values())))
    if written:
        names = i18n.join(N_(", "), [msg(WRITTEN_ONE, name=n, points=p) for n, p in written.items()])
        lines.append(msg(WRITTEN, names=names))
    else:
        lines.append(msg(NO_WRITTEN))
    print(i18n.localize(i18n.join("\n", lines)))
    return got


def lesson_score(questions: dict):
    """A lesson module's `score(namespace, points, written)`, what its last cell calls."""

    def score_(namespace: dict, points: dict, written: dict | None = None) -> dict:
        return score(questions, namespace, points, written or {})

    score_.__name__ = score_.__qualname__ = "score"
    score_.__doc__ = (
        "Print the points the grader will give each autograded question (`points`: name -> its "
        "points), their total, and the written answers (`written`: name -> points)."
    )
    return score_
