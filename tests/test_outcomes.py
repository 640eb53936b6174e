"""The typed outcomes the grader's modules hand each other (autograder/outcomes.py, Row,
CheckFailure.hint, RunResult.kernel_lost): nothing decided by reading message text."""

from __future__ import annotations

import csv
import io
import json
import pickle
from dataclasses import asdict

import pytest
from byhand import _core, i18n

from autograder.judge import grade
from autograder.outcomes import (
    CONTRACT_COLUMNS,
    GradingStopped,
    Row,
    SchedulerLost,
    Status,
    WorkerMismatch,
    contract_row,
)


@pytest.mark.parametrize(
    "statuses, expected",
    [
        ({"passed"}, Status.PASSED),
        ({"passed", "failed"}, Status.FAILED),
        ({"passed", "error"}, Status.FAILED),
        ({"passed", "needs grading", "failed"}, Status.NEEDS_GRADING),
        ({"ungradable"}, Status.UNGRADABLE),
        ({"ungradable", "needs grading"}, Status.UNGRADABLE),
    ],
)
def test_a_lessons_status_follows_its_rows(statuses, expected):
    got = Status.of_lesson(statuses)
    assert got is expected, f"statuses {sorted(statuses)}: got {got!r}, expected {expected!r}"


def test_a_status_is_written_as_its_contract_string():
    assert str(Status.NEEDS_GRADING) == "needs grading" and f"{Status.PASSED}" == "passed"
    assert json.dumps({"s": Status.FAILED}) == '{"s": "failed"}'
    with pytest.raises(ValueError):
        Status("passd")


def test_a_row_keeps_its_facts_in_the_state_but_grades_csv_has_the_contract_columns_only():
    row = Row("ann", "01_attention", "softmax", 0, 2, "failed", "softmax: not done yet", not_done=True)
    assert row.status is Status.FAILED, f"got {row.status!r}, expected Status.FAILED"
    back = Row.from_dict(json.loads(json.dumps(asdict(row))))
    assert back == row, f"got {back}, expected {row}"
    old_state = {k: v for k, v in asdict(row).items() if k not in ("fault", "not_done")}
    assert Row.from_dict(old_state).not_done is False  # a state file written before the flags
    f = io.StringIO()
    w = csv.DictWriter(f, CONTRACT_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerow(contract_row(row))
    assert f.getvalue().splitlines() == [
        "student,lesson,question,points,max_points,status,message",
        "ann,01_attention,softmax,0,2,failed,softmax: not done yet",
    ]


def test_a_grader_fault_is_flagged_not_spelled():
    from autograder.collect.submissions import Submission

    sub = Submission(student="ann", lesson="01_attention", path=None)
    g = grade.grader_fault(sub, MemoryError("worker died"))
    assert [r.fault for r in g.rows] == [True] and g.rows[0].status is Status.UNGRADABLE
    # a submission whose message happens to say the same words is not a fault
    assert not Row("ann", "01_attention", "", 0, 0, "ungradable", "grader fault: MemoryError").fault


def test_a_check_failure_carries_its_hint_through_rewording_and_translation():
    exc = _core.CheckFailure("softmax is wrong\n  got: 1\n  expected: 2\n  hint: subtract the max", hint=None)
    assert exc.hint == "subtract the max"
    explicit = _core.CheckFailure("text without the line", hint="the mask is ignored")
    assert explicit.hint == "the mask is ignored"
    longer = explicit.with_text(f"{explicit}\n  on input: a (2, 3) batch")
    assert type(longer) is _core.CheckFailure and longer.hint == "the mask is ignored"
    assert pickle.loads(pickle.dumps(exc)).hint == "subtract the max"

    @i18n.localized
    def judge():
        raise _core.NotDone("x: not done yet", hint="not done")

    with i18n.using("zh_CN"), pytest.raises(_core.NotDone) as info:
        judge()
    assert info.value.hint == "not done", f"got {info.value.hint!r} after translation, expected 'not done'"


def test_the_clis_one_line_errors_are_classes_not_names():
    for cls in (SchedulerLost, WorkerMismatch):
        assert issubclass(cls, GradingStopped)
    from autograder import distributed

    assert distributed.SchedulerLost is SchedulerLost and distributed.WorkerMismatch is WorkerMismatch
