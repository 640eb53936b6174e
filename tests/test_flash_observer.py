"""Lesson 10's observer: what it sees, and what a verdict takes from the kernel's report.

The memory and FLOP facts are counted where the answer runs; these tests check that the grader's
judge decides from them with its own budgets, that an answer the observer cannot see fails instead
of passing unobserved, and that a forged report cannot make wrong outputs pass."""

import json

import pytest
from byhand import _core
from byhand import flash_attention as fa

from autograder.course import answer_namespace

LESSON = "10_flash_attention"

NUMPY_FORWARD = """
def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64):
    import numpy as np
    qn, kn, vn = q.numpy(), k.numpy(), v.numpy()
    s = qn @ np.swapaxes(kn, -1, -2) / np.sqrt(qn.shape[-1])
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    return torch.from_numpy((p / l) @ vn), torch.from_numpy((m + np.log(l))[..., 0])
"""


@pytest.fixture(scope="module")
def reference():
    return answer_namespace(LESSON)


@pytest.fixture(scope="module")
def visible(reference):
    """The reference's results on the forward's visible cases, run once for the tests that forge
    them (each builds its own forged copy; about 0.6 s of CPU a run)."""
    return _results("flash_attention_forward", reference, hidden=False)


def _results(question, namespace, hidden=True):
    cases = _core.ordered_cases(fa.QUESTIONS[question], hidden)
    return [(c, json.loads(json.dumps(_core.run_steps(c.steps, c.outputs, namespace)))) for c in cases]


def test_an_answer_the_observer_cannot_see_fails():
    """numpy computes the L x L matrix out of torch's sight: right numbers, no matmul seen -> fails."""
    ns = answer_namespace(LESSON, {"flash_attention_forward_answer": NUMPY_FORWARD})
    with pytest.raises(_core.CheckFailure, match="did not see the matrix multiplications"):
        _core.judge_all(fa.QUESTIONS["flash_attention_forward"], _results("flash_attention_forward", ns))


def test_the_report_decides_only_with_the_graders_budget(visible):
    """The reference's own results, with the largest tensor forged to (Lq, Lk) per head: fails, named."""
    case, result = visible[-1]
    r = _core.decode(result["outputs"]["r"])
    f = case.facts
    shape = [f["heads"], f["lq"], f["lk"]]
    forged = (r[0], [f["heads"] * f["lq"] * f["lk"], shape, "bmm", "float32"], r[2], r[3])
    result = {"outputs": {**result["outputs"], "r": _core.encode(forged)}}
    with pytest.raises(_core.CheckFailure, match="whole score"):
        _core.judge_result(fa.QUESTIONS["flash_attention_forward"], case, result)


def test_a_forged_small_report_does_not_make_wrong_outputs_pass(visible):
    """Outputs replaced by zeros with a perfect report: the outputs are judged first, and fail."""
    import torch

    case, result = visible[0]
    (o, lse), largest, flops, ops = _core.decode(result["outputs"]["r"])
    forged = ((torch.zeros_like(o), torch.zeros_like(lse)), [1, [1], "empty", "float32"], flops, ops)
    result = {"outputs": {**result["outputs"], "r": _core.encode(forged)}}
    with pytest.raises(_core.CheckFailure, match="is not what it should be"):
        _core.judge_result(fa.QUESTIONS["flash_attention_forward"], case, result)


@pytest.mark.parametrize("report", [None, "text", [1, 2], [10**12, [1], "x", "float32", 5]])
def test_a_malformed_report_never_passes(visible, report):
    """A report of the wrong form (missing, a string, too short, too long) fails, never passes."""
    case, result = visible[0]
    r = _core.decode(result["outputs"]["r"])
    forged = (r[0], report, r[2], r[3])
    result = {"outputs": {**result["outputs"], "r": _core.encode(forged)}}
    with pytest.raises(_core.CheckFailure):
        _core.judge_result(fa.QUESTIONS["flash_attention_forward"], case, result)


@pytest.mark.parametrize("is_causal", [False, True])
def test_the_observers_flops_are_flop_counter_modes(reference, is_causal):
    """The check's own matmul count equals torch.utils.flop_counter.FlopCounterMode's, forward and backward."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    g = torch.Generator().manual_seed(7)
    q, k, v, do = (torch.randn(2, 3, 50, 8, generator=g) for _ in range(4))
    o, lse = fa.ref_forward(q, k, v, is_causal)
    calls = [
        (reference["flash_attention_forward"], (q, k, v, is_causal, 16, 12)),
        (reference["flash_attention_backward"], (q, k, v, o.float(), lse.float(), do, is_causal, 16, 12)),
        (reference["attention"], (q, k, v, is_causal)),
    ]
    for fn, args in calls:
        with FlopCounterMode(display=False) as counter:
            fn(*args)
        assert fa.observe(fn, *args)[2] == counter.get_total_flops() > 0, fn.__name__
