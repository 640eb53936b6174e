"""cross_entropy: its cases, the reference (`F.cross_entropy`), the classic mistakes recomputed on the
same logits, their hints, and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _core
from .._core import Case, gen, got_expected, hint_line, rand
from .._judge import CheckFailure, assert_close, diagnose, expect_scalar_tensor
from ..i18n import N_, msg

# ---------------------------------------------------------------------------------------------
# cross_entropy

_CE_HINTS = {
    "sum": N_("the losses are summed: cross_entropy is the mean over all positions"),
    "negated": N_("the sign is flipped: the loss is logsumexp(logits) - logits[target], positive"),
    "max_not_added": N_(
        "the max subtracted for stability is not added back: logsumexp(x) = m + log(sum(exp(x - m))) "
        "with m the largest logit"
    ),
    "target_dim": N_(
        "the target logits are picked along the wrong dim: take logits[..., target] from the last dim "
        "(gather(-1, targets.unsqueeze(-1)))"
    ),
}
CE_CALL = N_("cross_entropy(logits, targets)")  # what is compared: a name with words in Chinese
OVERFLOW = N_(
    "cross-entropy overflows: exp of a large logit is inf (softmax, then log, gives inf or nan); "
    "subtract the largest logit first (log-sum-exp), logsumexp(logits) - logits[target]"
)


def ref_cross_entropy(logits, targets):
    return F.cross_entropy(logits.double().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _ce_mistake(logits, targets, key):
    x = logits.double()
    picked = x.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    lse = torch.logsumexp(x, -1)
    if key == "sum":
        return (lse - picked).sum()
    if key == "negated":
        return (picked - lse).mean()
    if key == "max_not_added":
        return (lse - x.amax(-1) - picked).mean()
    if key == "target_dim" and x.dim() >= 2 and x.shape[-2] > int(targets.max()):
        return (lse - x.transpose(-1, -2).gather(-2, targets.unsqueeze(-2)).squeeze(-2)).mean()
    raise ValueError(key)


# (leading dims, V, mean, std, dtype)
_CE_SPECS = [
    ((7,), 11, 0.5, 2.0, torch.float32),
    ((2, 5), 13, -1.0, 3.0, torch.float64),
    ((3, 2, 4), 6, 2.0, 1.5, torch.float32),
    ((4,), 9, 500.0, 300.0, torch.float32),  # exp overflows in float32 above 88
    ((2, 3), 7, 3000.0, 800.0, torch.float64),  # ... and in float64 above 709
]
_CE_HIDDEN = [
    ((12,), 31, 1.0, 4.0, torch.float64),
    ((3, 7), 17, -2.0, 2.5, torch.float32),
    ((2, 2, 5), 8, 0.0, 1.0, torch.float64),
    ((5, 3), 10, 1000.0, 200.0, torch.float32),
    ((6,), 12, -5000.0, 1500.0, torch.float64),
]


def _ce_cases(hidden):
    cases = []
    for i, (lead, v, mean, std, dt) in enumerate(_CE_HIDDEN if hidden else _CE_SPECS):
        g = gen(12000 + 17 * i + (500 if hidden else 0))
        logits = rand(*lead, v, dtype=dt, mean=mean, std=std, generator=g)
        targets = torch.randint(0, v, lead, generator=g)
        cases.append(
            Case(
                msg(
                    "logits {shape} {dtype} (mean {mean}, std {std}), targets {targets}",
                    shape=str(tuple(logits.shape)),
                    dtype=str(dt),
                    mean=str(mean),
                    std=str(std),
                    targets=str(tuple(targets.shape)),
                ),
                _core.calling("loss", "cross_entropy", dict(logits=logits, targets=targets)),
                ["loss", "logits", "targets"],
                facts=dict(logits=logits, targets=targets, large=abs(mean) > 100),
                size=logits.numel() + (10**6 if abs(mean) > 100 else 0),
            )
        )
    return cases


def _ce_judge(case, out):
    logits, targets = case.facts["logits"], case.facts["targets"]
    got = out["loss"]
    if isinstance(got, torch.Tensor) and got.numel() > 1:
        raise CheckFailure(
            msg("cross_entropy should return one number, the mean over all positions.")
            + got_expected(
                msg("a tensor of shape {shape}", shape=tuple(got.shape)), msg("shape () (a scalar tensor)")
            )
            + hint_line(
                msg("average the per-position losses: .mean() over every position, not only the last dim")
            )
        )
    got = expect_scalar_tensor(got, CE_CALL)  # the type before the value: the exercise returns a tensor
    expected = ref_cross_entropy(logits, targets)
    if not torch.isfinite(got).all():
        raise CheckFailure(
            msg("cross_entropy(logits, targets) is not finite.")
            + got_expected(str(float(got)), f"{float(expected):.6g}")
            + hint_line(OVERFLOW),
            hint=OVERFLOW,
        )
    hint = diagnose(
        got,
        [(h, lambda k=k: _ce_mistake(logits, targets, k)) for k, h in _CE_HINTS.items()],
        rtol=1e-4,
        atol=1e-6,
    )
    rtol, atol = (1e-5, 1e-5) if logits.dtype == torch.float32 else (1e-9, 1e-9)
    assert_close(
        got,
        expected.to(got.dtype),
        CE_CALL,
        hint or msg("the mean over positions of logsumexp(logits) - logits[target]"),
        rtol=rtol,
        atol=atol * max(1.0, abs(float(expected))),
    )
    _core_inputs_unchanged(out, case.facts, ("logits", "targets"), "cross_entropy")


def _core_inputs_unchanged(out, facts, names, who):
    from .._judge import inputs_unchanged

    inputs_unchanged(
        out, facts, names, who, msg("subtract the max out of place (x = logits - m), not logits -= m")
    )
