"""Do the checks work on the device the student's tensors and modules live on?

The contract: every graded function works on the device its inputs live on. A self-check with
`device="cuda"` builds its inputs there and moves the modules it creates there; a module is always
called with its inputs on the device of its own parameters. Results come back through the wire and
are judged on the CPU. The CUDA run needs a GPU: without one it is skipped, and says why.
"""

import byhand
import pytest
import torch
from byhand._core import call, let, new, ordered_cases, ref, run_steps
from shared_class import EXPENSIVE

from autograder.course import answer_namespace, lessons, questions

# "meta" is a second device every torch has: tensors with a shape and a device, and no data.
OTHER = torch.device("meta")
# questions whose computation reads its tensors' values to decide shapes, which meta tensors do not
# have: a run there stops at that op (NotImplementedError); what runs before it is still checked
# here, and all of it on a GPU (test_reference_answers_pass_every_check_on_cuda)
READS_VALUES = {
    ("13_mixture_of_experts", "moe_forward"): "dispatch splits the tokens by the counts per expert",
    ("13_mixture_of_experts", "load_balancing_loss"): "f counts the tokens routed to each expert",
}


def test_inputs_are_built_on_the_requested_device():
    """With device=..., does a graded function receive its inputs on that device?"""
    seen = []

    def f(x, pair):
        seen.extend([x.device, pair[0].device])
        return 1

    steps = [let("x", torch.ones(3)), call("y", "f", ref("x"), (torch.ones(2), torch.zeros(2)))]
    result = run_steps(steps, ["y"], {"f": f}, device=OTHER)
    assert result == {"outputs": {"y": 1}}, result
    assert seen == [OTHER, OTHER], f"got devices {seen}, expected {OTHER} for both inputs"


def test_a_module_gets_its_inputs_on_its_own_device():
    """Is a student's module that lives on another device called with its inputs there, and does a
    module the check creates move to the requested device?"""
    seen = []

    class Probe(torch.nn.Module):
        def __init__(self, where=None):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2, device=where))

        def forward(self, x):
            seen.append((self.w.device, x.device))
            return 0

    steps = [let("x", torch.ones(3)), new("m", "Probe", "meta"), call("y", ref("m"), ref("x"))]
    assert "error" not in run_steps(steps, ["y"], {"Probe": Probe})
    assert seen == [(OTHER, OTHER)], f"got (module, input) devices {seen}, expected both {OTHER}"
    seen.clear()
    steps = [let("x", torch.ones(3)), new("m", "Probe"), call("y", ref("m"), ref("x"))]
    assert "error" not in run_steps(steps, ["y"], {"Probe": Probe}, device=OTHER)
    assert seen == [(OTHER, OTHER)], f"got (module, input) devices {seen}, expected both {OTHER}"


def _no_cuda_reason() -> str:
    if torch.version.cuda is None:
        return f"no CUDA here: torch {torch.__version__} is a CPU build"
    return "no CUDA device visible to torch"


@pytest.mark.parametrize("lesson", lessons())
def test_reference_answers_pass_every_check_on_cuda(lesson):
    """On a GPU: do the lesson's reference answers pass every check, hidden cases included, with
    every input on the GPU?"""
    if not torch.cuda.is_available():
        pytest.skip(_no_cuda_reason())
    module = byhand.for_lesson(lesson)
    ns = answer_namespace(lesson)
    for name in questions(lesson):
        module.check(name, ns, hidden=True, device="cuda")


# every hidden case again (test_lessons.py runs them on the CPU in make test-fast); the lessons whose
# checks train or time a model (10-20 s each here) in make test-full
@pytest.mark.slow
@pytest.mark.parametrize(
    "lesson", [pytest.param(les, marks=pytest.mark.full if les in EXPENSIVE else ()) for les in lessons()]
)
def test_reference_answers_run_on_another_device(lesson):
    """On any machine: does every case's code (the reference answers, the modules the checks build)
    run with all its inputs on another device, "meta"? A tensor made on the CPU and mixed with
    them (`torch.arange(n)` without `device=`) fails there as it would on a GPU. Meta tensors have
    no data, so only the running is checked here, not the numbers."""
    module = byhand.for_lesson(lesson)
    ns = answer_namespace(lesson)
    for name in questions(lesson):
        for case in ordered_cases(module.QUESTIONS[name], hidden=True):
            result = run_steps(case.steps, [], ns, device=OTHER)
            if (lesson, name) in READS_VALUES and result.get("not_implemented"):
                continue
            assert "error" not in result, f"{name} on {OTHER}: {result['error']}\n  on input: {case.label}"
