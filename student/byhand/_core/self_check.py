"""The self-check a lesson's test cells call: `check` (run the cases in the student's kernel, judge
them there, print the one-line success or raise the failure), `lesson_check` (a lesson's
`check(name, namespace, ...)`), `by_name` (a lesson's `QUESTIONS`) and `OutdatedChecks` (a
notebook newer than these checks).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from .. import _depends, i18n  # BYHAND-DEPENDS: _depends
from ..i18n import msg
from .failures import _VERBOSE, AnswerError, CheckFailure
from .judging import Question, judge_all, ordered_cases
from .lines import LINE
from .recording import run_case
from .steps import _RAISED


class OutdatedChecks(LookupError):
    """A notebook asks for a question this version of the checks does not know."""


def check(
    questions: dict, name: str, namespace: dict, hidden: bool = False, device=None, traceback: bool = False
) -> None:
    """Self-check one question inside the student's kernel. Prints a one-line success, raises a
    CheckFailure with a hint otherwise: IPython shows its message alone, or with `traceback` the whole
    traceback, that of the student's own error included. `device` (e.g. "cuda"): build the inputs there."""
    if name not in questions:  # a notebook newer than this package: say so, not KeyError
        from .. import __version__

        raise OutdatedChecks(
            i18n.localize(
                msg(
                    "{name}: this exercise is newer than your byhand checks (version {version}): update "
                    "them (pip install -U with the course's install line) and restart the kernel",
                    name=name,
                    version=__version__,
                )
            )
        )
    question = questions[name]
    cases = ordered_cases(question, hidden)

    def results():
        for case in cases:
            result = json.loads(run_case(name, case.wire(), namespace, device, reuse=True))
            yield case, result
            if "stopped" in result:  # one stopped case is the verdict: the next would hang too
                return

    _RAISED[0] = None
    replaced = _depends.note(_depends.replaced(name, namespace))  # BYHAND-DEPENDS: the one line
    try:
        judge_all(question, results())
    except CheckFailure as exc:
        if replaced:  # BYHAND-DEPENDS
            exc = exc.with_text(i18n.message_of(exc) + LINE + i18n.localize(replaced))  # BYHAND-DEPENDS
        raised, _RAISED[0] = _RAISED[0], None
        if traceback or _VERBOSE[0]:
            exc.full_traceback = True
            if isinstance(exc, AnswerError) and raised is not None:
                raise exc from raised  # where the student's code raised, then this check
        if replaced:  # BYHAND-DEPENDS: the failure with the line
            raise exc from None
        raise
    if hidden:
        done = msg("{name}: all {n} cases, hidden ones included, pass.", name=name, n=len(cases))
    else:
        done = msg("{name}: all {n} visible cases pass.", name=name, n=len(cases))
    print(i18n.localize(done + (LINE + replaced if replaced else "")))  # BYHAND-DEPENDS: + the line


def by_name(*questions: Question) -> dict:
    """A check module's `QUESTIONS`: its questions by name, in lesson order."""
    return {q.name: q for q in questions}


def lesson_check(questions: dict, example: str, devices: bool = True) -> Callable:
    """A check module's `check(name, namespace, hidden=False, device=None)`, what its lesson's test
    cells call (`example`: a question its docstring shows). `devices=False`: a module whose cases
    are built on the CPU only, whose `check` takes no `device`."""
    usage = f'Self-check: `check("{example}", globals())`.'
    usage += "\n    `traceback=True`: a failure shows the whole traceback, not only its message."
    if devices:

        def lesson_check(
            name: str, namespace: dict, hidden: bool = False, device=None, traceback: bool = False
        ) -> None:
            check(questions, name, namespace, hidden, device, traceback)

        usage += '\n    `device` (e.g. "cuda"): the inputs are built there.'
    else:

        def lesson_check(name: str, namespace: dict, hidden: bool = False, traceback: bool = False) -> None:
            check(questions, name, namespace, hidden, traceback=traceback)

    lesson_check.__name__ = lesson_check.__qualname__ = "check"
    lesson_check.__doc__ = usage
    return lesson_check
