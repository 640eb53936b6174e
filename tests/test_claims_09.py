"""Do the claims of lesson 09_modern_block hold on seeds and sizes the notebook does not use?

The notebook asserts its claims on its own seeds (0 and 1; nbval re-runs them) and states the ranges
measured here. The same experiment code, taken from the solution notebook (its plain cells, and the
functions, classes and UPPERCASE constants of its demo cells), runs with the reference answers:

- RoPE: scores depend only on the offset (20 seeds, d_head 8 to 128, theta 100 to 500000, shifts up
  to 100000); the half-split layout is the interleaved one after a permutation (20 seeds);
- grouped-query attention equals torch's scaled_dot_product_attention(enable_gqa=True) (20 seeds,
  MHA, GQA and MQA shapes); the KV cache per token at Llama 3 8B's shape is 2 N H_kv d_head bytes per
  number (H_kv 32, 8, 4, 1; bfloat16 and float32);
- trained (seeds 10-29, the notebook's model and schedule; the sentences also count seeds 500-519,
  measured once with the same code): the Llama-style decoder below lesson 7's GPT on at least 19 of 20
  and never above it by 0.01; SwiGLU and a ReLU FFN of the same size within 0.1 nats, ReLU lower on at least
  16 of 20 and SwiGLU ahead by less than 0.01 (to two decimals) on the others; RoPE below learned
  positions at positions 16-63 on every seed, by more than 0.1 on at least 19 of 20, and above its
  own loss at positions 0-15.
- the same comparisons at other settings (tests/sweeps_09_10.py, seeds 10-29; the sentences give the ranges
  measured on seeds 3000-3019): at a peak learning rate of 1e-3 lesson 7's GPT below the Llama-style
  decoder and ReLU below SwiGLU; at 600 steps both gaps within a few hundredths; trained on 32 tokens and
  read on 128, RoPE below learned positions on most seeds, and above its own loss at 0-31.
"""

import pytest
import torch
from lesson_code import lesson_fixture, one_thread_each_test, upper_case_names
from sweeps_09_10 import differences_09, train_09

LESSON = "09_modern_block"
SEEDS = range(10, 30)


lesson = lesson_fixture("lesson", LESSON, assigns=upper_case_names, run_plain=True)
_one_thread = one_thread_each_test()


def test_rope_scores_depend_only_on_the_offset(lesson):
    """A common shift of query and key positions changes no score by more than 1e-9 (float64), seeds 0-19?"""
    rope = lesson["apply_rope"]
    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        d = (8, 16, 64, 128)[seed % 4]
        theta = (100.0, 10000.0, 500000.0)[seed % 3]
        q = torch.randn(16, d, dtype=torch.float64, generator=g) * 3 + 0.5
        k = torch.randn(16, d, dtype=torch.float64, generator=g) * 3 - 0.5
        m, n = (torch.randint(0, 4096, (16, 1), generator=g) for _ in range(2))

        def scores(shift, q=q, k=k, m=m, n=n, theta=theta):
            return (rope(q[:, None], m + shift, theta) * rope(k[:, None], n + shift, theta)).sum(-1)

        base = scores(0)
        for shift in (1, 37, 1000, 100000):
            assert (scores(shift) - base).abs().max() < 1e-9, (seed, d, theta, shift)


def test_half_split_layout_is_a_permutation_of_the_interleaved_one(lesson):
    """rope_half_split(x[..., P]) == apply_rope(x)[..., P], and the scores agree, seeds 0-19?"""
    rope, half = lesson["apply_rope"], lesson["rope_half_split"]
    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        d = (4, 16, 64, 128)[seed % 4]
        x = torch.randn(3, 9, d, dtype=torch.float64, generator=g)
        pos = torch.randint(0, 10000, (9,), generator=g)
        perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
        assert torch.allclose(half(x[..., perm], pos), rope(x, pos)[..., perm], atol=1e-10), seed
        assert not torch.allclose(half(x, pos), rope(x, pos)), seed


def test_gqa_equals_torch_attention(lesson):
    """GroupedQueryAttention == scaled_dot_product_attention(is_causal=True, enable_gqa=True) on the same
    projections, MHA / GQA / MQA shapes, seeds 0-19?"""
    shapes = [(64, 8, 2), (64, 8, 8), (48, 6, 1), (96, 12, 3), (32, 4, 2)]
    for seed in range(20):
        d, h, h_kv = shapes[seed % len(shapes)]
        torch.manual_seed(seed)
        attn = lesson["GroupedQueryAttention"](d, h, h_kv)
        x = torch.randn(2, 5 + seed, d)
        with torch.no_grad():
            y, (k, _) = attn(x)
            assert torch.allclose(y, lesson["torch_gqa"](attn, x), atol=1e-5), (seed, d, h, h_kv)
        assert k.shape == (2, h_kv, 5 + seed, d // h)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_kv_cache_bytes_per_token_at_llama3_8b_shape(lesson, dtype):
    """The cache of one layer at Llama 3 8B's shape, times 32 layers, is 2 N H_kv d_head bytes per number?"""
    shape = lesson["LLAMA3_8B"]
    per_token = {}
    for h_kv in (32, 8, 4, 1):
        torch.manual_seed(0)
        layer = lesson["GroupedQueryAttention"](shape["d_model"], shape["n_heads"], h_kv).to(dtype)
        with torch.no_grad():
            _, (k, v) = layer(torch.randn(1, 8, shape["d_model"], dtype=dtype))
        per_token[h_kv] = (
            (k.numel() * k.element_size() + v.numel() * v.element_size()) / 8 * shape["n_layers"]
        )
        size = torch.empty(0, dtype=dtype).element_size()
        assert per_token[h_kv] == 2 * shape["n_layers"] * h_kv * 128 * size, (h_kv, per_token[h_kv])
    assert per_token[32] == 4 * per_token[8] == 32 * per_token[1]


@pytest.fixture(scope="module")
def trained(lesson):
    """Held-out losses of the four models of section 5, seeds 10-29 (four trainings a seed: about 10 s on an
    idle core, 22 minutes for all 20 seeds on a shared, loaded 2-core machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    out = {}
    loss = lesson["held_out_loss"]
    for seed in SEEDS:
        llama, relu = lesson["llama"](seed), lesson["llama"](seed, ffn="relu")
        learned, gpt = lesson["llama"](seed, learned_positions=64), lesson["gpt"](seed)
        rope_64, learned_64 = loss(llama, T=64), loss(learned, T=64)
        out[seed] = dict(
            llama=loss(llama).mean().item(),
            relu=loss(relu).mean().item(),
            gpt=loss(gpt).mean().item(),
            rope_in=rope_64[:16].mean().item(),
            rope_out=rope_64[16:].mean().item(),
            learned_out=learned_64[16:].mean().item(),
        )
        print(
            f"seed {seed}: " + ", ".join(f"{k} {v:.4f}" for k, v in out[seed].items())
        )  # the measured ranges
    torch.set_num_threads(before)
    return out


def test_llama_decoder_beats_lessons_7_gpt(trained):
    """The Llama-style decoder's held-out loss below lesson 7's GPT's on at least 19 of seeds 10-29, and
    never above it by 0.01 nats or more (measured: below on all 20 here; on seeds 500-519, below on 19,
    seed 501 above by 0.003)?"""
    diffs = {seed: r["llama"] - r["gpt"] for seed, r in trained.items()}
    assert sum(d < 0 for d in diffs.values()) >= 19, diffs
    assert all(d < 0.01 for d in diffs.values()), diffs


def test_swiglu_and_relu_ffn_are_within_a_tenth_of_a_nat(trained):
    """SwiGLU and a ReLU FFN of the same size within 0.1 nats on every seed, ReLU lower on >= 16 of 20,
    and where SwiGLU is lower, by less than 0.01 nats to two decimals (measured: -0.0098 to +0.0585,
    16 of 20, the same with ATEN_CPU_CAPABILITY=avx2)?"""
    diffs = {seed: r["llama"] - r["relu"] for seed, r in trained.items()}
    assert all(abs(d) < 0.1 for d in diffs.values()), diffs
    assert sum(d > 0 for d in diffs.values()) >= 16, diffs
    assert all(d > -0.0125 for d in diffs.values()), diffs


def test_rope_reads_past_the_training_length_better_than_learned_positions(trained):
    """At positions 16-63 (trained on 16): RoPE below learned positions on every seed, by > 0.1 on >= 19;
    and RoPE above its own loss at positions 0-15?"""
    gaps = {seed: r["learned_out"] - r["rope_out"] for seed, r in trained.items()}
    assert all(g > 0 for g in gaps.values()), gaps
    assert sum(g > 0.1 for g in gaps.values()) >= 19, gaps
    assert all(r["rope_out"] > r["rope_in"] for r in trained.values()), trained


def _sweep(setting):
    """A module-scoped fixture: seeds 10-29 of section 5 at one of tests/sweeps_09_10.py's settings."""

    @pytest.fixture(scope="module")
    def fixture(lesson):
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        out = {seed: differences_09(train_09(lesson, seed, setting)) for seed in SEEDS}
        for seed, d in out.items():
            print(f"{setting} seed {seed}: " + ", ".join(f"{k} {v:+.4f}" for k, v in d.items()))
        torch.set_num_threads(before)
        return out

    return fixture


# Four trainings a seed at lr 1e-3 (about 6 s a seed on an idle core, 2 minutes in all), four of 600 steps
# (about 18 s a seed, 6 minutes) and two on windows of 32 tokens (about 5 s a seed, 2 minutes).
at_lr_1e3 = _sweep("lr1e-3")
at_600_steps = _sweep("steps600")
trained_on_32 = _sweep("T32")


def test_at_lr_1e3_lessons_7_gpt_ends_lower(at_lr_1e3):
    """At a peak learning rate of 1e-3 (200 steps) the comparison flips: lesson 7's GPT below the Llama-style
    decoder on at least 15 of seeds 10-29 (measured: 17 of 20 here, the Llama-style decoder lower on the
    other three by up to 0.015; 20 of 20 on seeds 3000-3019, by 0.002 to 0.064)?"""
    diffs = {seed: d["llama-gpt"] for seed, d in at_lr_1e3.items()}
    assert sum(d > 0 for d in diffs.values()) >= 15, diffs


def test_at_lr_1e3_relu_ends_below_swiglu(at_lr_1e3):
    """At lr 1e-3 a ReLU FFN of the same size below SwiGLU on at least 18 of 20 seeds, by less than 0.2
    nats (measured: 20 of 20 here, by 0.027 to 0.117; 20 of 20 on seeds 3000-3019, by 0.037 to 0.112)?"""
    diffs = {seed: d["llama-relu"] for seed, d in at_lr_1e3.items()}
    assert sum(d > 0 for d in diffs.values()) >= 18, diffs
    assert all(d < 0.2 for d in diffs.values()), diffs


def test_at_lr_1e3_rope_reads_past_the_training_length_better(at_lr_1e3):
    """At lr 1e-3, positions 16-63: RoPE below learned positions on every seed (measured: 20 of 20 here and
    on seeds 3000-3019, where by 0.26 to 1.21)?"""
    assert all(d["learned-rope"] > 0 for d in at_lr_1e3.values()), at_lr_1e3


def test_trained_on_32_rope_mostly_reads_past_the_training_length_better(trained_on_32):
    """Trained on windows of 32 tokens and read on 128: RoPE below learned positions at positions 32-127 on
    at least 12 of seeds 10-29, and its own loss at 32-127 above its loss at 0-31 by 0.1 to 0.8 nats on
    every seed (measured: lower on 19 of 20 here, learned minus RoPE -0.05 to +1.16, its rise 0.22 to 0.50;
    on seeds 3000-3019 lower on 17 of 20, -0.18 to +1.14, its rise 0.21 to 0.53)?"""
    gaps = {seed: d["learned-rope"] for seed, d in trained_on_32.items()}
    rises = {seed: d["rope_rise"] for seed, d in trained_on_32.items()}
    assert sum(g > 0 for g in gaps.values()) >= 12, gaps
    assert all(0.1 < r < 0.8 for r in rises.values()), rises


def test_at_600_steps_the_llama_and_gpt_gap_is_a_few_thousandths(at_600_steps):
    """Trained 600 steps (lr 3e-3): the Llama-style decoder below lesson 7's GPT on at least 16 of seeds
    10-29, and within 0.02 nats of it on every seed (measured: below on 19 of 20 here, -0.0052 to +0.0003;
    on seeds 3000-3019 below on 20 of 20, by 0.0005 to 0.0034)?"""
    diffs = {seed: d["llama-gpt"] for seed, d in at_600_steps.items()}
    assert sum(d < 0 for d in diffs.values()) >= 16, diffs
    assert all(abs(d) < 0.02 for d in diffs.values()), diffs


def test_at_600_steps_swiglu_and_relu_tie(at_600_steps):
    """Trained 600 steps: SwiGLU and a ReLU FFN of the same size within 0.01 nats on every seed (measured:
    SwiGLU minus ReLU -0.0020 to +0.0017 here, -0.0009 to +0.0022 on seeds 3000-3019)?"""
    diffs = {seed: d["llama-relu"] for seed, d in at_600_steps.items()}
    assert all(abs(d) < 0.01 for d in diffs.values()), diffs


def test_at_600_steps_rope_reads_past_the_training_length_better(at_600_steps):
    """Trained 600 steps, positions 16-63: RoPE below learned positions on every seed, and above its own
    loss at 0-15 (measured: by 0.08 to 0.77 here, its rise 0.15 to 0.49; on seeds 3000-3019 by 0.006 to 0.66, its
    rise 0.17 to 0.47)?"""
    assert all(d["learned-rope"] > 0 and d["rope_rise"] > 0 for d in at_600_steps.values()), at_600_steps
