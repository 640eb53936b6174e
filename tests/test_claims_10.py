"""Do the claims that lesson 10_flash_attention asserts hold on seeds and sizes the notebook does not use?

The notebook asserts its claims on its own seeds (and nbval re-runs them). Here the same code, taken
from the solution notebook (the reference answers, lesson 1's `attention`, the `Observer`, `observe`,
`matmul_flops` and `seconds`), runs on fresh seeds, shapes, head dims and block sizes.
"""

import math

import pytest
import torch
from lesson_code import lesson_fixture, one_thread_each_test
from sweeps_09_10 import BLOCKS_10, SETTINGS_10, float32_errors_10

LESSON = "10_flash_attention"


# the reference answers plus the functions and classes of the lesson's other code cells
lesson = lesson_fixture("lesson", LESSON, assigns=lambda node: False, skip_setup=False)
_one_thread = one_thread_each_test()


def _qkv(seed, lead, lq, lk, d, dv, dtype=torch.float64, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    q = scale * torch.randn(*lead, lq, d, dtype=dtype, generator=g)
    k = scale * torch.randn(*lead, lk, d, dtype=dtype, generator=g)
    v = scale * torch.randn(*lead, lk, dv, dtype=dtype, generator=g)
    return q, k, v


# (leading dims, Lq, Lk, d, d_v, is_causal, block_q, block_k): ragged blocks, Lq != Lk, one block
SHAPES = [
    ((2,), 10, 10, 5, 4, True, 3, 4),
    ((2, 3), 7, 12, 6, 6, False, 4, 5),
    ((3,), 13, 13, 4, 7, True, 5, 2),
    ((1, 2), 9, 20, 8, 3, False, 16, 16),
    ((2,), 17, 17, 3, 3, True, 17, 6),
]


def test_forward_equals_lesson_1_and_logsumexp(lesson):
    """Are o and lse equal to lesson 1's attention and torch.logsumexp in float64, seeds 100-119, every shape?"""
    fwd, att = lesson["flash_attention_forward"], lesson["attention"]
    for seed in range(100, 120):
        lead, lq, lk, d, dv, causal, bq, bk = SHAPES[seed % len(SHAPES)]
        q, k, v = _qkv(seed, lead, lq, lk, d, dv, scale=2.0)
        o, lse = fwd(q, k, v, is_causal=causal, block_q=bq, block_k=bk)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        if causal:
            s = s.masked_fill(~torch.ones(lq, lk, dtype=torch.bool).tril(), -math.inf)
        assert torch.allclose(o, att(q, k, v, is_causal=causal), rtol=1e-10, atol=1e-12), seed
        assert torch.allclose(lse, torch.logsumexp(s, -1), rtol=1e-10, atol=1e-12), seed


def test_function_passes_gradcheck_and_equals_autograd(lesson):
    """Does FlashAttention pass gradcheck in float64 and equal autograd through lesson 1, seeds 200-219?"""
    fn, att = lesson["FlashAttention"], lesson["attention"]
    for seed in range(200, 220):
        lead, lq, lk, d, dv, causal, _, _ = SHAPES[seed % len(SHAPES)]
        q, k, v = (t.requires_grad_(True) for t in _qkv(seed, lead, lq, lk, d, dv))
        assert torch.autograd.gradcheck(lambda a, b, c: fn.apply(a, b, c, causal), (q, k, v)), seed
        do = torch.randn(*lead, lq, dv, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        want = torch.autograd.grad(att(q, k, v, is_causal=causal), (q, k, v), do)
        got = torch.autograd.grad(fn.apply(q, k, v, causal), (q, k, v), do)
        assert all(torch.allclose(a, b, rtol=1e-9, atol=1e-11) for a, b in zip(got, want)), seed


def test_backward_with_small_blocks_equals_autograd(lesson):
    """Does flash_attention_backward with ragged small blocks equal autograd, seeds 300-319?"""
    bwd, fwd, att = lesson["flash_attention_backward"], lesson["flash_attention_forward"], lesson["attention"]
    for seed in range(300, 320):
        lead, lq, lk, d, dv, causal, bq, bk = SHAPES[seed % len(SHAPES)]
        q, k, v = (t.requires_grad_(True) for t in _qkv(seed, lead, lq, lk, d, dv))
        do = torch.randn(*lead, lq, dv, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        want = torch.autograd.grad(att(q, k, v, is_causal=causal), (q, k, v), do)
        with torch.no_grad():
            o, lse = fwd(q, k, v, causal, bq, bk)
            got = bwd(q, k, v, o, lse, do, causal, bq, bk)
        assert all(torch.allclose(a, b, rtol=1e-9, atol=1e-11) for a, b in zip(got, want)), seed


@pytest.mark.parametrize("std", sorted(SETTINGS_10))
def test_float32_error_per_seed_at_three_score_scales(lesson, std):
    """float32 against float64, seed by seed (20-39), causal, L = 200, d = 32, q, k, v of std 1, sqrt 5 and 3
    (scores of std about 1, 5 and 9; the notebook: 9, seeds 0-19), blocks of 16, 32 and 64: is the blocked
    error below 3 times the naive one on every seed, larger on some seeds and smaller on others, below 2 times
    as the worst over the 20 seeds, and both below 1e-4? Measured (tests/sweeps_09_10.py, seeds 0-19, 20-39
    and 3000-3019): per seed 0.30 to 2.20 times, the worst over 20 seeds 0.39 to 1.63 times, largest error
    2.9e-5. About 2 s a scale."""
    for block in BLOCKS_10:
        errors = [float32_errors_10(lesson, seed, SETTINGS_10[std], block) for seed in range(20, 40)]
        ratios = [flash / naive for naive, flash in errors]
        assert max(ratios) < 3 and min(ratios) < 1 < max(ratios), (std, block, ratios)
        worst_naive, worst_flash = (max(e[i] for e in errors) for i in (0, 1))
        assert worst_flash < 2 * worst_naive and max(worst_naive, worst_flash) < 1e-4, (std, block, errors)


# (d, block_q, block_k)
MEMORY = [(64, 64, 64), (32, 32, 32), (128, 64, 64), (64, 32, 128), (16, 64, 64)]


def test_largest_tensor_and_peak_grow_as_l_squared_vs_l(lesson):
    """Largest tensor exactly L^2 (naive) vs max(L * d, block_q * block_k) (blocked), L = 128 to 2048, five
    (d, blocks); peak
    per doubling: naive 3.0 to 4.0 (>= 3.5 from L = 1024), blocked at most 2.0 (1.7 to 2.0 from L = 1024)?"""
    observe, fwd, att = lesson["observe"], lesson["flash_attention_forward"], lesson["attention"]
    for d, bq, bk in MEMORY:
        prev = None
        for L in (128, 256, 512, 1024, 2048):
            q, k, v = _qkv(L + d, (1, 1), L, L, d, d, dtype=torch.float32)
            n_naive, _, _, p_naive = observe(att, q, k, v)
            n_flash, _, _, p_flash = observe(fwd, q, k, v, block_q=bq, block_k=bk)
            assert n_naive == L * L and n_flash == max(L * d, bq * bk), (d, bq, bk, L, n_naive, n_flash)
            if prev is not None:
                grow_naive, grow_flash = p_naive / prev[0], p_flash / prev[1]
                assert 3.0 <= grow_naive <= 4.0 and grow_flash <= 2.0, (d, bq, bk, L, grow_naive, grow_flash)
                if L >= 1024:
                    assert grow_naive >= 3.5 and 1.7 <= grow_flash, (d, bq, bk, L, grow_naive, grow_flash)
            prev = (p_naive, p_flash)


def test_causal_flops_are_blocks_on_or_below_the_diagonal(lesson):
    """Causal / dense matmul FLOPs == (n + 1) / 2n for n = 1 to 16 blocks a side (L = 32 n, blocks of 32),
    and lesson 1's causal attention spends the dense count?"""
    flops, fwd, att = lesson["matmul_flops"], lesson["flash_attention_forward"], lesson["attention"]
    for n in range(1, 17):
        q, k, v = _qkv(n, (1,), 32 * n, 32 * n, 16, 16, dtype=torch.float32)
        dense = flops(fwd, q, k, v, block_q=32, block_k=32)
        causal = flops(fwd, q, k, v, is_causal=True, block_q=32, block_k=32)
        assert causal * 2 * n == dense * (n + 1), (n, causal, dense)
        assert flops(att, q, k, v, is_causal=True) == dense, n


def test_blocked_loop_is_slower_than_lesson_1_on_the_cpu(lesson):
    """Is the blocked Python loop slower (CPU time, median of 5) than lesson 1's attention at L = 512, 1024, 2048?"""
    seconds, fwd, att = lesson["seconds"], lesson["flash_attention_forward"], lesson["attention"]
    for L in (512, 1024, 2048):
        q, k, v = _qkv(L, (1, 1), L, L, 64, 64, dtype=torch.float32)
        t_naive, t_flash = seconds(att, q, k, v), seconds(fwd, q, k, v)
        assert t_flash > t_naive, (L, t_naive, t_flash)
