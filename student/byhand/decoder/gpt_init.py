"""The check of `GPT_init` (lesson 07_decoder): its cases, the helper that reports a fresh model's
parameters (`init_stats`, run where the student's code runs) and its judge."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import _core
from .._core import Case, call, gen, got_expected, helper, hint_line, let, new, ref
from .._judge import CheckFailure, expect_tensor
from ..i18n import N_, msg
from ._shared import F64, _pair

EARLIER = ("CausalSelfAttention",)  # what the GPT runs: the reference when the student's fails
BUILDS_ON = ("GPT",)  # the question is about the student's GPT itself (its initialization)

# GPT_init: a fresh model predicts the uniform distribution, so its loss is close to ln V


def _init_cases(hidden):
    specs = [(50, 32, 4, 2, 16, 1)] if not hidden else [(97, 48, 4, 2, 24, 2), (300, 64, 8, 1, 32, 3)]
    cases = []
    for v, d, h, n, max_len, sd in specs:
        g = gen(7500 + sd)
        idx = torch.randint(0, v, (8, max_len), generator=g)
        targets = torch.randint(0, v, (8, max_len), generator=g)
        cases.append(
            Case(
                msg(
                    "a fresh {model} (torch.manual_seed({seed})), idx {shape}",
                    model=f"GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len})",
                    seed=sd,
                    shape=tuple(idx.shape),
                ),
                [
                    _core.seed(sd),
                    new("model", "GPT", v, d, h, n, max_len),
                    let("idx", idx),
                    call("out", ref("model"), ref("idx")),
                    call("stats", helper("decoder.init_stats"), ref("model")),
                ],
                ["out", "stats"],
                facts=dict(v=v, d=d, n=n, idx=idx, targets=targets),
                size=v * d,
            )
        )
    return cases


INIT_MARGIN = 0.1  # |initial loss - ln V|; measured: 0.01-0.02 with std 0.02, > 3 with N(0, 1) embeddings
INIT_STD = 0.02  # GPT-2's; the residual projections may be scaled down by 1/sqrt(2 n_layers) (nanoGPT)


def init_stats(model) -> list:
    """[name, numel, mean, std, largest |value|] of each parameter of a fresh model (a tied one once),
    reported from the student's kernel; the judge decides from these numbers."""
    rows = []
    with torch.no_grad():
        for name, p in list(model.named_parameters())[:200]:
            t = p.detach().double().reshape(-1)
            n = t.numel()
            if t.is_meta:  # no data to read (tests/test_devices.py runs every case on "meta")
                rows.append([str(name)[:80], int(n), 0.0, 0.0, 0.0])
                continue
            std = float(t.std()) if n > 1 else 0.0
            rows.append(
                [
                    str(name)[:80],
                    int(n),
                    float(t.mean()) if n else 0.0,
                    std,
                    float(t.abs().max()) if n else 0.0,
                ]
            )
    return rows


def _init_stats_judge(stats, n_layers: int) -> None:
    """Embedding and Linear weights drawn from N(0, 0.02^2) (down to 0.02 / sqrt(2 n_layers) for
    the residual projections), their biases 0; LayerNorms are left as PyTorch makes them."""
    if not isinstance(stats, (list, tuple)) or not all(
        isinstance(r, (list, tuple)) and len(r) == 5 and isinstance(r[0], str) for r in stats
    ):
        raise CheckFailure(
            msg("the fresh GPT's parameters could not be read back: {got}", got=f"{stats!r:.80}")
        )
    low, high = 0.8 * INIT_STD / math.sqrt(2 * n_layers), 1.2 * INIT_STD
    for name, n, mean, std, largest in stats:
        parts = name.split(".")
        if any(part.startswith("ln") for part in parts) or n < 2:
            continue
        if parts[-1] == "bias" and largest != 0:
            raise CheckFailure(
                msg("a fresh GPT is not initialized as GPT-2 is: a bias does not start at 0.")
                + got_expected(
                    msg("{name} with largest |value| {largest}", name=name, largest=f"{largest:.3g}"),
                    f"{name} = 0",
                )
                + hint_line(
                    N_(
                        "GPT-2 starts every Linear's bias at 0: nn.init.zeros_(m.bias) for each nn.Linear "
                        "that has one"
                    )
                )
            )
        if parts[-1] != "weight":
            continue
        if not low <= std <= high or abs(mean) > 6 * std / math.sqrt(n) + 1e-4:
            raise CheckFailure(
                msg("a fresh GPT is not initialized as GPT-2 is: a weight is not drawn from N(0, 0.02^2).")
                + got_expected(
                    f"{name}: mean={mean:.3g}, std={std:.3g}",
                    msg(
                        "mean=0, std=0.02 (down to 0.02 / sqrt(2 * n_layers) = {std} for a residual projection)",
                        std=f"{INIT_STD / math.sqrt(2 * n_layers):.3g}",
                    ),
                )
                + hint_line(
                    N_(
                        "GPT-2 draws the embeddings and every Linear weight from N(0, 0.02^2): "
                        "nn.init.normal_(m.weight, mean=0.0, std=0.02)"
                    )
                )
            )


def _init_judge(case, out):
    v, targets = case.facts["v"], case.facts["targets"]
    logits, _ = _pair(out["out"], "GPT(idx)")
    expect_tensor(logits, msg("{module} logits", module="GPT"), shape=(*targets.shape, v))
    loss = F.cross_entropy(logits.to(F64).reshape(-1, v), targets.reshape(-1)).item()
    if not abs(loss - math.log(v)) < INIT_MARGIN:
        idx, d = case.facts["idx"], case.facts["d"]
        z = logits.to(F64)
        own = z.gather(-1, idx[..., None])[..., 0]  # (B, T): the logit of the token that was read
        repeats = float((z.argmax(-1) == idx).double().mean())
        if repeats > 0.5:  # measured with N(0, 1) tied embeddings: 93-100% of positions
            others = z[~F.one_hot(idx, v).bool()]  # every other token's logit
            hint = msg(
                "your fresh GPT predicts the token it just read at {share} of the positions: that "
                "token's own logit is {own} on average (d_model = {d}), the others spread "
                "by {spread}. With large embeddings tied to the output layer, "
                "the last hidden state is mostly the input token's embedding, and its dot product with itself "
                "is its squared norm, about d_model for N(0, 1) entries. Initialize the weights small, as "
                "GPT-2 does: nn.init.normal_(std=0.02) for the embeddings and Linear weights, zero biases",
                share=f"{repeats:.0%}",
                own=f"{float(own.mean()):.1f}",
                d=d,
                spread=f"{float(others.std()):.1f}",
            )
        else:
            hint = N_(
                "initialize the weights small, as GPT-2 does: nn.init.normal_(std=0.02) for the embeddings and "
                "Linear weights, zero biases: then every logit starts near 0 and every prediction near uniform"
            )
        raise CheckFailure(
            msg("a fresh GPT should predict (nearly) the uniform distribution.")
            + got_expected(
                msg("loss {loss} on random tokens", loss=f"{loss:.3f}"),
                msg(
                    "ln V = ln {v} = {ln_v} (within {margin})",
                    v=v,
                    ln_v=f"{math.log(v):.3f}",
                    margin=INIT_MARGIN,
                ),
            )
            + hint_line(hint)
        )
    _init_stats_judge(out.get("stats"), case.facts["n"])
