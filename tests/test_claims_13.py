"""Do the claims of lesson 13's section 6 ("Trained") hold on seeds the notebook does not use?

The notebook trains its four runs from seed 0 and asserts its claims at its own length (300 steps;
under pytest the runs are cut to 40 steps and the claims are not asserted). Here the same code, taken
from the solution notebook (its setup and answer cells, then section 6's cells up to the one that
trains: tests/sweeps_13.py), trains the two MoE runs at 300 steps from seeds 1-8 (about 40 s of
one thread per seed) and asserts what the lesson asserts of expert usage. The 20-seed sweep behind
the numbers the lesson states is tests/sweeps_13.jsonl (seeds 0-19, all four runs).
"""

import pytest
from lesson_code import one_thread, one_thread_each_test

SEEDS = range(1, 9)
BAL_MIN, NOBAL_MAX = 0.0, 0.0  # the notebook's margins (section 6)
_one_thread = one_thread_each_test()


@pytest.fixture(scope="module")
def section():
    import sweeps_13

    with one_thread():
        return sweeps_13.trained_section(quick=False)


@pytest.fixture(scope="module")
def usage(section):
    """{seed: {run: (effective experts per layer at the end, history)}} for the two MoE runs."""
    out = {}
    for seed in SEEDS:
        out[seed] = {}
        for name in ("MoE", "MoE, no balancing loss"):
            ffn, balance, z = section["RUNS"][name]
            _, history = section["train_lm"](ffn, seed, balance, z)
            out[seed][name] = history
    return out


def worse_layer(history) -> float:
    """The effective experts, at the end, of the layer that uses fewer."""
    import math

    def eff(s):
        s = s[s > 0]
        return math.exp(-(s * s.log()).sum().item())

    return min(eff(s) for s in history[-1][1])


def test_with_the_balancing_loss_both_layers_use_nearly_all_experts(usage):
    """With the balancing loss, both layers end above BAL_MIN effective experts (of 8), seeds 1-8?"""
    got = {seed: round(worse_layer(runs["MoE"]), 2) for seed, runs in usage.items()}
    assert min(got.values()) > BAL_MIN, f"got {got}, expected every seed above {BAL_MIN}"


def test_without_it_the_router_stays_partly_collapsed(usage):
    """Without the balancing loss, one layer ends below NOBAL_MAX effective experts, seeds 1-8?"""
    got = {seed: round(worse_layer(runs["MoE, no balancing loss"]), 2) for seed, runs in usage.items()}
    assert max(got.values()) < NOBAL_MAX, f"got {got}, expected every seed below {NOBAL_MAX}"
