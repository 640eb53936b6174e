"""Do the claims that lessons 04_pre_post_ln and 05_init assert hold on seeds the notebooks do not use?

The notebooks assert their claims on their own seeds (and nbval re-runs them). Here the same
experiment code, taken from the solution notebooks' demo cells (their function and class
definitions only), runs on fresh seeds with the reference answers, with the notebooks' margins.
"""

import ast
import math

import pytest
import torch
from lesson_code import lesson_fixture, one_thread_each_test


def _arithmetic_on_literals(node) -> bool:
    """A constant of the demo cells: arithmetic on literals included."""
    skip = (ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp, ast.operator, ast.Load)
    return all(isinstance(n, ast.Constant) for n in ast.walk(node.value) if not isinstance(n, skip))


# the lessons' reference answers plus the functions, classes and constants of their demo cells
lesson04 = lesson_fixture("lesson04", "04_pre_post_ln", assigns=_arithmetic_on_literals, only_demo=True)
lesson05 = lesson_fixture("lesson05", "05_init", assigns=_arithmetic_on_literals, only_demo=True)
_one_thread = one_thread_each_test()


TEST_SEEDS = range(100, 120)


@pytest.fixture(scope="module")
def traced04(lesson04):
    """The toy stack traced under the three losses on fresh seeds; the notebook's helpers that read
    the global `traced` see this one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    lesson04["traced"] = {
        (loss, pre_ln): [lesson04["traced_grads"](s, pre_ln, loss) for s in TEST_SEEDS]
        for loss in lesson04["LOSSES"]
        for pre_ln in (True, False)
    }
    torch.set_num_threads(before)
    return lesson04


def test_traced_grads_are_block_grad_norms(traced04):
    """Does traced_grads under the square loss give exactly the weights' gradients of toy_grads?"""
    g_pre, g_post = traced04["toy_grads"](TEST_SEEDS[0])
    assert torch.allclose(traced04["traced"]["square", True][0]["weight"], g_pre)
    assert torch.allclose(traced04["traced"]["square", False][0]["weight"], g_post)


def test_toy_stack_leans_opposite_ways_under_the_square_loss(lesson04):
    """Square loss, depth 48, width 64, seeds 200-439 (240): Pre-LN last/first < 0.55 on every seed;
    Post-LN median > 1.5, > 0.9 on every seed, below 1 on at most 2 (the lesson: 239 of 240 above 1,
    seed 213 at 0.948); Post/Pre > 2 on every seed?"""
    pre, post = [], []
    for seed in range(200, 440):
        g_pre, g_post = lesson04["toy_grads"](seed)
        pre.append((g_pre[-1] / g_pre[0]).item())
        post.append((g_post[-1] / g_post[0]).item())
    pre, post = torch.tensor(pre), torch.tensor(post)
    assert (pre < 0.55).all() and (post / pre > 2.0).all(), (pre.max(), (post / pre).min())
    assert post.median() > 1.5 and (post > 0.9).all() and (post < 1).sum() <= 2, (post.median(), post.min())


def test_every_loss_pre_falls_and_post_leans_more(traced04):
    """Every loss, seeds 100-119, depth 48, width 64: Pre-LN last/first < 0.55 and Post/Pre > 1.3;
    cross-entropy and linear: Post-LN about flat (median in (0.7, 1.3), below 1 on 3 to 17 of 20)?"""
    for loss in traced04["LOSSES"]:
        pre, post = traced04["last_first"](loss, True), traced04["last_first"](loss, False)
        assert (pre < 0.55).all() and (post / pre > 1.3).all(), (loss, pre, post)
        if loss != "square":
            assert 0.7 < post.median() < 1.3 and 3 <= (post < 1).sum() <= 17, (loss, post)


SWEEP_SEEDS = range(300, 320)
WIDTHS, DEPTHS = (16, 32, 64, 128), (12, 24, 48)
SWEEP_LOSSES = ("square", "cross-entropy", "linear", "regression")


@pytest.fixture(scope="module")
def sweep04(lesson04):
    """(width, depth, loss) -> per seed (Pre last/first, Post last/first, Post stream h_0/h_L,
    Pre stream h_0/h_L) over seeds 300-319, widths 16-128, depths 12-48, four losses."""
    out = {}
    tg = lesson04["traced_grads"]
    for width in WIDTHS:
        for depth in DEPTHS:
            for loss in SWEEP_LOSSES:
                rows = []
                for seed in SWEEP_SEEDS:
                    a, b = (
                        tg(seed, True, loss, depth=depth, width=width),
                        tg(seed, False, loss, depth=depth, width=width),
                    )
                    rows.append(
                        [
                            (a["weight"][-1] / a["weight"][0]).item(),
                            (b["weight"][-1] / b["weight"][0]).item(),
                            (b["stream"][0] / b["stream"][-1]).item(),
                            (a["stream"][0] / a["stream"][-1]).item(),
                        ]
                    )
                out[width, depth, loss] = torch.tensor(rows)
    return out


def test_regression_loss_leans_like_the_square_loss(sweep04):
    """Regression loss mean((y - t)^2), width 64, depth 48, seeds 300-319: Post-LN leans toward the
    output (median last/first > 1.1, below 1 on at most 3 seeds; the lesson: median 1.24)?"""
    post = sweep04[64, 48, "regression"][:, 1]
    assert post.median() > 1.1 and (post < 1).sum() <= 3, post


def test_pre_ln_falls_below_half_only_when_deep_and_wide(sweep04):
    """Pre-LN last/first, seeds 300-319, four losses: < 0.55 on every seed at depth 48, width >= 64;
    above 0.55 on some seed at depth 12 and at width 16 (the lesson: up to 0.72 and 0.99), below 1 everywhere?"""
    for (width, depth, loss), r in sweep04.items():
        assert (r[:, 0] < 1.0).all(), (width, depth, loss, r[:, 0].max())
        if width >= 64 and depth == 48:
            assert (r[:, 0] < 0.55).all(), (width, depth, loss, r[:, 0].max())
    assert max(sweep04[w, 12, loss][:, 0].max() for w in WIDTHS[1:] for loss in SWEEP_LOSSES) > 0.55
    assert max(sweep04[16, d, loss][:, 0].max() for d in DEPTHS for loss in SWEEP_LOSSES) > 0.8


def test_post_leans_more_than_pre_from_width_32(sweep04):
    """Post/Pre last/first, seeds 300-319, four losses, depths 12-48: > 1.15 on every seed at width >= 32
    (the lesson: at least 1.21), > 1.5 at width >= 64 (at least 1.56), below 1 on some seed at width 16?"""
    for (width, depth, loss), r in sweep04.items():
        ratio = r[:, 1] / r[:, 0]
        if width >= 32:
            assert (ratio > (1.5 if width >= 64 else 1.15)).all(), (width, depth, loss, ratio.min())
    assert (
        min(
            (sweep04[16, d, loss][:, 1] / sweep04[16, d, loss][:, 0]).min()
            for d in DEPTHS
            for loss in SWEEP_LOSSES
        )
        < 1
    )


def test_post_ln_stream_gradient_flat_only_when_wide(sweep04):
    """Post-LN ||dL/dh_0|| / ||dL/dh_L||, seeds 300-319, four losses: within (1/3, 3) at width >= 64 on
    every depth; at width 16, depth 48 it drifts beyond 1/3 or 3 on some seed (the lesson: 0.23-3.1);
    Pre-LN's grows (> 1.5) everywhere?"""
    for (width, depth, loss), r in sweep04.items():
        assert (r[:, 3] > 1.5).all(), (width, depth, loss, r[:, 3].min())
        if width >= 64:
            assert ((r[:, 2] > 1 / 3) & (r[:, 2] < 3)).all(), (width, depth, loss, r[:, 2])
    drift = torch.cat([sweep04[16, 48, loss][:, 2] for loss in SWEEP_LOSSES])
    assert drift.min() < 1 / 3 or drift.max() > 3, drift


def test_gradient_through_the_stream(traced04):
    """Post-LN: LayerNorm's backward ~ 1/std(z) (ratio in (0.98, 1.03)), (I + W)^T > 1.1, both in
    (0.97, 1.03), the stream gradient within 3x; Pre-LN: it grows > 3x on the way down?"""
    geo_mean, post_gains = traced04["geo_mean"], traced04["post_gains"]
    for loss in traced04["LOSSES"]:
        for t in traced04["traced"][loss, False]:
            ln_gain, inv_std, res_gain = post_gains(t)
            got = (geo_mean(ln_gain) / geo_mean(inv_std), geo_mean(res_gain), geo_mean(ln_gain * res_gain))
            assert 0.98 < got[0] < 1.03 and got[1] > 1.1 and 0.97 < got[2] < 1.03, (loss, got)
            assert 1 / 3 < t["stream"][0] / t["stream"][-1] < 3, (loss, t["stream"][[0, -1]])
        for t in traced04["traced"][loss, True]:
            assert t["stream"][0] / t["stream"][-1] > 3.0, (loss, t["stream"][[0, -1]])


def test_square_loss_lines_up_with_the_top_blocks(traced04):
    """Post-LN alignment top 8 / bottom 8 blocks: > 1.2 under the square loss, in (0.7, 1.4) otherwise?"""
    for loss in traced04["LOSSES"]:
        a = torch.stack([traced04["top_bottom_alignment"](t) for t in traced04["traced"][loss, False]])
        assert ((a > 1.2) if loss == "square" else ((a > 0.7) & (a < 1.4))).all(), (loss, a)


def test_absolute_scales_are_the_losses(traced04):
    """Square loss: Post max / Pre min < 0.7, Pre/Post gradient entering the stack > 2.5; linear loss:
    the same gradient enters both, last blocks Post/Pre in (0.5, 1.2)?"""
    gap, entering, _ = traced04["scale_ratios"]("square")
    assert (gap < 0.7).all() and (entering > 2.5).all(), (gap, entering)
    _, entering, top = traced04["scale_ratios"]("linear")
    assert torch.allclose(entering, torch.ones_like(entering)), entering
    assert ((top > 0.5) & (top < 1.2)).all(), top


WARMUP_SEEDS = range(100, 120)


def _warmup_runs(lesson04, pre_ln, warmup, lr, steps=120, layers=6, optimizer="Adam"):
    """Per seed of WARMUP_SEEDS, the training losses of the lesson's previous-token task (batch 16)."""
    opt = getattr(torch.optim, optimizer)
    return torch.stack(
        [
            lesson04["train_prev_token"](pre_ln, warmup, s, steps=steps, lr=lr, layers=layers, optimizer=opt)
            for s in WARMUP_SEEDS
        ]
    )


@pytest.mark.parametrize(
    "pre_ln, warmup, layers, optimizer, learned",
    [
        (False, 0, 6, "Adam", None),
        (False, 60, 6, "Adam", 18),
        (True, 0, 6, "Adam", 20),
        (True, 60, 6, "Adam", 20),
        (False, 0, 3, "Adam", 20),
        (False, 0, 6, "RAdam", 15),
    ],
)
def test_warmup_at_lr_1e_2(lesson04, pre_ln, warmup, layers, optimizer, learned):
    """Previous-token task, lr 1e-2, 120 steps, seeds 100-119: a 6-layer Post-LN without warm-up stays
    within 0.1 of ln 16 on every seed; with 60 warm-up steps it gets below 0.3 on at least 18 (the
    lesson: 19, seed 118 at 0.33); Pre-LN below 0.3 on every seed either way; without warm-up a 3-layer
    Post-LN below 0.3 on every seed, a 6-layer one trained with RAdam on most, at least 15 (the lesson:
    19 here, seed 118 at 1.57; 16 on seeds 400-419); every run that learns ends more than 1 below ln 16?"""
    chance = math.log(lesson04["VOCAB_W"])
    final = _warmup_runs(lesson04, pre_ln, warmup, 1e-2, layers=layers, optimizer=optimizer)[:, -20:].mean(1)
    print(f"lr 1e-2, pre_ln={pre_ln}, warm-up {warmup}, {layers} layers, {optimizer}: final loss", final)
    if learned is None:
        assert ((final - chance).abs() < 0.1).all(), final
    else:
        assert (final < 0.3).sum() >= learned and (final < chance - 1).all(), final


@pytest.mark.parametrize("pre_ln, warmup, at_chance", [(False, 0, 20), (False, 60, 18), (True, 0, None)])
def test_warmup_at_lr_3e_2(lesson04, pre_ln, warmup, at_chance):
    """lr 3e-2, 120 steps, seeds 100-119: a 6-layer Post-LN does not learn the task (final loss above 2 on
    every seed) even with 60 warm-up steps; without them it stays within 0.1 of ln 16 on every seed, with
    them on at least 18 (the lesson: 19, seed 110 had fallen to 2.19); Pre-LN without warm-up gets below
    0.3 on every seed (at_chance None: it learns)?"""
    chance = math.log(lesson04["VOCAB_W"])
    final = _warmup_runs(lesson04, pre_ln, warmup, 3e-2)[:, -20:].mean(1)
    print(f"lr 3e-2, pre_ln={pre_ln}, warm-up {warmup}: final loss", final)
    if at_chance is None:
        assert (final < 0.3).all(), final
    else:
        assert (final > 2).all() and ((final - chance).abs() < 0.1).sum() >= at_chance, final


def test_warmup_only_slows_at_lr_1e_3(lesson04):
    """lr 1e-3, 300 steps, seeds 100-119: a 6-layer Post-LN learns without warm-up (final < 0.3) and
    with it; with 60 warm-up steps its loss reaches 1 later, on every seed?"""
    runs = {w: _warmup_runs(lesson04, False, w, 1e-3, steps=300) for w in (0, 60)}
    # (seeds, 15): the mean loss of steps 1-20, 21-40, ...
    windows = {w: r.unfold(1, 20, 20).mean(-1) for w, r in runs.items()}
    reach = {w: (v < 1.0).float().argmax(1) * 20 + 20 for w, v in windows.items()}  # first window below 1
    for w in (0, 60):
        print(f"lr 1e-3, warm-up {w}: final loss", windows[w][:, -1], "loss below 1 by step", reach[w])
        assert (windows[w][:, -1] < 0.3).all() and (windows[w] < 1.0).any(1).all(), (w, windows[w][:, -1])
    assert (reach[60] > reach[0]).all(), (reach[0], reach[60])


def _loglog_slope(values) -> float:
    """Least-squares slope of log(value) against log(L), L = 6, 12, 24."""
    lx = [math.log(L) for L in (6, 12, 24)]
    ly = [math.log(v) for v in values]
    mx, my = sum(lx) / 3, sum(ly) / 3
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def _lesson_asserts_theorem_1(slope) -> bool:
    """The notebook's asserts on Theorem 1's slopes."""
    return -0.75 < slope[True] < -0.25 and -0.2 < slope[False] < 0.6 and slope[False] - slope[True] > 0.3


def test_encoder_per_layer_and_theorem_1(lesson04):
    """Real encoder at init, cross-entropy, seeds 50-69: per-layer ratios (the lesson: Post-LN last/first
    0.81-1.32, Pre-LN 0.43-0.55) and Theorem 1's slopes over L = 6, 12, 24 (Pre-LN -0.58 to -0.34,
    Post-LN -0.07 to 0.26; with seeds 500-519 as well: -0.63 to -0.34 and -0.18 to 0.54), with the
    notebook's margins?"""
    grads = lesson04["ffn_grad_norms"]
    for seed in range(50, 70):
        r = {pre: (lambda g: (g[-1] / g[0]).item())(grads(6, pre, seed)) for pre in (False, True)}
        assert r[True] < 0.7 and r[False] > 0.75 and r[False] / r[True] > 1.5, (seed, r)
        slope = {
            pre: _loglog_slope([grads(L, pre, seed)[-1].item() for L in (6, 12, 24)]) for pre in (False, True)
        }
        assert _lesson_asserts_theorem_1(slope), (seed, slope)


def _last_ffn_grad_square_loss(lesson04, n_layers, pre_ln, seed) -> float:
    """The lesson's encoder and inputs, with the head's outputs regressed on N(0, 1) targets (mean square
    error) in place of the cross-entropy: the last layer's FFN gradient norm."""
    V, B, T = lesson04["VOCAB"], lesson04["BATCH"], lesson04["LENGTH"]
    emb, layers, final, head = lesson04["make_encoder"](n_layers, pre_ln, seed)
    g = torch.Generator().manual_seed(1000 + seed)
    h = emb(torch.randint(0, V, (B, T), generator=g))
    for layer in layers:
        h = layer(h)
    torch.nn.functional.mse_loss(head(final(h)), torch.randn(B, T, V, generator=g)).backward()
    last = layers[-1]
    return torch.cat([last.linear1.weight.grad.flatten(), last.linear2.weight.grad.flatten()]).norm().item()


def test_theorem_1_slopes_with_a_square_loss(lesson04):
    """The same encoder with a square loss, seeds 50-69: Pre-LN's slope flatter than the cross-entropy's
    (mean -0.2 to -0.4; over these and seeds 500-519 -0.49 to -0.12, mean -0.31), and the notebook's
    asserts fail on some seeds (5 of these 20; 11 of 40 with 500-519)?"""
    slopes = []
    for seed in range(50, 70):
        slopes.append(
            {
                pre: _loglog_slope([_last_ffn_grad_square_loss(lesson04, L, pre, seed) for L in (6, 12, 24)])
                for pre in (False, True)
            }
        )
    pre = [s[True] for s in slopes]
    assert -0.4 < sum(pre) / len(pre) < -0.2 and all(-0.6 < p < -0.05 for p in pre), pre
    assert sum(not _lesson_asserts_theorem_1(s) for s in slopes) >= 3, slopes


def test_activation_std_through_50_relu_layers(lesson05):
    """Width 512, 50 layers, seeds 100-119: Kaiming keeps the std (factor within 0.03 of 1), Xavier
    divides it by sqrt(2) per layer, N(0, 0.01^2) by 1/0.16; final stds in the lesson's ranges?"""
    for seed in range(100, 120):
        stds = {s: lesson05["activation_stds"](s, seed)[None] for s in ("kaiming", "xavier", "small")}
        f = {s: lesson05["per_layer_factor"](v).item() for s, v in stds.items()}
        assert (
            abs(f["kaiming"] - 1) < 0.03
            and abs(f["xavier"] - 2**-0.5) < 0.02
            and abs(f["small"] - 0.16) < 0.01
        ), (seed, f)
        assert (
            0.1 < stds["kaiming"][0, -1] < 10
            and 1e-9 < stds["xavier"][0, -1] < 1e-6
            and stds["small"][0, -1] < 1e-35
        ), seed


@pytest.mark.parametrize("width, depth", [(512, 50), (64, 50), (64, 200), (16, 50)])
def test_kaiming_keeps_the_std_only_on_average(lesson05, width, depth):
    """Kaiming's final std, seeds 100-119: order 1 at width 512 over 50 layers (the lesson: 0.45-1.15);
    at width 64 over 200 layers and width 16 over 50 it falls below 0.01 on some seed (the lesson:
    0.0003-0.76 and 0.0004-0.56), and at width 64 over 50 layers it spreads over 0.13-1.9?"""
    ns = dict(lesson05)
    ns["WIDTH"], ns["DEPTH"] = width, depth
    fn = type(lesson05["activation_stds"])(lesson05["activation_stds"].__code__, ns)
    final = torch.stack([fn("kaiming", s)[-1] for s in range(100, 120)])
    if width == 512:
        assert ((final > 0.3) & (final < 2)).all(), final
    elif depth == 50 and width == 64:
        assert final.min() < 0.2 and final.max() > 1.5, final
    else:
        assert final.min() < 0.01 and final.max() < 1.0, final


def test_gpt2_residual_scaling(lesson05):
    """Residual stream std(N=64)/std(N=4), seeds 100-119: > 3 unscaled, within (0.85, 1.2) with 1/sqrt(2N)?"""
    final_std = lesson05["final_std"]
    for seed in range(100, 120):
        unscaled = final_std(64, False, seed) / final_std(4, False, seed)
        scaled = final_std(64, True, seed) / final_std(4, True, seed)
        assert unscaled > 3.0 and 0.85 < scaled < 1.2, (seed, unscaled, scaled)


def test_fan_mixup_shows_only_layer_by_layer(lesson05):
    """Alternating 512/128 layers, seeds 100-119: Kaiming's std steps within 10% of 1, the fan_out
    mix-up x2 when narrowing and x1/2 when widening (within 10%), the same final std with the same
    draws; with independent draws (seed s + 1000 for the mix-up) the final stds differ by the seed
    spread in both directions (the lesson: ratio 0.39-1.78)?"""
    seeds = range(100, 120)
    fan = {m: torch.stack([lesson05["fan_stds"](m, s) for s in seeds]) for m in (False, True)}
    narrow, widen = lesson05["std_steps"](fan[False])
    assert ((narrow > 0.9) & (narrow < 1.1) & (widen > 0.9) & (widen < 1.1)).all(), (narrow, widen)
    narrow, widen = lesson05["std_steps"](fan[True])
    assert ((narrow > 1.8) & (narrow < 2.2) & (widen > 0.45) & (widen < 0.55)).all(), (narrow, widen)
    assert torch.allclose(fan[False][:, -1], fan[True][:, -1], rtol=1e-4)
    other = torch.stack([lesson05["fan_stds"](True, s + 1000)[-1] for s in seeds])
    ratio = fan[False][:, -1] / other
    assert ratio.min() < 0.7 and ratio.max() > 1.4, ratio
