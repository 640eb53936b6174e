"""Do the checks pass every reference answer, name every classic mistake, and accept correct
answers written differently? (In-process: the same checks the notebooks' test cells call.)"""

import byhand as checks
import pytest
from byhand._core import CheckFailure, NotDone
from byhand.i18n import message_of
from tiers import HIDDEN_COSTS, tiered
from zh_messages import localization_problems, untranslated

from autograder.course import answer_namespace, lessons, questions
from examples import answers_for, catalogue, catalogued, feedback_problems

LESSONS = lessons()
DOCUMENTED = catalogue.documented_hints()
# lessons with a question whose hidden cases cost seconds for any answer (tests/tiers.py): their
# reference through every hidden case is `breadth` (`make test`); `make test-fast` runs the stand-in
COSTLY = sorted({lesson for lesson, _ in HIDDEN_COSTS})


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_graded_cell_has_a_question(lesson):
    """Does every graded test cell name a question its check module knows?"""
    module = checks.for_lesson(lesson)
    missing = set(questions(lesson)) - set(module.QUESTIONS)
    assert not missing, f"test cells with no check in {module.__name__}: {sorted(missing)}"


@pytest.mark.parametrize(
    "lesson",
    [pytest.param(lesson, marks=pytest.mark.breadth) if lesson in COSTLY else lesson for lesson in LESSONS],
)
def test_reference_answers_pass_every_check(lesson):
    """Do the solution notebook's own answers pass every case, hidden ones included?"""
    module = checks.for_lesson(lesson)
    ns = answer_namespace(lesson)
    for name in questions(lesson):
        module.check(name, ns, hidden=True)


@pytest.mark.fast  # only `make test-fast`: the gate runs the whole test above
@pytest.mark.parametrize("lesson", COSTLY)
def test_reference_answers_pass_every_check_the_costly_ones_visible(lesson):
    """The test above with only the visible cases of the questions whose hidden cases cost seconds
    (tests/tiers.py's `HIDDEN_COSTS`): every other question through its hidden cases too."""
    module = checks.for_lesson(lesson)
    ns = answer_namespace(lesson)
    for name in questions(lesson):
        module.check(name, ns, hidden=(lesson, name) not in HIDDEN_COSTS)


@pytest.mark.parametrize("lesson", LESSONS)
def test_blank_answers_say_not_done(lesson):
    """Does every self-check say plainly that a blank exercise is not done yet?"""
    module = checks.for_lesson(lesson)
    ns = answer_namespace(lesson)
    for name in questions(lesson):
        ns_blank = dict(ns)
        for needed in _graded_names(module, name):
            ns_blank[needed] = _stub
        with pytest.raises(NotDone, match="not done yet"):
            module.check(name, ns_blank)


def _stub(*args, **kwargs):
    raise NotImplementedError()


def _graded_names(module, name):
    return (name,) + tuple(module.QUESTIONS[name].needs)


# the cheapest mistake of each question in `make test-fast`, every one in `make test` (the others are
# marked `breadth`: tests/tiers.py)
@pytest.mark.parametrize("lesson,mistake", tiered("MISTAKES", hidden=True))
def test_classic_mistake_fails_with_its_hint(lesson, mistake):
    """Does the self-check fail on this classic mistake, with a hint that names it, in Chinese too?"""
    spec = answers_for(lesson).MISTAKES[mistake]
    ns = answer_namespace(lesson, spec["cells"])
    module = checks.for_lesson(lesson)
    with pytest.raises(CheckFailure) as info:
        module.check(spec["question"], ns, hidden=True)
    problems = feedback_problems(spec, str(info.value))
    assert not problems, f"the feedback {'; '.join(problems)}:\n{info.value}"
    built = message_of(info.value)  # the Msg the check built: its ids, not its English text
    assert untranslated(built) == [], "lines with no Chinese in byhand.po"
    assert localization_problems(built) == [], "its Chinese message"
    documented = DOCUMENTED.get((lesson, mistake))
    assert documented == catalogue.hint_of(str(info.value)), (
        f"docs/mistakes.md shows {documented!r} for this mistake, the check gives "
        f"{catalogue.hint_of(str(info.value))!r}: run `python -m autograder mistakes`"
    )
    words = (spec["hint"],) if isinstance(spec["hint"], str) else tuple(spec["hint"])
    wrong = [
        line.strip()
        for line in str(info.value).splitlines()
        if line.strip().startswith("also, on ") and not any(w in line for w in words)
    ]
    assert not wrong, f"a follow-up names a mistake the answer does not make: {wrong}"
    shown = info.value._render_traceback_()  # what IPython shows of it: the message, no frame
    assert len(shown) <= 12 and not any("byhand" + "/" in line for line in shown), "\n".join(shown)


@pytest.mark.parametrize("lesson,mistake", tiered("MISTAKES"))
def test_classic_mistake_fails_the_visible_check(lesson, mistake):
    """Does the visible self-check alone fail this classic mistake (so no student sees "all visible
    cases pass" and then loses the points at grading)?"""
    spec = answers_for(lesson).MISTAKES[mistake]
    ns = answer_namespace(lesson, spec["cells"])
    with pytest.raises(CheckFailure):
        checks.for_lesson(lesson).check(spec["question"], ns)


@pytest.mark.breadth  # every check of the lesson again, for each alternative: `make test` runs them
@pytest.mark.parametrize("lesson,alternative", catalogued("ALTERNATIVES"))
def test_correct_alternative_passes(lesson, alternative):
    """Does a correct answer written another way pass every check?"""
    cells = answers_for(lesson).ALTERNATIVES[alternative]
    ns = answer_namespace(lesson, cells)
    module = checks.for_lesson(lesson)
    for name in questions(lesson):
        module.check(name, ns, hidden=True)
