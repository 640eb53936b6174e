"""One mistake costs one question: a check that runs an earlier exercise's answer runs the
reference of it in its place when the student's fails its own check.

Declared per question, as data in the question's module (the module of its judge):

* `EARLIER = ("CausalSelfAttention",)`: the earlier answers this question's check runs (the cases
  look them up, or the student's code calls them by name). Each one that fails its own check (hidden
  cases included) is replaced, while this question's cases run, by its `REFERENCE`, and the check
  says so in one line (`note`).
* `BUILDS_ON = ("flash_attention_forward",)`: earlier answers the question exists to test together
  with its own (an integration question, or one about the earlier answer itself): the student's are
  kept, and the lesson says before the exercise which earlier answers it builds on.
* `REFERENCE`: in an earlier question's module, the reference answer (a class or a function, what
  its answer cell defines), put in place of the student's.
* `ALSO_REPLACED = {"pretoken_counts": ...}`: beside `REFERENCE`, the other names the earlier
  answer's cell defines (a helper whose API the exercise states) that later answers may call,
  replaced together with it.

The replacement is a name of the student's namespace (the notebook's globals) bound to the reference
for the time the cases run, then restored: the steps look it up there, and so does the student's own
code (a `GPT` that builds `CausalSelfAttention(...)` gets the reference one). The self-check in the
notebook and the grader's probe both run cases through `_core.run_case`, so both replace the same
names and judge the same results; the grader says the same line from its own verdicts
(autograder/judge/grade.py).

Whether an earlier answer passes is decided once per object: the verdict is kept with the objects
its check looks up (the answer and what it builds on), so a run of a lesson computes it once per
definition, and a redefined answer is judged again. At grading the earlier question's results are
the ones its own test cell recorded, so the verdict costs a judge and no call of the student's code.
"""

from __future__ import annotations

import contextlib
import json
import sys

from . import i18n
from .i18n import N_, msg

# the one line (its Chinese is in locale/zh_CN/LC_MESSAGES/byhand.po)
REPLACED_ONE = N_("checked with the reference `{name}`, since yours fails its own check")
REPLACED_MANY = N_("checked with the reference {names}, since yours fail their own checks")


def _module_of(question):
    return sys.modules.get(getattr(question.judge, "__module__", ""), None)


def earlier(question) -> tuple:
    """The earlier answers `question`'s check runs with the reference in place when they fail."""
    return tuple(getattr(_module_of(question), "EARLIER", ()))


def builds_on(question) -> tuple:
    """The earlier answers `question` is checked with as they are (an integration question)."""
    return tuple(getattr(_module_of(question), "BUILDS_ON", ()))


def reference(question):
    """The reference answer of `question` (None when its module offers none)."""
    return getattr(_module_of(question), "REFERENCE", None)


def _questions() -> dict:
    """Every question of the lessons whose checks are imported, by name (names are unique)."""
    from . import LESSONS

    found = {}
    for topic in LESSONS.values():
        module = sys.modules.get(f"{__package__}.{topic}")
        found.update(getattr(module, "QUESTIONS", {}) or {})
    return found


def _looked_up(questions: dict, name: str) -> list:
    """The names whose objects `name`'s verdict depends on: its own and, through `needs`, `EARLIER`
    and `BUILDS_ON`, those of what it builds on."""
    seen, todo = [], [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.append(n)
        q = questions.get(n)
        if q is not None:
            todo += [*q.needs, *earlier(q), *builds_on(q)]
    return sorted(seen)


# name -> [(the objects its check looks up, passes)], newest last; the objects are held, so an id
# is never reused by another object while its verdict is kept
_VERDICTS: dict = {}
_KEPT = 8
_BUSY: set = set()  # verdicts being computed (a declared cycle would otherwise never end)


def keeps(name: str, earlier: str, questions: dict) -> bool:
    """Does question `name` run the student's own `earlier` answer on purpose (through its
    `BUILDS_ON`, and what those need), so that a mistake in `earlier` may cost it too?"""
    todo, seen = list(builds_on(questions[name])), set()
    while todo:
        n = todo.pop()
        if n == earlier:
            return True
        if n not in seen and n in questions:
            seen.add(n)
            todo += list(questions[n].needs)
    return False


def passes(name: str, namespace: dict, questions: dict | None = None) -> bool:
    """Does the student's answer `name` pass its own check, hidden cases included (with its own
    earlier answers replaced where they fail)? Once per set of objects its check looks up."""
    from . import _core

    questions = _questions() if questions is None else questions
    question = questions.get(name)
    if question is None:
        return True  # a question of no lesson imported here: nothing to judge it by
    objects = tuple(namespace.get(n) for n in _looked_up(questions, name))
    for kept, verdict in _VERDICTS.get(name, ()):
        if len(kept) == len(objects) and all(a is b for a, b in zip(kept, objects)):
            return verdict
    if name in _BUSY:
        return True
    _BUSY.add(name)
    try:
        # case by case, stopping at the first failure: only whether it passes is wanted here, not
        # the later cases' "also, on ..." lines (judge_all), each of which may simulate mistakes
        with i18n.using(i18n.DEFAULT):
            for case in _core.ordered_cases(question, hidden=True):
                result = json.loads(_core.run_case(name, case.wire(), namespace, reuse=True))
                _core.judge_result(question, case, result)
        verdict = True
    except Exception:  # noqa: BLE001 - a failure, a stub, an error: it does not pass
        verdict = False
    finally:
        _BUSY.discard(name)
    kept = _VERDICTS.setdefault(name, [])
    kept.append((objects, verdict))
    del kept[:-_KEPT]
    return verdict


def replaced(name: str, namespace: dict | None, questions: dict | None = None, passed=None) -> list:
    """The earlier answers `name`'s cases run with the reference in place of the student's: each of
    its `EARLIER` that fails its own check and has a reference, and, through those that pass, theirs.
    In lesson order. `passed(n)`: whether `n` passes, when known otherwise (the grader's verdicts);
    by default `passes(n, namespace)`."""
    questions = _questions() if questions is None else questions
    if passed is None:

        def passed(n):
            return passes(n, namespace, questions)

    question = questions.get(name)
    if question is None:
        return []
    out, todo, seen = [], list(earlier(question)), {name}
    while todo:
        n = todo.pop(0)
        if n in seen or n not in questions:
            continue
        seen.add(n)
        if reference(questions[n]) is not None and not passed(n):
            out.append(n)
        else:  # the student's is used: what it runs of the earlier ones is replaced as well
            todo += list(earlier(questions[n]))
    order = list(questions)
    return sorted(out, key=order.index)


@contextlib.contextmanager
def in_place(name: str, namespace: dict):
    """While the cases of question `name` run: each earlier answer of `replaced(...)` bound to its
    reference in `namespace`, and bound back afterwards. Yields the names replaced."""
    questions = _questions()
    names = replaced(name, namespace, questions) if name in questions else []
    bound = {}
    for n in names:
        bound.update(also(questions[n]))
        bound[n] = reference(questions[n])
    saved = {n: namespace[n] for n in bound if n in namespace}
    try:
        namespace.update(bound)
        yield names
    finally:
        for n in bound:
            if n in saved:
                namespace[n] = saved[n]
            else:
                namespace.pop(n, None)


def also(question) -> dict:
    """The other names of `question`'s answer cell replaced with its reference ({name: reference})."""
    return dict(getattr(_module_of(question), "ALSO_REPLACED", {}) or {})


def note(names) -> i18n.Msg | str:
    """The one line that says which earlier answers a check ran with the reference ("" for none)."""
    names = list(names)
    if not names:
        return ""
    if len(names) == 1:
        return msg(REPLACED_ONE, name=names[0])
    return msg(REPLACED_MANY, names=i18n.join(N_(", "), [f"`{n}`" for n in names]))
