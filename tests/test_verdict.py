"""Does the grader's trusted verdict decide from the raw results alone, and name what it decided?"""

import json

import byhand as checks
import pytest
from byhand._core import run_steps
from tiers import tiered

from autograder import course
from autograder.judge import grade
from examples import answers_for, feedback_problems

LESSON, QUESTION = "01_attention", "scaled_dot_product_attention"


@pytest.fixture(scope="module")
def setting():
    module = checks.for_lesson(LESSON)
    cases = grade._question_cases(LESSON)[QUESTION]
    return module, cases


def _probe(cases, namespace):
    """What the kernel would send back: each case's steps run against `namespace`, through JSON."""
    return [json.loads(json.dumps(run_steps(c.steps, c.outputs, namespace))) for c in cases]


def test_reference_answer_passes(setting):
    """Do the solution's own answers get a `passed` verdict with no message?"""
    module, cases = setting
    assert grade.verdict(QUESTION, cases, _probe(cases, course.answer_namespace(LESSON)), "", module) == (
        "passed",
        "",
        "",
    )


def test_a_classic_mistake_fails_with_its_hint(setting):
    """Is a catalogued mistake `failed`, with the hint field holding the hint text, not the whole message?"""
    module, cases = setting
    spec = answers_for(LESSON).MISTAKES["no_scaling"]
    status, message, hint = grade.verdict(
        QUESTION, cases, _probe(cases, course.answer_namespace(LESSON, spec["cells"])), "", module
    )
    assert status == "failed" and spec["hint"] in message and spec["hint"] in hint
    assert "\n" not in hint and len(hint) < len(message)


def test_blank_answer_is_not_done(setting):
    """Does a stub that raises NotImplementedError read as `not done`?"""
    module, cases = setting
    probe = [{"error": "NotImplementedError", "not_implemented": True, "step": 0}] * len(cases)
    status, message, hint = grade.verdict(QUESTION, cases, probe, "", module)
    assert (status, hint) == ("failed", "not done") and "not done yet" in message


@pytest.mark.parametrize("forged", [None, "passed", [], {"outputs": {"out": {"__tensor__": "float32"}}}])
def test_malformed_results_are_errors_never_passes(setting, forged):
    """Can a kernel that sends back garbage (or the word "passed") get anything but an error?"""
    module, cases = setting
    status, _, _ = grade.verdict(QUESTION, cases, [forged] * len(cases), "", module)
    assert status in ("error", "failed")


def test_too_few_results_do_not_pass(setting):
    """Does a probe that answers only the first case fail to pass the question?"""
    module, cases = setting
    probe = _probe(cases[:1], course.answer_namespace(LESSON))
    status, _, _ = grade.verdict(QUESTION, cases, probe, "", module)
    assert status != "passed"


def test_a_probe_error_is_reported_as_such(setting):
    """Is a probe that could not run (the kernel died) an `error` carrying the probe's message?"""
    module, cases = setting
    assert grade.verdict(QUESTION, cases, [], "the kernel died", module) == ("error", "the kernel died", "")


# ---------------------------------------------------------------------------------------------
# the whole catalogue through the grader's own path, without a kernel: every case's steps run on
# the answer (run_steps, as the probe does), the results through JSON, the trusted verdict on them.
# tests/test_grading.py grades, in sandboxed kernels, the alternatives that print, warn or write to
# stderr (make test), and the first mistake of each question and every alternative (make test-full).
# `make test-fast` takes one mistake of each lesson, `make test` every one (tests/tiers.py).


@pytest.mark.parametrize("lesson,name", tiered("MISTAKES", first_of="lesson", hidden=True))
def test_every_catalogued_mistake_fails_its_verdict_with_its_hint(lesson, name):
    """Does the grader's verdict on this mistake's results fail its question and name the mistake?"""
    spec = answers_for(lesson).MISTAKES[name]
    question, module = spec["question"], checks.for_lesson(lesson)
    cases = grade._question_cases(lesson)[question]
    probe = _probe(cases, course.answer_namespace(lesson, spec["cells"]))
    status, message, _ = grade.verdict(question, cases, probe, "", module)
    assert status != "passed", f"{name}: got a pass, expected a failure naming {spec['hint']!r}"
    problems = feedback_problems(spec, message)
    assert not problems, f"the verdict's message {'; '.join(problems)}: {message}"
