"""Lesson 06_transformer_block: the cases that run a module with dropout > 0 in training mode, and
their judge.

Dropout draws random masks, and the lesson prescribes where it applies (each sublayer's output,
after the ReLU, the attention weights through `self_attn`) but not in which order the masks are
drawn, so no single output can be compared with torch's. What every right answer shares is the
distribution of its outputs: the case runs the module on `COPIES` copies of one input (batches of
identical rows: one independent sample per row), and the judge compares the mean and the variance
of each output over the copies with those of torch's own module run the same way. Right
answers, however their masks are drawn, agree within a few standard errors; dropout never applied
gives identical copies; dropout at another place, or not rescaled, gives another spread.
"""

from __future__ import annotations

import math

import torch

from .._core import call, got_expected, hint_line, let, ref, seed
from .._judge import CheckFailure, expect_tensor
from ..i18n import N_, msg

COPIES = 8000
# Measured on the cases' own shapes at 8000 copies: the reference answer and a by-hand one against
# torch's module, the largest mean gap 1.9 to 2.9 standard errors, the largest |log-ratio| of two
# variances 0.04 to 0.08; each simulated mistake against them 13 standard errors or more in a mean,
# or 0.99 or more in the log-ratio (dropout missing after the ReLU: 1.46 to 2.2).
MAX_MEAN_GAP = 6.0  # in standard errors
MAX_LOG_VAR_RATIO = 0.25
# The copies go in CALLS calls of CHUNK rows, not one call of COPIES: an answer that takes the batch
# for the sequence (nn.MultiheadAttention without batch_first=True) builds a rows x rows attention
# matrix per position and head, 24 GB at 8000 rows (the self-check killed the kernel), 1 MB at 500.
CHUNK = 500
CALLS = COPIES // CHUNK
OUTPUTS = [f"y_drop{i}" for i in range(CALLS)]


def copies_steps(module: str, name: str, x, seed_value: int) -> list:
    """Steps that put `module` in training mode and call it `CALLS` times on `CHUNK` copies of x
    (1, ...) after seeding the global RNG (so an answer's own result is the same at every run); the
    outputs are `OUTPUTS`."""
    return [
        call("_mode", ref(module, "train")),
        let(name, x.expand(CHUNK, *x.shape[1:]).contiguous()),
        seed(seed_value),
        *(call(out, ref(module), ref(name)) for out in OUTPUTS),
    ]


def copies_label(module: str, what: str, shape, dtype: str):
    """The label of a case that calls `module` `CALLS` times on `CHUNK` copies of `what` (x or tokens)."""
    return msg(
        "{module} in training mode, called {calls} times on {n} copies of {what} {shape} {dtype}",
        module=module,
        calls=str(CALLS),
        n=str(CHUNK),
        what=what,
        shape=str(tuple(shape)),
        dtype=dtype,
    )


def _spread(got: torch.Tensor, exp: torch.Tensor):
    """(largest gap between the two means per output, in standard errors; largest |log ratio| of
    the two variances; the mean std of `got` over the copies; that of `exp`)."""
    n = got.shape[0]
    g, e = got.to(torch.float64), exp.to(torch.float64)
    mg, me, vg, ve = g.mean(0), e.mean(0), g.var(0), e.var(0)
    tiny = 1e-12 * float(ve.mean()) + 1e-300
    gap = ((mg - me).abs() / torch.sqrt((vg + ve) / n + tiny)).max()
    ratio = torch.log((vg + tiny) / (ve + tiny)).abs().max()
    return float(gap), float(ratio), float(vg.sqrt().mean()), float(ve.sqrt().mean())


def same_spread(got: torch.Tensor, exp: torch.Tensor) -> bool:
    gap, ratio, _, _ = _spread(got, exp)
    return gap <= MAX_MEAN_GAP and ratio <= MAX_LOG_VAR_RATIO


def forked(seed_value: int, compute):
    """`compute()` with the global RNG seeded, and left as it was afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_value)
        return compute()


def judge_copies(
    name: str, reference: str, p: float, out: dict, exp: torch.Tensor, never: str, mistakes: list
):
    """The answer's outputs on the copies (`OUTPUTS` of `out`) against `exp`, torch's on all `COPIES`
    at once. `never`: the hint when every
    copy gave the same output (dropout never applied: that is what the answer did, exactly);
    `mistakes`: (hint, function computing that mistake's outputs on the copies), named when the
    answer's outputs are spread as that mistake's are and not as torch's."""
    what = msg("{x} output", x=name)
    got = torch.cat([expect_tensor(out[k], what, shape=(CHUNK, *exp.shape[1:])) for k in OUTPUTS])
    if torch.isnan(got).any():
        raise CheckFailure(msg("{what} contains NaN.", what=what))
    if same_spread(got, exp):
        return
    gap, ratio, std, std_exp = _spread(got, exp)
    hint = ""
    if torch.equal(got, got[:1].expand_as(got)):
        hint = never
    else:
        for mistake_hint, compute in mistakes:
            if same_spread(got, compute()):
                hint = mistake_hint
                break
    raise CheckFailure(
        msg(
            "{module} with dropout={p} in training mode, run on {n} copies of one input ({calls} calls): its "
            "outputs do not vary over the copies as those of {reference} do.",
            module=name,
            p=str(p),
            n=str(COPIES),
            calls=str(CALLS),
            reference=reference,
        )
        + got_expected(
            msg(
                "std over the copies {std} (mean over the outputs); means up to {gap} standard errors, "
                "variances up to {ratio}x away from the reference's",
                std=f"{std:.4g}",
                gap=f"{gap:.3g}",
                ratio=f"{math.exp(ratio):.3g}" if ratio < math.log(1e6) else "> 1e6",
            ),
            msg(
                "std {std}; means within {gap} standard errors, variances within {ratio}x",
                std=f"{std_exp:.4g}",
                gap=f"{MAX_MEAN_GAP:g}",
                ratio=f"{math.exp(MAX_LOG_VAR_RATIO):.3g}",
            ),
        )
        + hint_line(
            hint
            or N_(
                "dropout goes where nn.TransformerEncoderLayer puts it: on the attention weights "
                "(self_attn built with dropout=dropout), after the ReLU, and on each sublayer's output "
                "before the residual sum; use nn.Dropout or F.dropout(t, p, training=self.training), "
                "which rescale what they keep by 1/(1-p)"
            )
        ),
        hint=hint,
    )
