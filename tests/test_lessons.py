"""Do the checks pass every reference answer, name every classic mistake, and accept correct
answers written differently? (In-process: the same checks the notebooks' test cells call.)"""

import contextlib
import io

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


# one mistake of each lesson in `make test-fast` (the cheapest, tests/tiers.py), every one in `make test`
# (the others are marked `breadth`)
@pytest.mark.parametrize("lesson,mistake", tiered("MISTAKES", first_of="lesson", hidden=True))
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


# one mistake of each lesson in `make test-fast`, every one in `make test`
@pytest.mark.parametrize("lesson,mistake", tiered("MISTAKES", first_of="lesson"))
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


# ---------------------------------------------------------------------------------------------
# One mistake costs one question (issue 51): a later check that runs an earlier answer runs the
# reference in its place when the student's fails its own check (byhand._depends)


def _reaches(module, name) -> dict:
    """question -> the earlier questions its check runs (needs, EARLIER, BUILDS_ON), transitively."""
    from byhand import _depends

    direct = {
        q: {
            *module.QUESTIONS[q].needs,
            *_depends.earlier(module.QUESTIONS[q]),
            *_depends.builds_on(module.QUESTIONS[q]),
        }
        for q in module.QUESTIONS
    }
    out = {}
    for q in module.QUESTIONS:
        seen, todo = set(), list(direct[q])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += list(direct.get(n, ()))
        out[q] = seen
    return out


def _lost_elsewhere(lesson, mistake, every: bool) -> dict:
    """The questions other than its own that the catalogued `mistake` fails (with the message): those
    whose check runs its question (`every`: every question of the lesson), less the ones that keep it."""
    spec = answers_for(lesson).MISTAKES[mistake]
    module, own = checks.for_lesson(lesson), spec["question"]
    reaches = _reaches(module, own)
    ns = answer_namespace(lesson, spec["cells"])
    lost = {}
    from byhand import _depends

    for name in questions(lesson):
        if (
            name == own
            or _depends.keeps(name, own, module.QUESTIONS)
            or not (every or own in reaches.get(name, ()))
        ):
            continue
        try:
            module.check(name, ns, hidden=True)
        except CheckFailure as exc:
            lost[name] = str(exc)
    return lost


# one mistake of each lesson in `make test-fast` (and issue 51's example below), every one in `make test`
@pytest.mark.parametrize("lesson,mistake", tiered("MISTAKES", first_of="lesson"))
def test_classic_mistake_costs_its_own_question_only(lesson, mistake):
    """Does every later question whose check runs this mistaken answer pass (with the reference in
    its place), unless it builds on the student's answer on purpose?"""
    lost = _lost_elsewhere(lesson, mistake, every=False)
    assert not lost, f"{mistake} also lost: {lost}"


@pytest.mark.breadth  # every question of the lesson for each mistake: `make test` runs it
@pytest.mark.parametrize("lesson,mistake", catalogued("MISTAKES"))
def test_classic_mistake_costs_no_other_question(lesson, mistake):
    """Does every other question of the lesson pass on this mistake (the ones that build on it on
    purpose aside)?"""
    lost = _lost_elsewhere(lesson, mistake, every=True)
    assert not lost, f"{mistake} also lost: {lost}"


def test_the_view_without_transpose_costs_only_its_question():
    """Issue 51's example: heads split by a view without the transpose lose CausalSelfAttention
    only, and GPT, GPT_init and generate say they ran with the reference."""
    lesson = "07_decoder"
    spec = answers_for(lesson).MISTAKES["heads_split_by_view_without_the_transpose"]
    module, ns = checks.for_lesson(lesson), answer_namespace(lesson, spec["cells"])
    theirs = ns["CausalSelfAttention"]
    with pytest.raises(CheckFailure):
        module.check("CausalSelfAttention", ns, hidden=True)
    for name in ("GPT", "GPT_init", "generate"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            module.check(name, ns, hidden=True)
        line = "checked with the reference `CausalSelfAttention`, since yours fails its own check"
        assert line in out.getvalue(), f"{name}: got {out.getvalue()!r}, expected the line {line!r}"
        assert ns["CausalSelfAttention"] is theirs, "the student's class is not bound back after the check"
    ok = answer_namespace(lesson)  # a passing answer: its own is used, and no line
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        module.check("GPT", ok, hidden=True)
    assert "checked with the reference" not in out.getvalue()


def test_a_point_for_speed_needs_right_merges():
    """Issue 51, item 2: train_bpe_speed's point goes to a right train_bpe only. Every catalogued
    mistake of the fast trainer (fast, wrong merges) loses it at its visible check, which says why
    first; a trainer right on train_bpe's own cases but wrong on the timed text loses it too."""
    from byhand.tokenizer.train_bpe_speed import H_RIGHT_FIRST

    lesson = "11_tokenizer"
    module, answers = checks.for_lesson(lesson), answers_for(lesson)
    fast = [name for name, spec in answers.MISTAKES.items() if spec["question"] == "train_bpe"]
    assert len(fast) >= 2, "the catalogue has lost its fast trainers' mistakes"
    for name in fast:
        with pytest.raises(CheckFailure) as info:
            module.check("train_bpe_speed", answer_namespace(lesson, answers.MISTAKES[name]["cells"]))
        # one that raises on train_bpe's own cases loses it there, the error and its line shown
        raised = str(info.value).startswith("train_bpe_speed raised ")
        assert raised or str(info.value).startswith(str(H_RIGHT_FIRST)), f"{name}: {info.value}"
    loop = "    while len(vocab) < vocab_size and counts:"
    early = answers.REF[answers.FAST].replace(
        loop, loop.replace("vocab_size", "vocab_size - (len(text) > 50_000)")
    )
    assert early != answers.REF[answers.FAST]
    ns = answer_namespace(lesson, {answers.FAST: early})
    module.check("train_bpe", ns, hidden=True)  # right on every case of its own check
    with pytest.raises(CheckFailure, match="119 merges where 120 were expected"):
        module.check("train_bpe_speed", ns)


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_reference_answer_passes_its_own_check(lesson):
    """Does each answer a later check may put in place of a failing one (a question module's
    `REFERENCE`) pass its own question's check, hidden cases included? And does every name a
    question declares in EARLIER have one?"""
    from byhand import _depends

    module = checks.for_lesson(lesson)
    ns = answer_namespace(lesson)
    checked = set()  # a module that judges two questions alike (lesson 11's trainers) has one REFERENCE
    for name, question in module.QUESTIONS.items():
        reference = _depends.reference(question)
        if reference is not None and reference not in checked:
            checked.add(reference)
            module.check(name, {**ns, name: reference}, hidden=True)
        for earlier in _depends.earlier(question):
            assert _depends.reference(module.QUESTIONS[earlier]) is not None, (
                f"{name}: {earlier} has no REFERENCE"
            )


def test_replaced_answers_follow_the_declarations():
    """Which earlier answers a question's check replaces, given which fail (the grader's rule, from
    its own verdicts): each failing one of EARLIER, and through a passing one, what that one runs."""
    from byhand import _depends

    qs = checks.for_lesson("07_decoder").QUESTIONS

    def replaced(name, failing):
        return _depends.replaced(name, None, qs, passed=lambda n: n not in failing)

    assert replaced("GPT", {"CausalSelfAttention"}) == ["CausalSelfAttention"]
    assert replaced("generate", {"CausalSelfAttention"}) == ["CausalSelfAttention"]  # through the GPT
    assert replaced("generate", {"GPT", "CausalSelfAttention"}) == ["GPT"]  # the reference GPT has its own
    assert replaced("generate", {"sample_next", "GPT"}) == ["GPT", "sample_next"]
    assert replaced("GPT_init", {"GPT"}) == []  # it builds on the student's GPT (BUILDS_ON)
    assert replaced("GPT", set()) == [] and replaced("CausalSelfAttention", {"GPT"}) == []
    line = _depends.note(["GPT", "sample_next"])
    assert str(line) == "checked with the reference `GPT`, `sample_next`, since yours fail their own checks"
