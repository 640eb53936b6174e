"""cross_entropy: its cases, the reference (`F.cross_entropy`), the classic mistakes recomputed on the
same logits, their hints, and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _core
from .._core import LINE, Case, gen, got_expected, graded, helper, hint_line, rand
from .._core.steps import _student_line
from .._judge import CheckFailure, assert_close, diagnose, expect_scalar_tensor
from ..i18n import N_, msg
from ._shared import import_before_cases

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


# what the exercise rules out, by the name torch's function mode sees (a function of torch, of
# torch.nn.functional or torch.special, or the tensor's own method)
FORBIDDEN = {
    "logsumexp": "torch.logsumexp",
    "special_logsumexp": "torch.special.logsumexp",
    "log_softmax": "log_softmax",
    "special_log_softmax": "torch.special.log_softmax",
    "cross_entropy": "F.cross_entropy",
}


def _forbidden_mode():
    from torch.overrides import TorchFunctionMode

    class Watch(TorchFunctionMode):
        """Records the forbidden torch functions a call makes; calls them all as usual."""

        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = FORBIDDEN.get(str(getattr(func, "__name__", "")))
            if name and name not in self.seen:
                self.seen.append(name)
            return func(*args, **(kwargs or {}))

    return Watch()


def by_hand(fn, logits, targets):
    """`fn(logits, targets)` under a function mode that records the forbidden calls: ["ok", its result,
    the forbidden functions it called]. With more than one leading dim, an error the call raises is
    followed by the same call on the leading dims flattened: ["flat", the error, that call's result,
    (cell, line, code) of the line that raised], so the judge can tell an answer written for (N, V)
    only; when that call raises too, the first error goes on up as any answer's error does. Runs
    where the answer lives."""
    watch = _forbidden_mode()
    try:
        with watch:
            loss = fn(logits, targets)
    except Exception as exc:
        if logits.dim() <= 2:
            raise
        try:
            flat = fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        except Exception:  # noqa: BLE001 - not an answer for (N, V) either: its own error is the news
            raise exc from None
        at = _student_line(exc, getattr(fn, "__globals__", {})) or {}
        where = (at.get("cell", ""), at.get("line", 0), at.get("code", "")) if at else ()
        return ["flat", f"{type(exc).__name__}: {exc}"[:300], flat, where]
    return ["ok", loss, list(watch.seen)]


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
    import_before_cases()
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
                _core.calling(
                    "r",
                    helper("training.by_hand"),
                    dict(logits=logits, targets=targets),
                    graded("cross_entropy"),
                ),
                ["r", "logits", "targets"],
                facts=dict(logits=logits, targets=targets, large=abs(mean) > 100),
                size=logits.numel() + (10**6 if abs(mean) > 100 else 0),
            )
        )
    return cases


LEADING_DIMS = N_(
    "cross_entropy must accept logits with any number of leading dims, (..., V): yours gives the right "
    "loss on the same logits flattened to (N, V), but indexes as if there were only one, "
    "logits[torch.arange(N), targets]. Pick z_y along the last dim, logits.gather(-1, "
    "targets.unsqueeze(-1)), or flatten first, logits.reshape(-1, V) and targets.reshape(-1)"
)
FORBIDDEN_HINT = N_(
    "compute the log-sum-exp yourself, m + log(sum(exp(z - m))) with m the largest logit: torch.logsumexp, "
    "log_softmax and F.cross_entropy do the work this exercise asks for (they are what the check compares "
    "with)"
)


def _flat_only(case, r):
    """The failure of an answer that raised on (..., V) logits; the hint when, flattened to (N, V), the
    same logits give the right loss."""
    logits, targets = case.facts["logits"], case.facts["targets"]
    error, flat, at = str(r[1])[:300], r[2], r[3]
    expected = ref_cross_entropy(logits, targets)
    right = (
        isinstance(flat, torch.Tensor)
        and flat.numel() == 1
        and torch.isfinite(flat).all()
        and torch.allclose(flat.double().reshape(()), expected, rtol=1e-4, atol=1e-5)
    )
    where = ""  # the answer's line that raised, as an error names it
    if isinstance(at, (tuple, list)) and len(at) == 3 and isinstance(at[1], int) and at[1] > 0:
        cell, line, code = str(at[0])[:200], at[1], str(at[2] or "")[:200]
        if code:
            where = LINE + msg("in your code: {cell}, line {line}: {code}", cell=cell, line=line, code=code)
        else:
            where = LINE + msg("in your code: {cell}, line {line}", cell=cell, line=line)
    return CheckFailure(
        msg("cross_entropy raised an error on logits of shape {shape}.", shape=str(tuple(logits.shape)))
        + LINE
        + msg("the error: {error}", error=error)
        + where
        + (hint_line(LEADING_DIMS) if right else ""),
        hint=LEADING_DIMS if right else None,
    )


def _ce_judge(case, out):
    logits, targets = case.facts["logits"], case.facts["targets"]
    r = out["r"]
    if isinstance(r, (tuple, list)) and len(r) == 4 and r[0] == "flat":
        raise _flat_only(case, r)
    if not (isinstance(r, (tuple, list)) and len(r) == 3 and r[0] == "ok"):
        raise CheckFailure(msg("{name}: the grader could not read what it returned", name="cross_entropy"))
    got, seen = r[1], r[2]
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
    called = [str(n)[:40] for n in seen] if isinstance(seen, (tuple, list)) else []
    if called:
        raise CheckFailure(
            msg("cross_entropy calls {names}, which the exercise rules out.", names=", ".join(called))
            + got_expected(
                msg("a call of {names}", names=", ".join(called)),
                msg("the log-sum-exp computed by hand: the max, exp, sum and log"),
            )
            + hint_line(FORBIDDEN_HINT),
            hint=FORBIDDEN_HINT,
        )


def _core_inputs_unchanged(out, facts, names, who):
    from .._judge import inputs_unchanged

    inputs_unchanged(
        out, facts, names, who, msg("subtract the max out of place (x = logits - m), not logits -= m")
    )
