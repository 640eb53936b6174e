"""Do the claims that lessons 04_pre_post_ln and 05_init assert hold on seeds the notebooks do not use?

The notebooks assert their claims on their own seeds (and nbval re-runs them). Here the same
experiment code, taken from the solution notebooks' demo cells (their function and class
definitions only), runs on fresh seeds with the reference answers, with the notebooks' margins.
"""

import ast
import math

import pytest
import torch

from autograder.course import answer_namespace, read_solution, tags


def _definitions(lesson: str) -> dict:
    """The lesson's reference answers plus the functions, classes and constants of its demo cells."""
    ns = answer_namespace(lesson)
    for cell in read_solution(lesson).cells:
        if cell.cell_type != "code" or "demo" not in tags(cell):
            continue
        tree = ast.parse(cell.source)
        keep = [
            node
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
            or (
                isinstance(node, ast.Assign)
                and all(
                    isinstance(n, ast.Constant)
                    for n in ast.walk(node.value)
                    if not isinstance(n, (ast.Tuple, ast.Load))
                )
            )
        ]
        exec(compile(ast.Module(body=keep, type_ignores=[]), f"<{lesson} demo>", "exec"), ns)
    return ns


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def lesson04():
    return _definitions("04_pre_post_ln")


@pytest.fixture(scope="module")
def lesson05():
    return _definitions("05_init")


def test_toy_stack_leans_opposite_ways(lesson04):
    """Toy stack (depth 48): Pre-LN last/first < 0.5, Post-LN > 1, Post/Pre > 2.5, seeds 100-119?"""
    for seed in range(100, 120):
        g_pre, g_post = lesson04["toy_grads"](seed)
        r_pre, r_post = (g_pre[-1] / g_pre[0]).item(), (g_post[-1] / g_post[0]).item()
        assert r_pre < 0.5 and r_post > 1.0 and r_post / r_pre > 2.5, (seed, r_pre, r_post)


def test_encoder_per_layer_and_theorem_1(lesson04):
    """Real encoder at init: per-layer ratios and Theorem 1's slopes on seeds 50-52?"""
    grads = lesson04["ffn_grad_norms"]
    for seed in range(50, 53):
        r = {pre: (lambda g: (g[-1] / g[0]).item())(grads(6, pre, seed)) for pre in (False, True)}
        assert r[True] < 0.7 and r[False] > 0.75 and r[False] / r[True] > 1.5, (seed, r)
        slope = {}
        for pre in (False, True):
            last = [grads(L, pre, seed)[-1].item() for L in (6, 12, 24)]
            lx = [math.log(L) for L in (6, 12, 24)]
            ly = [math.log(v) for v in last]
            mx, my = sum(lx) / 3, sum(ly) / 3
            slope[pre] = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
        assert -0.75 < slope[True] < -0.25 and -0.2 < slope[False] < 0.6, (seed, slope)
        assert slope[False] - slope[True] > 0.3, (seed, slope)


def test_activation_std_through_50_relu_layers(lesson05):
    """Kaiming keeps the std, Xavier divides it by sqrt(2) per layer, N(0, 0.01^2) by 1/0.16, seeds 30-31?"""
    for seed in (30, 31):
        stds = {s: lesson05["activation_stds"](s, seed)[None] for s in ("kaiming", "xavier", "small")}
        f = {s: lesson05["per_layer_factor"](v).item() for s, v in stds.items()}
        assert (
            abs(f["kaiming"] - 1) < 0.03
            and abs(f["xavier"] - 2**-0.5) < 0.02
            and abs(f["small"] - 0.16) < 0.01
        ), f
        assert (
            0.1 < stds["kaiming"][0, -1] < 10
            and 1e-9 < stds["xavier"][0, -1] < 1e-6
            and stds["small"][0, -1] < 1e-35
        )


def test_gpt2_residual_scaling(lesson05):
    """Residual stream std(N=64)/std(N=4): > 3 unscaled, within (0.85, 1.2) with 1/sqrt(2N), seeds 30-31?"""
    final_std = lesson05["final_std"]
    for seed in (30, 31):
        unscaled = final_std(64, False, seed) / final_std(4, False, seed)
        scaled = final_std(64, True, seed) / final_std(4, True, seed)
        assert unscaled > 3.0 and 0.85 < scaled < 1.2, (seed, unscaled, scaled)
