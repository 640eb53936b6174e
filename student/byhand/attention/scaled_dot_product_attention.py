"""Lesson 01_attention, `scaled_dot_product_attention`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .. import _core, _judge
from .._core import Case, call, gen, got_expected, hint_line, let, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import ref_sdpa, ref_weights, reference_sdpa

REFERENCE = reference_sdpa  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention


def _mask_words(kind, shape: str):
    """A case label's mask: its shape (or None) and, in words, what kind of mask it is."""
    if kind == "random":
        return msg("{shape} (random)", shape=shape)
    if kind == "causal":
        return msg("{shape} (causal)", shape=shape)
    if kind == "dead_row":
        return msg("{shape} (dead_row)", shape=shape)
    if kind == "broadcast":
        return msg("{shape} (broadcast)", shape=shape)
    assert kind is None, kind
    return msg("{shape} (none)", shape=shape)


def _sdpa_cases(hidden):
    # (batch dims, Lq, Lk, d_k, d_v, mask kind, dtype)
    shapes = [
        ((2,), 3, 5, 8, 6, None, torch.float32),
        ((2, 3), 5, 4, 16, 7, "random", torch.float32),
        ((3,), 6, 6, 12, 5, "causal", torch.float64),
        ((2, 2), 4, 7, 9, 3, "dead_row", torch.float32),
    ]
    seeds = [0]
    if hidden:
        shapes = [
            ((3, 2), 7, 9, 32, 10, "broadcast", torch.float64),
            ((4,), 9, 9, 24, 11, "causal", torch.float32),
            ((2, 3), 6, 8, 20, 13, "dead_row", torch.float64),
            ((5,), 8, 11, 64, 6, None, torch.float32),
        ]
        seeds = [1, 2]
    cases = []
    for s in seeds:
        for bd, lq, lk, dk, dv, mk, dt in shapes:
            g = gen(1000 * s + lq * 31 + lk)
            q = rand(*bd, lq, dk, dtype=dt, mean=0.5, std=2.0, generator=g)
            k = rand(*bd, lk, dk, dtype=dt, mean=-0.3, std=1.5, generator=g)
            v = rand(*bd, lk, dv, dtype=dt, mean=1.0, std=3.0, generator=g)
            mask = _core.random_mask(mk, bd, lq, lk, g)
            steps = [let("q", q), let("k", k), let("v", v)]
            if mask is None:
                steps.append(call("out", "scaled_dot_product_attention", ref("q"), ref("k"), ref("v")))
            else:
                steps += [
                    let("mask", mask),
                    call(
                        "out", "scaled_dot_product_attention", ref("q"), ref("k"), ref("v"), mask=ref("mask")
                    ),
                ]
            label = msg(
                "q {q}, k {k}, v {v}, {dtype}, mask={mask}, seed {seed}",
                q=str(tuple(q.shape)),
                k=str(tuple(k.shape)),
                v=str(tuple(v.shape)),
                dtype=str(dt),
                mask=_mask_words(mk, "None" if mask is None else str(tuple(mask.shape))),
                seed=str(s),
            )
            cases.append(
                Case(
                    label,
                    steps,
                    ["out", "q", "k", "v"] + (["mask"] if mask is not None else []),
                    facts=dict(q=q, k=k, v=v, mask=mask),
                    size=q.numel() + k.numel(),
                )
            )
    return cases


_FINITE_FILL = N_(
    "a row with no allowed key got uniform weights 1/Lk instead of 0: filling masked scores with a large "
    "finite number (-1e9, torch.finfo.min) leaves softmax(-1e9, ..., -1e9) = 1/Lk, because -1e9 is "
    "finite. Fill with float('-inf') and turn the NaN rows into 0 (torch.nan_to_num), or zero the "
    "weights of rows where mask.any(-1) is False"
)


def _sdpa_mistakes(q, k, mask):
    """(hint, weights) of the classic mistakes, one at a time and two at once."""
    d = q.shape[-1]
    singles = [
        (N_("the scores are not scaled: divide q @ k^T by sqrt(d_k)"), dict(scale=1.0)),
        (N_("the scores are divided by d_k: divide by sqrt(d_k), the std of q.k"), dict(scale=1.0 / d)),
        (
            N_("your weights sum to 1 over the queries (dim -2), not the keys: check the softmax dim"),
            dict(softmax_dim=-2),
        ),
    ]
    if mask is not None:
        singles += [
            (
                N_(
                    "the mask polarity is inverted: True means 'may attend', so fill the scores where the "
                    "mask is False with -inf"
                ),
                dict(mask=~mask),
            ),
            (N_("the mask is ignored: fill the scores where mask is False with -inf"), dict(mask=None)),
            (
                N_(
                    "masked scores are set to 0 instead of -inf: exp(0) = 1 still gives masked keys weight; "
                    "use float('-inf')"
                ),
                dict(masked_value=0.0),
            ),
        ]
        if not bool(mask.any(-1).all()):  # a fully masked row tells a finite fill from -inf
            singles.append((_FINITE_FILL, dict(masked_value=-1e9)))

    def kwargs(**kw):
        return {"mask": mask, **kw}

    return _judge.with_pairs(singles, lambda **kw: ref_weights(q, k, **kwargs(**kw)))


def _sdpa_judge(case, out):
    f = case.facts
    q, k, v, mask = f["q"], f["k"], f["v"], f["mask"]
    res = out["out"]
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        raise CheckFailure(
            msg(
                "scaled_dot_product_attention should return a pair (output, weights), got {got}",
                got=type(res).__name__,
            )
        )
    output, weights = res
    exp_out, exp_w = ref_sdpa(q, k, v, mask)
    expect_tensor(weights, N_("weights"), shape=exp_w.shape)
    expect_tensor(output, N_("output"), shape=exp_out.shape)
    if weights.dtype != q.dtype or output.dtype != q.dtype:
        raise CheckFailure(
            msg("output and weights should keep the input dtype.")
            + got_expected(f"{output.dtype}, {weights.dtype}", str(q.dtype))
        )
    if torch.isnan(weights).any() or torch.isnan(output).any():
        raise CheckFailure(
            msg(
                "your result contains NaN. A query row whose keys are all masked gives "
                "softmax(-inf, ..., -inf) = NaN."
            )
            + hint_line(
                N_(
                    "a fully masked row must give weights 0 and output 0: e.g. torch.nan_to_num the weights, "
                    "or zero the rows with mask.any(-1) == False"
                )
            )
        )
    hint = diagnose(weights, _sdpa_mistakes(q, k, mask))
    assert_close(weights, exp_w.to(weights.dtype), N_("weights"), hint)
    assert_close(
        output,
        exp_out.to(output.dtype),
        N_("output"),
        N_("weights are right but output is not: it should be weights @ v"),
    )
    for name in ("q", "k", "v", "mask"):
        if name in out and not _judge.close(out[name], f[name]):
            # the way an input is usually changed in place: scaled (q /= s), or a mask inverted
            fix = (
                msg("{a}, not {b}", a="~mask", b="mask.logical_not_()")
                if name == "mask"
                else msg("{a}, not {b} or {c}", a=f"{name} / s", b=f"{name}.div_(s)", c=f"{name} /= s")
            )
            raise CheckFailure(
                msg(
                    "scaled_dot_product_attention modified its input {name} in place: use out-of-place ops ({fix})",
                    name=name,
                    fix=fix,
                )
            )
