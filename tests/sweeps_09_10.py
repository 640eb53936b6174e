"""The sweeps behind the trained and float32 claims of lessons 09 and 10, shared by their claims tests and
runnable by hand to re-measure the ranges the lessons and docs/api/09_modern_block.md and
docs/api/10_flash_attention.md state (one setting per process, one thread each):

    .venv/bin/python tests/sweeps_09_10.py 09 lr1e-3 3000-3019
    .venv/bin/python tests/sweeps_09_10.py 10 std9 3000-3019

The experiment code is the lesson's own (see lesson_code.py); a setting only changes its arguments.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

# Lesson 09: the notebook trains at lr 3e-3 for 200 steps at width 32 on windows of 16 tokens (17 with the
# target); each setting changes one of them.
SETTINGS_09 = {
    "lesson": {},
    "lr1e-3": {"lr": 1e-3},
    "lr6e-3": {"lr": 6e-3},
    "steps600": {"steps": 600},
    "width64": {"width": 64},
    "T32": {"T": 32},
}

# Lesson 10: q, k, v of std s give scores q.k/sqrt(d) of std about s^2 (the notebook: s = 3, std 9).
SETTINGS_10 = {"std1": 1.0, "std5": math.sqrt(5), "std9": 3.0}
BLOCKS_10 = (16, 32, 64)


# The models each setting trains (the claims it measures): RoPE against learned positions at the
# lesson's settings, at lr 1e-3, at 600 steps and trained on 32 tokens; the rest everywhere but T32.
ALL_MODELS = ("llama", "relu", "gpt", "learned")
MODELS_09 = {"lr6e-3": ALL_MODELS[:3], "width64": ALL_MODELS[:3], "T32": ("llama", "learned")}


def train_09(ns: dict, seed: int, setting: str) -> dict:
    """One seed of lesson 09's section 5 at `setting`: held-out losses (nats per token) of its models, at
    the training length T (llama, relu, gpt) and, for RoPE against learned positions, on windows of 4 T
    tokens (rope_in: positions 0 to T - 1, rope_out and learned_out: T to 4 T - 1)."""
    how = dict(SETTINGS_09[setting])
    width = how.pop("width", ns["D"])
    T = how.get("T", ns["T_TRAIN"])
    models = MODELS_09.get(setting, ALL_MODELS)
    loss, build = ns["held_out_loss"], ns["llama"]
    out = {}
    llama = build(seed, width=width, **how)
    out["llama"] = loss(llama, T=T).mean().item()
    if "relu" in models:
        out["relu"] = loss(build(seed, ffn="relu", width=width, **how), T=T).mean().item()
    if "gpt" in models:
        out["gpt"] = loss(ns["gpt"](seed, width=width, **how), T=T).mean().item()
    if "learned" in models:
        rope_long = loss(llama, T=4 * T)
        learned_long = loss(build(seed, learned_positions=4 * T, width=width, **how), T=4 * T)
        out.update(
            rope_in=rope_long[:T].mean().item(),
            rope_out=rope_long[T:].mean().item(),
            learned_out=learned_long[T:].mean().item(),
        )
    return out


def differences_09(r: dict) -> dict:
    """The compared differences of one seed's losses: llama-gpt, llama-relu, learned-rope, rope_rise."""
    out = {}
    if "gpt" in r:
        out["llama-gpt"] = r["llama"] - r["gpt"]
    if "relu" in r:
        out["llama-relu"] = r["llama"] - r["relu"]
    if "learned_out" in r:
        out["learned-rope"] = r["learned_out"] - r["rope_out"]
        out["rope_rise"] = r["rope_out"] - r["rope_in"]
    return out


def float32_errors_10(ns: dict, seed: int, scale: float, block: int) -> tuple[float, float]:
    """Largest float32 error against float64 of lesson 1's attention and of the blocked forward pass
    (causal, L = 200, d = 32, the notebook's shapes), q, k, v of std `scale`."""
    att, fwd = ns["attention"], ns["flash_attention_forward"]
    g = torch.Generator().manual_seed(seed)
    q, k, v = (scale * torch.randn(2, 200, 32, dtype=torch.float64, generator=g) for _ in range(3))
    exact = att(q, k, v, is_causal=True)
    q32, k32, v32 = q.float(), k.float(), v.float()
    naive = (att(q32, k32, v32, is_causal=True) - exact).abs().max().item()
    flash = (fwd(q32, k32, v32, is_causal=True, block_q=block, block_k=block)[0] - exact).abs().max().item()
    return naive, flash


def _seeds(text: str) -> range:
    first, last = (int(x) for x in text.split("-"))
    return range(first, last + 1)


def main(argv: list[str]) -> None:
    lesson, setting, seeds = argv[0], argv[1], _seeds(argv[2])
    root = Path(__file__).resolve().parent
    sys.path[:0] = [str(root), str(root.parent)]
    from lesson_code import definitions, upper_case_names

    if lesson == "09":
        ns = definitions("09_modern_block", assigns=upper_case_names, run_plain=True)
    else:
        ns = definitions("10_flash_attention", assigns=lambda node: False, skip_setup=False)
    torch.set_num_threads(1)
    for seed in seeds:
        if lesson == "09":
            r = train_09(ns, seed, setting)
            diffs = " ".join(f"{k}={v:+.4f}" for k, v in differences_09(r).items())
            print(
                f"09 {setting} seed {seed}: " + " ".join(f"{k}={v:.4f}" for k, v in r.items()) + " " + diffs,
                flush=True,
            )
        else:
            for block in BLOCKS_10:
                naive, flash = float32_errors_10(ns, seed, SETTINGS_10[setting], block)
                print(
                    f"10 {setting} block {block} seed {seed}: naive={naive:.3e} flash={flash:.3e} "
                    f"ratio={flash / naive:.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
