"""Checks for lesson 12_training: the training loop by hand.

The references are PyTorch's own: `F.cross_entropy`, `torch.optim.AdamW` (foreach=False),
`torch.nn.utils.clip_grad_norm_`, run in the judge's process on the inputs the case sent. The
schedule has no single torch class; its reference is the contract's formula (its cosine part is
`torch.optim.lr_scheduler.CosineAnnealingLR`'s closed form, tests/test_claims_12.py checks that).

The stateful exercises run through helpers in the student's kernel, which return plain numbers
only: `run_adamw` trains a few parameters for hundreds of steps on a noisy quadratic (the gradient
is recomputed from the parameters each step, so a wrong update changes every later gradient),
changes the learning rate as a schedule would, leaves one parameter without a gradient, and in
some cases round-trips the optimizer through `state_dict()` halfway; `clip` clips gradients of
fresh parameters; `batches` draws windows from a numpy array, an `np.memmap` or a tensor with
seeded generators; `resume` trains a small model, checkpoints it, keeps going, then loads the
checkpoint into a fresh model and optimizer and trains again. On a mismatch the classic mistakes
are recomputed here with one thing changed, so the hint names the one the answer makes.
"""

from __future__ import annotations

import copy
import io
import math
import os
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from . import _core
from ._core import LINE, Case, Question, call, gen, got_expected, graded, helper, hint_line, let, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, Msg, msg

LESSON = "12_training"
HELPERS = ("run_adamw", "schedule", "clip", "batches", "resume")
F64 = torch.float64

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
    got = expect_tensor(out["loss"], CE_CALL)
    if got.numel() != 1:
        raise CheckFailure(
            msg("cross_entropy should return one number, the mean over all positions.")
            + got_expected(
                msg("a tensor of shape {shape}", shape=tuple(got.shape)), msg("shape () (a scalar tensor)")
            )
            + hint_line(
                msg("average the per-position losses: .mean() over every position, not only the last dim")
            )
        )
    got = got.reshape(())
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
    from ._judge import inputs_unchanged

    inputs_unchanged(
        out, facts, names, who, msg("subtract the max out of place (x = logits - m), not logits -= m")
    )


# ---------------------------------------------------------------------------------------------
# AdamW: a noisy quadratic, the gradient recomputed from the parameters at every step


def _problem(shapes, seed):
    """The curvature, the minimum and the noise of each parameter (float64)."""
    g = torch.Generator().manual_seed(seed)
    curv = [torch.rand(s, dtype=F64, generator=g) * 1.5 + 0.5 for s in shapes]
    centre = [torch.randn(s, dtype=F64, generator=g) * 2 + 1 for s in shapes]
    return curv, centre, g


def _grads(params, curv, centre, g, frozen, scale=1.0):
    """The gradient of each parameter at its current value, times `scale` (None for the frozen one)."""
    out = []
    for i, p in enumerate(params):
        noise = (torch.randn(p.shape, dtype=F64, generator=g) * 0.5).to(p.device)
        grad = (curv[i].to(p.device) * (p.detach().double() - centre[i].to(p.device)) + noise) * scale
        out.append(None if i == frozen else grad.to(p.dtype))
    return out


def _lr_at(lr, t, steps, scheduled):
    """The learning rate of step t: constant, or a warm-up and a decay as a schedule would set it."""
    if not scheduled:
        return lr
    warm = max(1, steps // 10)
    return lr * (t + 1) / warm if t < warm else lr * (0.1 + 0.9 * (1 + math.cos(math.pi * t / steps)) / 2)


def _build(cls, params, groups, group_wd, kw):
    if groups:
        spec = [{"params": [params[i] for i in idx], "weight_decay": wd} for idx, wd in zip(groups, group_wd)]
        return cls(spec, **kw)
    return cls(params, **kw)


def run_adamw(
    cls, inits, lr, betas, eps, weight_decay, steps, seed, frozen=-1, groups=None, group_wd=None,
    scheduled=False, resume_at=-1, foreach=None, defaults=False, grad_scale=1.0,
):  # fmt: skip
    """Train parameters starting at `inits` with `cls` (the student's AdamW, or torch's: the judge
    runs the same function) for `steps` steps; returns (final parameters, state of parameter 0 as
    [step, exp_avg, exp_avg_sq] or the keys it has). `defaults`: built as cls(params), every
    hyperparameter the signature's default, the learning rate never set by the loop."""
    params = [p.detach().clone().requires_grad_(True) for p in inits]
    kw = {} if defaults else dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
    if foreach is not None:
        kw["foreach"] = foreach
    opt = _build(cls, params, groups, group_wd, kw)
    curv, centre, g = _problem([p.shape for p in params], seed)
    for t in range(steps):
        if t == resume_at:  # a fresh optimizer takes over from the state_dict
            state = copy.deepcopy(opt.state_dict())
            params = [p.detach().clone().requires_grad_(True) for p in params]
            opt = _build(cls, params, groups, group_wd, kw)
            opt.load_state_dict(state)
        if not defaults:
            for group in opt.param_groups:
                group["lr"] = _lr_at(lr, t, steps, scheduled)
        for p, grad in zip(params, _grads(params, curv, centre, g, frozen, grad_scale)):
            p.grad = grad
        opt.step()
    state = opt.state.get(params[0], {})
    keys = sorted(str(k) for k in state)
    if all(k in state for k in ("step", "exp_avg", "exp_avg_sq")):
        step = state["step"]
        step = float(step.item() if isinstance(step, torch.Tensor) else step)
        shown = [step, state["exp_avg"], state["exp_avg_sq"]]
    else:
        shown = keys
    return [p.detach() for p in params], shown


def _adamw_model(inits, f, mistake=None):
    """AdamW in float64 written out, with one classic mistake (a model for the hints)."""
    b1, b2 = f["betas"]
    lr, eps = f["lr"], f["eps"]
    wds = [f["weight_decay"]] * len(inits)
    if f["groups"] and mistake != "group_wd_ignored":
        for idx, wd in zip(f["groups"], f["group_wd"]):
            for i in idx:
                wds[i] = wd
    params = [p.double().clone() for p in inits]
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    n = [0] * len(params)
    curv, centre, g = _problem([p.shape for p in params], f["seed"])
    for t in range(f["steps"]):
        if t == f["resume_at"] and mistake == "state_lost":
            m = [torch.zeros_like(p) for p in params]
            v = [torch.zeros_like(p) for p in params]
            n = [0] * len(params)
        rate = lr if mistake == "lr_fixed" else _lr_at(lr, t, f["steps"], f["scheduled"])
        grads = _grads(params, curv, centre, g, f["frozen"], f["grad_scale"])
        for i, grad in enumerate(grads):
            p, wd = params[i], wds[i]
            if grad is None:
                if mistake == "frozen_decayed":
                    p.mul_(1 - rate * wd)
                continue
            n[i] += 1
            if mistake == "decay_in_grad":
                grad = grad + wd * p
            elif mistake not in ("decay_after", "decay_no_lr", "no_decay"):
                p.mul_(1 - rate * wd)
            elif mistake == "decay_no_lr":
                p.mul_(1 - wd)
            m[i] = b1 * m[i] + (1 - b1) * grad
            v[i] = b2 * v[i] + (1 - b2) * grad * grad
            bc1, bc2 = 1 - b1 ** n[i], 1 - b2 ** n[i]
            if mistake == "no_bias_correction":
                bc1 = bc2 = 1.0
            elif mistake == "bias_swapped":
                bc1, bc2 = bc2, bc1
            elif mistake == "bias_m_only":
                bc2 = 1.0
            elif mistake == "bias_v_only":
                bc1 = 1.0
            p.sub_(rate * (m[i] / bc1) / ((v[i] / bc2).sqrt() + eps))
            if mistake == "decay_after":
                p.mul_(1 - rate * wd)
    return params


_ADAMW_HINTS = {
    "no_bias_correction": N_(
        "Adam's bias correction is missing: divide the moments by 1 - beta1**t and 1 - beta2**t "
        "(t the step count, from 1), m_hat = m / (1 - beta1**t), v_hat = v / (1 - beta2**t)"
    ),
    "bias_swapped": N_(
        "the bias corrections are swapped: m (the mean of the gradients) is divided by 1 - beta1**t, "
        "v (the mean of their squares) by 1 - beta2**t"
    ),
    "bias_m_only": N_(
        "the bias correction is applied to m only: v needs its own, v_hat = v / (1 - beta2**t)"
    ),
    "bias_v_only": N_(
        "the bias correction is applied to v only: m needs its own, m_hat = m / (1 - beta1**t)"
    ),
    "decay_in_grad": N_(
        "weight decay is added to the gradient (L2 in the loss, Adam's way): AdamW decays the weights "
        "themselves, p = p * (1 - lr * weight_decay), outside the moments"
    ),
    "decay_after": N_(
        "the weight decay is applied after the Adam update, to the updated weights: torch.optim.AdamW "
        "shrinks the weights the step starts from, p = p * (1 - lr * weight_decay), then subtracts the update"
    ),
    "decay_no_lr": N_("the weight decay is not scaled by the learning rate: p = p * (1 - lr * weight_decay)"),
    "no_decay": N_("there is no weight decay: p = p * (1 - lr * weight_decay) before each update"),
    "lr_fixed": N_(
        "the learning rate is read once (in __init__ or from self.defaults): read group['lr'] at every "
        "step, a schedule changes it between steps"
    ),
    "group_wd_ignored": N_(
        "each parameter group's own weight_decay is ignored: read group['weight_decay'] (a group of "
        "biases and norms usually has 0)"
    ),
    "frozen_decayed": N_(
        "a parameter without a gradient was changed: skip it (if p.grad is None: continue), as "
        "torch.optim.AdamW does"
    ),
    "defaults": N_(
        "AdamW(params) without arguments does not use torch.optim.AdamW's defaults: lr=1e-3, "
        "betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01 in the signature of __init__"
    ),
    "state_lost": N_(
        "the optimizer's state did not survive state_dict() / load_state_dict(): keep step, exp_avg and "
        "exp_avg_sq in self.state[p] (torch.optim.Optimizer saves and restores exactly that), not in "
        "attributes of your own"
    ),
}

# (shapes, dtype, lr, betas, eps, weight_decay, steps, frozen, groups, group weight decays, scheduled,
#  resume at)
# lr None: AdamW(params), the signature's defaults (torch.optim.AdamW's: lr 1e-3, betas (0.9, 0.999),
# eps 1e-8, weight_decay 0.01)
_ADAMW_SPECS = [
    ([(3, 4), (5,)], F64, 0.05, (0.9, 0.95), 1e-8, 0.1, 200, -1, None, None, False, -1),
    ([(3, 2), (4,)], F64, None, None, None, None, 300, -1, None, None, False, -1),
    ([(2, 3), (4,), (3,)], torch.float32, 0.01, (0.9, 0.999), 1e-8, 0.5, 200, 2, None, None, True, -1),
    ([(4, 2), (3,), (2,)], F64, 0.03, (0.8, 0.99), 1e-6, 0.2, 200, -1, [[0], [1, 2]], [0.2, 0.0], True, 120),
]
_ADAMW_HIDDEN = [
    ([(5, 3), (7,)], F64, 0.02, (0.85, 0.98), 1e-8, 0.3, 300, -1, None, None, False, -1),
    ([(2, 4), (3,)], F64, None, None, None, None, 400, -1, None, None, False, -1),
    ([(3, 3), (2,), (6,)], torch.float32, 0.005, (0.9, 0.999), 1e-7, 0.05, 300, 1, None, None, True, -1),
    ([(2, 5), (4,), (3, 2)], F64, 0.04, (0.9, 0.97), 1e-8, 0.4, 300, 2, [[0, 2], [1]], [0.4, 0.0], True, 170),
]


def _adamw_cases(hidden):
    cases = []
    for i, spec in enumerate(_ADAMW_HIDDEN if hidden else _ADAMW_SPECS):
        shapes, dt, lr, betas, eps, wd, steps, frozen, groups, gwd, sched, resume = spec
        defaults = lr is None
        if defaults:
            lr, betas, eps, wd = 1e-3, (0.9, 0.999), 1e-8, 0.01
        g = gen(12100 + 31 * i + (500 if hidden else 0))
        inits = [rand(*s, dtype=dt, mean=0.5, std=2.0, generator=g) for s in shapes]
        seed = 12150 + i + (500 if hidden else 0)
        kw = dict(lr=lr, betas=list(betas), eps=eps, weight_decay=wd, steps=steps, seed=seed)
        extra = dict(frozen=frozen, scheduled=sched, resume_at=resume)
        if defaults:  # gradients of size 1e-8, where eps = 1e-8 (and where it sits) changes every step
            extra.update(defaults=True, grad_scale=1e-8)
        if groups:
            extra.update(groups=groups, group_wd=gwd)
        steps_ = [
            let("inits", inits),
            call("r", helper("training.run_adamw"), graded("AdamW"), ref("inits"), **kw, **extra),
        ]
        head = (
            msg("AdamW(params), its defaults, gradients of size 1e-8")
            if defaults
            else f"AdamW(lr={lr}, betas={betas}, eps={eps}, weight_decay={wd})"
        )
        shown = ", ".join(str(s) for s in shapes)  # data: the shapes
        words = [head, msg("{n} parameters {shapes} {dtype}", n=len(shapes), shapes=shown, dtype=str(dt)[6:])]
        if groups:
            words.append(msg("groups {groups} with weight_decay {wd}", groups=str(groups), wd=str(gwd)))
        if frozen >= 0:
            words.append(msg("parameter {i} without a gradient", i=frozen))
        if sched:
            words.append(N_("lr changed every step by a schedule"))
        if resume >= 0:
            words.append(msg("state_dict() loaded into a new AdamW at step {step}", step=resume))
        words.append(msg("{n} steps on a noisy quadratic", n=steps))
        label = _items(words)
        facts = dict(
            inits=inits, dtype=dt, lr=lr, betas=betas, eps=eps, weight_decay=wd, steps=steps, seed=seed,
            frozen=frozen, groups=groups, group_wd=gwd, scheduled=sched, resume_at=resume, defaults=defaults,
            grad_scale=1e-8 if defaults else 1.0,
        )  # fmt: skip
        cases.append(Case(label, steps_, ["r"], facts=facts, size=steps * (2 if resume >= 0 else 1)))
    return cases


def _items(items: list) -> Msg:
    """The items of a case label in order, the language's separator between them ("a, b, c")."""
    out = items[0]
    for item in items[1:]:
        out = msg("{a}, {b}", a=out, b=item)
    return out


def _torch_adamw(f):
    kw = dict(
        lr=f["lr"], betas=list(f["betas"]), eps=f["eps"], weight_decay=f["weight_decay"], steps=f["steps"]
    )
    return run_adamw(
        torch.optim.AdamW, f["inits"], **kw, seed=f["seed"], frozen=f["frozen"], groups=f["groups"],
        group_wd=f["group_wd"], scheduled=f["scheduled"], resume_at=f["resume_at"], foreach=False,
        defaults=f["defaults"], grad_scale=f["grad_scale"],
    )  # fmt: skip


def _adamw_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise CheckFailure(msg("the grader could not run AdamW (no results came back)"))
    got_params, state = r
    exp_params, exp_state = _torch_adamw(f)
    if not isinstance(got_params, (tuple, list)) or len(got_params) != len(exp_params):
        raise CheckFailure(msg("the grader could not read the parameters AdamW trained"))
    got_flat = torch.cat([expect_tensor(p, msg("a parameter")).reshape(-1).double() for p in got_params])
    exp_flat = torch.cat([p.reshape(-1).double() for p in exp_params])
    rtol, atol = (2e-4, 2e-5) if f["dtype"] == torch.float32 else (1e-7, 1e-9)
    keys = [k for k in _ADAMW_HINTS if (k != "state_lost" or f["resume_at"] >= 0) and k != "defaults"]
    keys = [k for k in keys if k != "lr_fixed" or f["scheduled"]]
    keys = [k for k in keys if k != "group_wd_ignored" or f["groups"]]
    keys = [k for k in keys if k != "frozen_decayed" or f["frozen"] >= 0]
    hint = diagnose(
        got_flat,
        [
            (_ADAMW_HINTS[k], lambda k=k: torch.cat([p.reshape(-1) for p in _adamw_model(f["inits"], f, k)]))
            for k in keys
        ],
        rtol=max(rtol, 1e-6),
        atol=max(atol, 1e-7),
    )
    if f["defaults"] and not hint:
        hint = _ADAMW_HINTS["defaults"]
    assert_close(
        got_flat,
        exp_flat.to(got_flat.dtype),
        msg("the parameters after {steps} steps (all of them, flattened)", steps=f["steps"]),
        hint
        or msg(
            "per step: p *= 1 - lr * weight_decay; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2; "
            "p -= lr * m_hat / (sqrt(v_hat) + eps), with m_hat, v_hat the bias-corrected moments"
        ),
        rtol=rtol,
        atol=atol,
    )
    if not isinstance(state, (tuple, list)) or len(state) != 3 or not isinstance(state[1], torch.Tensor):
        have = ", ".join(str(k) for k in state) if isinstance(state, (tuple, list)) else msg("nothing")
        raise CheckFailure(
            msg("AdamW's parameters are right, but its per-parameter state is not where it should be.")
            + got_expected(
                msg("self.state[p] with the keys: {keys}", keys=have or msg("none")),
                msg("self.state[p] with step, exp_avg and exp_avg_sq"),
            )
            + hint_line(
                msg(
                    "keep the step count and both moments in self.state[p] under the names step, exp_avg "
                    "and exp_avg_sq (what torch.optim.AdamW uses, and what state_dict() saves)"
                )
            )
        )
    step, m, v = state
    n_steps = f["steps"] - (f["resume_at"] if False else 0)
    if not isinstance(step, (int, float)) or float(step) != float(exp_state[0]):
        raise CheckFailure(
            msg("self.state[p]['step'] is not the number of steps taken.")
            + got_expected(repr(step), msg("{step} (after {n} steps)", step=f"{exp_state[0]:g}", n=n_steps))
            + hint_line(
                msg("count the steps of each parameter in self.state[p]['step'], from 1 at the first step")
            )
        )
    for name, got, exp in (("exp_avg", m, exp_state[1]), ("exp_avg_sq", v, exp_state[2])):
        assert_close(
            expect_tensor(got, msg("self.state[p]['{name}']", name=name), shape=exp.shape),
            exp.to(got.dtype),
            msg("self.state[p]['{name}'] after {steps} steps", name=name, steps=f["steps"]),
            msg(
                "exp_avg is the running mean of the gradients, exp_avg_sq that of their squares (not "
                "bias-corrected: the correction is applied when they are used)"
            ),
            rtol=rtol,
            atol=atol,
        )


# ---------------------------------------------------------------------------------------------
# lr_cosine_schedule


def schedule(fn, ts, lr_max, lr_min, warmup_iters, cosine_iters):
    """The schedule at each step of `ts`, as floats."""
    return [float(fn(t, lr_max, lr_min, warmup_iters, cosine_iters)) for t in ts]


def ref_schedule(t, lr_max, lr_min, w, c, mistake=None):
    if mistake == "warm_plus_one" and t < w:
        return (t + 1) * lr_max / w
    if mistake == "warm_minus_one" and t < w:
        return t * lr_max / (w - 1) if w > 1 else lr_max
    if mistake == "warm_le" and t <= w:
        return t * lr_max / w
    if t < w:
        return t * lr_max / w
    if t <= c or mistake == "no_floor":
        phase = (t - w) / (c - w)
        if mistake == "phase_plus_one":
            phase = (t - w + 1) / (c - w)
        elif mistake == "no_shift":
            phase = t / c
        low = 0.0 if mistake == "to_zero" else lr_min
        return low + (1 + math.cos(math.pi * phase)) * (lr_max - low) / 2
    return lr_min


_SCHED_HINTS = {
    "warm_plus_one": N_(
        "the warm-up is one step ahead: at step t < warmup_iters the rate is t * lr_max / warmup_iters "
        "(0 at t = 0, lr_max reached at t = warmup_iters), not (t + 1) * lr_max / warmup_iters"
    ),
    "warm_minus_one": N_(
        "the warm-up divides by warmup_iters - 1: the rate is t * lr_max / warmup_iters, reaching lr_max "
        "at t = warmup_iters, where the cosine starts"
    ),
    "phase_plus_one": N_(
        "the cosine is one step ahead at the warm-up boundary: its phase is (t - warmup_iters) / "
        "(cosine_iters - warmup_iters), 0 at t = warmup_iters (the rate is lr_max there)"
    ),
    "no_shift": N_(
        "the cosine does not start at the end of the warm-up: its phase is (t - warmup_iters) / "
        "(cosine_iters - warmup_iters), not t / cosine_iters"
    ),
    "to_zero": N_(
        "the cosine decays to 0, not to lr_min: lr_min + (1 + cos(pi * phase)) * (lr_max - lr_min) / 2"
    ),
    "no_floor": N_("after cosine_iters the rate should stay at lr_min, not follow the cosine back up"),
}


def _sched_cases(hidden):
    specs = [(1.0, 0.1, 7, 21), (3e-3, 3e-4, 10, 50), (0.5, 0.0, 1, 9)]
    if hidden:
        specs = [(6e-4, 6e-5, 100, 1000), (2.0, 0.5, 3, 4), (1e-2, 1e-3, 25, 60)]
    cases = []
    for lr_max, lr_min, w, c in specs:
        ts = list(range(0, c + 8))
        steps = [
            call("r", helper("training.schedule"), graded("lr_cosine_schedule"), ts, lr_max, lr_min, w, c)
        ]
        cases.append(
            Case(
                msg(
                    "{call} for t = 0..{last}",
                    call=f"lr_cosine_schedule(t, lr_max={lr_max}, lr_min={lr_min}, warmup_iters={w}, cosine_iters={c})",
                    last=c + 7,
                ),
                steps,
                ["r"],
                facts=dict(ts=ts, lr_max=lr_max, lr_min=lr_min, w=w, c=c),
                size=c,
            )
        )
    return cases


def _sched_judge(case, out):
    f = case.facts
    got = out["r"]
    if not isinstance(got, (tuple, list)) or len(got) != len(f["ts"]):
        raise CheckFailure(msg("the grader could not read the schedule's values (no results came back)"))
    got = torch.tensor([float(x) for x in got], dtype=F64)
    args = (f["lr_max"], f["lr_min"], f["w"], f["c"])
    exp = torch.tensor([ref_schedule(t, *args) for t in f["ts"]], dtype=F64)
    hint = diagnose(
        got,
        [
            (h, lambda k=k: torch.tensor([ref_schedule(t, *args, k) for t in f["ts"]], dtype=F64))
            for k, h in _SCHED_HINTS.items()
        ],
        rtol=1e-9,
        atol=1e-12,
    )
    bad = (got - exp).abs() > 1e-9 * f["lr_max"] + 1e-7 * exp.abs()
    if bad.any():
        t = f["ts"][int(bad.nonzero()[0])]
        default = msg(
            "warm-up t * lr_max / warmup_iters for t < warmup_iters, then the cosine down to lr_min at "
            "cosine_iters, then lr_min"
        )
        raise CheckFailure(
            msg("lr_cosine_schedule is wrong at t = {t}.", t=t)
            + got_expected(f"{float(got[t]):.6g}", f"{float(exp[t]):.6g}")
            + hint_line(hint or default),
            hint=hint or None,
        )


# ---------------------------------------------------------------------------------------------
# clip_grad_norm_


def clip(fn, grads, max_norm, as_generator=False):
    """Fresh parameters with these gradients (None: no gradient), clipped by `fn`; returns (what
    fn returned, the gradients after)."""
    params = []
    for grad in grads:
        p = torch.zeros(
            grad.shape if grad is not None else (2,),
            dtype=grad.dtype if grad is not None else F64,
            device=grad.device if grad is not None else None,
        )
        p.requires_grad_(True)
        p.grad = None if grad is None else grad.clone()
        params.append(p)
    norm = fn((p for p in params) if as_generator else params, max_norm)
    if isinstance(norm, torch.Tensor):
        norm = norm.detach()
    return norm, [p.grad for p in params]


_CLIP_HINTS = {
    "per_param": N_(
        "each gradient is clipped by its own norm: the norm is global, sqrt of the sum of every gradient's "
        "squared entries, and every gradient is scaled by the same max_norm / (norm + 1e-6)"
    ),
    "always": N_(
        "the gradients are scaled even when the norm is below max_norm: clip only when norm > max_norm "
        "(scale by min(1, max_norm / (norm + 1e-6)))"
    ),
    "sum_of_norms": N_(
        "the global norm is the sum of the per-parameter norms: it is the L2 norm of all entries "
        "together, sqrt(sum of each norm squared)"
    ),
    "generator": N_(
        "parameters may be a generator (model.parameters()): it can be read only once, so turn it "
        "into a list first (params = [p for p in parameters if p.grad is not None])"
    ),
    "norm_after": N_("the norm returned is the one after clipping: return the total norm before scaling"),
    "no_eps": N_(
        "the 1e-6 is missing: scale by max_norm / (norm + 1e-6), as torch does (it matters when the "
        "norm itself is tiny)"
    ),
}


def _clip_model(grads, max_norm, mistake=None):
    gs = [g.double() for g in grads if g is not None]
    norms = torch.stack([g.norm() for g in gs])
    total = norms.sum() if mistake == "sum_of_norms" else norms.norm()
    out = [None if g is None else g.double().clone() for g in grads]
    if mistake == "generator":
        return total, out
    for i, g in enumerate(out):
        if g is None:
            continue
        if mistake == "per_param":
            coef = min(1.0, max_norm / (float(g.norm()) + 1e-6))
        elif mistake == "no_eps":
            coef = min(1.0, max_norm / float(total))
        elif mistake == "always":
            coef = max_norm / (float(total) + 1e-6)
        else:
            coef = min(1.0, max_norm / (float(total) + 1e-6))
        out[i] = g * coef
    if mistake == "norm_after":
        total = torch.stack([g.norm() for g in out if g is not None]).norm()
    return total, out


def _clip_cases(hidden):
    # (shapes (None: no gradient), dtype, grad std, max_norm, as a generator)
    specs = [
        ([(3, 4), (5,), None, (2, 2, 3)], torch.float32, 1.0, 1.0, False),
        ([(6,), (2, 3)], F64, 0.1, 5.0, False),  # below max_norm: unchanged
        ([(4, 4), None, (7,), (1,)], F64, 3.0, 2.0, True),
        ([(5,), (2, 3)], F64, 1e-5, 1e-6, False),  # a tiny norm: the 1e-6 counts
    ]
    if hidden:
        specs = [
            ([(8, 3), (3,), (5, 2), None], torch.float32, 2.0, 0.5, False),
            ([(10,), (2, 2)], F64, 0.01, 1.0, False),
            ([(3, 3, 3), (1,), None, (9,)], F64, 1.0, 3.0, True),
            ([(4,), (3, 2), (2,)], F64, 2e-5, 3e-6, True),
        ]
    cases = []
    for i, (shapes, dt, std, max_norm, as_gen) in enumerate(specs):
        g = gen(12300 + 23 * i + (500 if hidden else 0))
        grads = [
            None if s is None else rand(*s, dtype=dt, mean=0.3 * std, std=std, generator=g) for s in shapes
        ]
        what = ", ".join("None" if s is None else str(s) for s in shapes)
        label = msg(
            "{call}, p.grad {shapes} {dtype} (std {std})",
            call=f"clip_grad_norm_({'model.parameters()' if as_gen else 'list(model.parameters())'}, max_norm={max_norm})",
            shapes=what,
            dtype=str(dt)[6:],
            std=str(std),
        )
        steps = [
            let("grads", grads),
            call(
                "r",
                helper("training.clip"),
                graded("clip_grad_norm_"),
                ref("grads"),
                max_norm,
                as_generator=as_gen,
            ),
        ]
        cases.append(
            Case(label, steps, ["r"], facts=dict(grads=grads, max_norm=max_norm, as_gen=as_gen), size=i)
        )
    return cases


def _clip_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise CheckFailure(msg("the grader could not run clip_grad_norm_ (no results came back)"))
    norm, got_grads = r
    grads, max_norm = f["grads"], f["max_norm"]
    params = []
    for grad in grads:
        p = torch.zeros(
            grad.shape if grad is not None else (2,), dtype=grad.dtype if grad is not None else F64
        )
        p.grad = None if grad is None else grad.clone()
        params.append(p)
    exp_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    exp_grads = [p.grad for p in params]
    got = [g for g in got_grads if isinstance(g, torch.Tensor)]
    if len(got) != len([g for g in exp_grads if g is not None]):
        raise CheckFailure(
            msg("clip_grad_norm_ gave a gradient to a parameter that had none: skip p.grad is None")
        )
    flat = torch.cat([g.reshape(-1).double() for g in got])
    exp_flat = torch.cat([g.reshape(-1).double() for g in exp_grads if g is not None])
    atol = 1e-7 * min(1.0, float(exp_flat.abs().max()))  # tiny gradients: the tolerance shrinks with them
    models = {}

    def model(k):
        if k not in models:
            models[k] = _clip_model(grads, max_norm, k)
        return models[k]

    hint = diagnose(
        flat,
        [
            (h, lambda k=k: torch.cat([g.reshape(-1) for g in model(k)[1] if g is not None]))
            for k, h in _CLIP_HINTS.items()
        ],
        rtol=1e-5,
        atol=atol,
    )
    assert_close(
        flat,
        exp_flat.to(flat.dtype),
        msg("the gradients after clip_grad_norm_ (all of them, flattened)"),
        hint
        or msg(
            "every gradient times min(1, max_norm / (norm + 1e-6)), norm the L2 norm of all gradients together"
        ),
        rtol=1e-5,
        atol=atol,
    )
    if isinstance(norm, (int, float)):
        norm = torch.tensor(float(norm), dtype=F64)
    norm = expect_tensor(norm, msg("the norm clip_grad_norm_ returned"))
    hint = diagnose(
        norm.reshape(()).double(),
        [(h, lambda k=k: model(k)[0]) for k, h in _CLIP_HINTS.items() if k in ("norm_after", "sum_of_norms")],
        rtol=1e-5,
        atol=1e-7,
    )
    assert_close(
        norm.reshape(()).double(),
        exp_norm.double(),
        msg("the norm clip_grad_norm_ returned"),
        hint or msg("return the global L2 norm of the gradients, before clipping"),
        rtol=1e-5,
        atol=1e-7,
    )


# ---------------------------------------------------------------------------------------------
# get_batch


def batches(fn, data, kind, batch_size, context_length, seed, coverage):
    """get_batch on `data` held as `kind` ("numpy": uint16, "memmap": a uint16 np.memmap, "tensor":
    int32): the batch of one seed twice, of another seed once, then `coverage` windows in one batch.
    Returns the eight tensors, or the error one call raised (text) in place of a result."""
    arr = np.asarray(data, dtype=np.uint16)  # a list: the data stays on the CPU, whatever the device
    folder = None
    if kind == "memmap":
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "tokens.bin")
        mm = np.memmap(path, dtype=np.uint16, mode="w+", shape=arr.shape)
        mm[:] = arr
        mm.flush()
        del mm
        held = np.memmap(path, dtype=np.uint16, mode="r")
    elif kind == "numpy":
        held = arr
    else:
        held = torch.tensor(
            data, dtype=torch.int32
        )  # ids saved by torch at 32 bits: the batch is still int64
    results = []
    try:
        for s, n in ((seed, batch_size), (seed, batch_size), (seed + 1, batch_size), (seed + 2, coverage)):
            try:
                kw = {"device": "cpu"} if n == coverage else {}
                x, y = fn(held, n, context_length, generator=torch.Generator().manual_seed(s), **kw)
            except NotImplementedError:
                raise
            except Exception as exc:  # noqa: BLE001 - a fact to judge (a window past the end, most often)
                return f"{type(exc).__name__}: {exc}"[:300], n
            results += [x, y]
        return results
    finally:
        if folder is not None:
            del held
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))
            os.rmdir(folder)


_BATCH_HINTS = {
    "overrun": N_(
        "a window overruns the array: a start s needs s + context_length + 1 <= len(data) (y reaches one "
        "token further than x), so draw s from 0 to len(data) - context_length - 1, "
        "torch.randint(0, len(data) - context_length, ...)"
    ),
    "last_start": N_(
        "the last valid start, len(data) - context_length - 1, is never drawn: torch.randint's high is "
        "exclusive, high = len(data) - context_length"
    ),
    "first_start": N_(
        "the first start, 0, is never drawn: starts go from 0 to len(data) - context_length - 1"
    ),
    "not_shifted": N_(
        "the targets are not shifted: y = data[s + 1 : s + 1 + context_length], one token after x"
    ),
    "other_window": N_(
        "x and y come from different windows: draw one start s per row, x = data[s : s + context_length], "
        "y = data[s + 1 : s + 1 + context_length]"
    ),
    "generator": N_(
        "the batch does not come from the generator: draw the starts with torch.randint(..., "
        "generator=generator), so the same seed gives the same batch"
    ),
    "not_uniform": N_(
        "the starts are not uniform over every valid start: torch.randint(0, len(data) - context_length, ...)"
    ),
}


def _batch_cases(hidden):
    # (len(data) - context_length: the number of valid starts, context_length, batch size, kind, offset)
    specs = [(6, 5, 4, "numpy", 1000), (9, 8, 6, "memmap", 3), (5, 3, 3, "tensor", 60000)]
    if hidden:
        specs = [(8, 4, 5, "numpy", 200), (4, 16, 3, "memmap", 7), (11, 6, 7, "tensor", 40000)]
    cases = []
    for i, (n_starts, ctx, bsz, kind, offset) in enumerate(specs):
        n = n_starts + ctx
        data = torch.arange(offset, offset + 3 * n, 3, dtype=torch.int64)  # the value says the position
        coverage = 300 * n_starts
        seed = 12400 + 11 * i + (500 if hidden else 0)
        label = msg(
            "{call}, data = {data}, {n} tokens, {starts} valid starts; generator seeds {s1}, {s2}, {s3} "
            "({windows} windows)",
            call=f"get_batch(data, batch_size={bsz}, context_length={ctx})",
            data="np.ndarray(uint16)"
            if kind == "numpy"
            else "np.memmap(uint16)"
            if kind == "memmap"
            else "torch.Tensor(int32)",
            n=n,
            starts=n_starts,
            s1=seed,
            s2=seed + 1,
            s3=seed + 2,
            windows=coverage,
        )
        steps = [
            let("data", data.tolist()),
            call(
                "r",
                helper("training.batches"),
                graded("get_batch"),
                ref("data"),
                kind,
                bsz,
                ctx,
                seed,
                coverage,
            ),
        ]
        facts = dict(data=data, n=n, ctx=ctx, bsz=bsz, coverage=coverage, offset=offset)
        cases.append(Case(label, steps, ["r"], facts=facts, size=n))
    return cases


def _window_problem(x, y, f):
    """Checks one batch (x, y); raises with the hint of what is wrong."""
    ctx, n, offset = f["ctx"], f["n"], f["offset"]
    for what, t in (("x", x), ("y", y)):
        t = expect_tensor(t, what)
        if t.dtype != torch.int64:
            raise CheckFailure(
                msg("{what} should be a LongTensor (int64) of token ids.", what=what)
                + got_expected(t.dtype, "torch.int64")
                + hint_line(msg("convert the window to torch.long (token files are often uint16)"))
            )
        if tuple(t.shape[1:]) != (ctx,) or t.dim() != 2:
            raise CheckFailure(
                msg("{what} has the wrong shape.", what=what)
                + got_expected(tuple(t.shape), f"(batch_size, {ctx})")
            )
    pos_x = (x - offset) / 3
    pos_y = (y - offset) / 3
    steps = torch.arange(ctx)
    starts = pos_x[:, 0]
    if not torch.equal(pos_x, starts[:, None] + steps):
        raise CheckFailure(
            msg("a row of x is not a window of consecutive tokens of data.")
            + got_expected(f"x[0] = {x[0].tolist()}", msg("data[s : s + context_length] for a start s"))
            + hint_line(msg("slice one window per row, x[b] = data[s_b : s_b + context_length]"))
        )
    if torch.equal(pos_y, pos_x):
        raise CheckFailure(
            msg("y is the same as x.")
            + got_expected(
                f"y[0] = {y[0].tolist()}",
                msg("{values} (the next token at each position)", values=str((x[0] + 3).tolist())),
            )
            + hint_line(_BATCH_HINTS["not_shifted"]),
            hint=_BATCH_HINTS["not_shifted"],
        )
    if not torch.equal(pos_y, starts[:, None] + 1 + steps):
        hint = (
            _BATCH_HINTS["other_window"]
            if torch.equal(pos_y, pos_y[:, :1] + steps)
            else _BATCH_HINTS["not_shifted"]
        )
        raise CheckFailure(
            msg("y is not x shifted by one token.")
            + got_expected(f"x[0] = {x[0].tolist()}, y[0] = {y[0].tolist()}", f"y[0] = {(x[0] + 3).tolist()}")
            + hint_line(hint),
            hint=hint,
        )
    if starts.min() < 0 or starts.max() > n - ctx - 1:
        raise CheckFailure(
            msg("a window overruns the array.") + hint_line(_BATCH_HINTS["overrun"]),
            hint=_BATCH_HINTS["overrun"],
        )
    return starts.long()


def _batch_judge(case, out):
    f = case.facts
    r = out["r"]
    if isinstance(r, (tuple, list)) and len(r) == 2 and isinstance(r[0], str):
        error, n = r
        overrun = ("out of bounds", "index", "stack expects", "same shape", "size")
        hint = _BATCH_HINTS["overrun"] if any(w in error for w in overrun) else ""
        default = msg("x = data[s : s + context_length], y = data[s + 1 : s + 1 + context_length]")
        raise CheckFailure(
            msg(
                "get_batch raised {error} drawing {n} windows from {tokens} tokens.",
                error=error,
                n=n,
                tokens=f["n"],
            )
            + hint_line(hint or default),
            hint=hint or None,
        )
    if not isinstance(r, (tuple, list)) or len(r) != 8:
        raise CheckFailure(msg("get_batch should return a pair (x, y)"))
    x1, y1, x2, y2, x3, y3, xb, yb = r
    for x, y in ((x1, y1), (xb, yb)):
        _window_problem(x, y, f)
    if x1.shape[0] != f["bsz"]:
        raise CheckFailure(
            msg("x has {rows} rows.", rows=x1.shape[0])
            + got_expected(x1.shape[0], f"batch_size = {f['bsz']}")
        )
    if not (torch.equal(x1, x2) and torch.equal(y1, y2)) or torch.equal(x1, x3):
        seen = msg(
            "x[:, 0] = {first} and {second} (same seed), {third} (next seed)",
            first=str(x1[:, 0].tolist()),
            second=str(x2[:, 0].tolist()),
            third=str(x3[:, 0].tolist()),
        )
        raise CheckFailure(
            msg(
                "two generators seeded alike give different batches, or differently seeded ones the same batch."
            )
            + LINE
            + msg("got:      {got}", got=seen)
            + hint_line(_BATCH_HINTS["generator"]),
            hint=_BATCH_HINTS["generator"],
        )
    starts = _window_problem(xb, yb, f)
    n_starts = f["n"] - f["ctx"]
    counts = torch.bincount(starts, minlength=n_starts)
    expected = f["coverage"] / n_starts
    sd = math.sqrt(f["coverage"] * (1 / n_starts) * (1 - 1 / n_starts))
    if counts[-1] == 0 or counts[0] == 0 or (counts - expected).abs().max() > 6 * sd:
        hint = (
            _BATCH_HINTS["last_start"]
            if counts[-1] == 0
            else _BATCH_HINTS["first_start"]
            if counts[0] == 0
            else _BATCH_HINTS["not_uniform"]
        )
        raise CheckFailure(
            msg(
                "the starts of {windows} windows are not spread evenly over the {starts} valid starts.",
                windows=f["coverage"],
                starts=n_starts,
            )
            + got_expected(
                msg("counts {counts}", counts=str(counts.tolist())),
                msg("about {each} each (starts 0 to {last})", each=f"{expected:.0f}", last=n_starts - 1),
            )
            + hint_line(hint),
            hint=hint,
        )


# ---------------------------------------------------------------------------------------------
# save_checkpoint / load_checkpoint


def _train(model, opt, xs, ys, t0, t1):
    losses = []
    for t in range(t0, t1):
        i = t % xs.shape[0]
        loss = ((model(xs[i]) - ys[i]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def _setup(seed, d_in, d_out, init_seed):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(7, 4, d_in, generator=g)
    ys = torch.randn(7, 4, d_out, generator=g)
    torch.manual_seed(init_seed)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, 16), torch.nn.Tanh(), torch.nn.Linear(16, d_out))
    opt = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1, foreach=False)
    return model, opt, xs, ys


def resume(save, load, kind, seed, k, n, d_in, d_out, reload_optimizer=True):
    """Train k steps, save_checkpoint, train n more; a fresh model and optimizer (other weights),
    load_checkpoint, train n steps from the iteration it returns. Returns (the iteration, the n
    losses after loading, the n losses of the run that never stopped, whether the weights were
    restored, whether the optimizer's state was restored)."""
    model, opt, xs, ys = _setup(seed, d_in, d_out, seed)
    _train(model, opt, xs, ys, 0, k)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "ckpt.pt")
    try:
        buf = io.BytesIO()
        save(model, opt, k, buf if kind == "file" else path)
        weights = {name: t.clone() for name, t in model.state_dict().items()}
        steps_seen = [float(s["step"]) for s in opt.state_dict()["state"].values()]
        straight = _train(model, opt, xs, ys, k, k + n)
        model2, opt2, _, _ = _setup(seed, d_in, d_out, seed + 1)
        if kind == "file":
            buf.seek(0)
        it = load(buf if kind == "file" else path, model2, opt2)
        restored = all(torch.equal(weights[name], t) for name, t in model2.state_dict().items())
        state_back = [float(s["step"]) for s in opt2.state_dict()["state"].values()] == steps_seen
        start = int(it) if isinstance(it, (int, torch.Tensor)) and not isinstance(it, bool) else k
        resumed = _train(model2, opt2, xs, ys, start, start + n)
    finally:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)
    iteration = int(it) if isinstance(it, (int, torch.Tensor)) and not isinstance(it, bool) else repr(it)[:80]
    return iteration, resumed, straight, restored, state_back


_CKPT_HINTS = {
    "no_optimizer": N_(
        "the checkpoint does not restore the optimizer's state: save optimizer.state_dict() beside "
        "model.state_dict() and load it back with optimizer.load_state_dict(...) (AdamW's moments and step "
        "count are half of what training has learned)"
    ),
    "no_model": N_(
        "the model's weights were not restored: load_checkpoint must call model.load_state_dict(...) with "
        "the saved model.state_dict()"
    ),
    "iteration": N_("load_checkpoint should return the iteration that save_checkpoint saved"),
}


def _ckpt_cases(hidden):
    specs = [(5, 4, 3, 2, "file"), (9, 6, 4, 3, "path")]
    if hidden:
        specs = [(12, 5, 5, 1, "path"), (3, 7, 2, 4, "file")]
    cases = []
    for i, (k, n, d_in, d_out, kind) in enumerate(specs):
        seed = 12500 + 7 * i + (500 if hidden else 0)
        label = msg(
            "{model} and torch.optim.AdamW, {k} steps, {save}, {n} more steps; a fresh model and optimizer, "
            "load_checkpoint, {n} steps",
            model=f"nn.Sequential(Linear({d_in}, 16), Tanh(), Linear(16, {d_out}))",
            k=k,
            save=f"save_checkpoint(..., {'io.BytesIO()' if kind == 'file' else repr('ckpt.pt')})",
            n=n,
        )
        steps = [
            call(
                "r",
                helper("training.resume"),
                graded("save_checkpoint"),
                graded("load_checkpoint"),
                kind,
                seed,
                k,
                n,
                d_in,
                d_out,
            )  # fmt: skip
        ]
        cases.append(
            Case(label, steps, ["r"], facts=dict(seed=seed, k=k, n=n, d_in=d_in, d_out=d_out), size=k)
        )
    return cases


def _ckpt_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 5:
        raise CheckFailure(msg("the grader could not run the checkpoint round trip (no results came back)"))
    it, resumed, straight, restored, state_back = r
    if it != f["k"]:
        raise CheckFailure(
            msg("load_checkpoint did not return the iteration saved.")
            + got_expected(repr(it), str(f["k"]))
            + hint_line(_CKPT_HINTS["iteration"]),
            hint=_CKPT_HINTS["iteration"],
        )
    model, opt, xs, ys = _setup(f["seed"], f["d_in"], f["d_out"], f["seed"])
    expected = torch.tensor(_train(model, opt, xs, ys, 0, f["k"] + f["n"])[f["k"] :], dtype=F64)
    got = torch.tensor([float(v) for v in resumed], dtype=F64)
    hint = ""
    if not restored:
        hint = _CKPT_HINTS["no_model"]
    elif not state_back:
        hint = _CKPT_HINTS["no_optimizer"]
    else:
        fresh = _setup(f["seed"], f["d_in"], f["d_out"], f["seed"])
        _train(*fresh[:1], fresh[1], fresh[2], fresh[3], 0, f["k"])
        m, _, _, _ = fresh
        opt2 = torch.optim.AdamW(m.parameters(), lr=0.02, weight_decay=0.1, foreach=False)
        lost = torch.tensor(_train(m, opt2, fresh[2], fresh[3], f["k"], f["k"] + f["n"]), dtype=F64)
        hint = diagnose(got, [(_CKPT_HINTS["no_optimizer"], lambda: lost)], rtol=1e-5, atol=1e-7)
    assert_close(
        got,
        expected,
        msg("the {n} losses after load_checkpoint", n=f["n"]),
        hint or msg("save and restore the model's and the optimizer's state_dict() and the iteration"),
        rtol=1e-5,
        atol=1e-7,
    )
    if [float(v) for v in resumed] != [float(v) for v in straight]:
        raise CheckFailure(
            msg(
                "training resumed from the checkpoint is close to, but not exactly, the run that never stopped."
            )
            + got_expected(str([float(v) for v in resumed]), str([float(v) for v in straight]))
            + hint_line(
                msg(
                    "save the state_dicts as they are (no conversion to another dtype), so the resumed run "
                    "repeats the uninterrupted one bit for bit"
                )
            )
        )


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("cross_entropy", _ce_cases, _ce_judge),
    Question("AdamW", _adamw_cases, _adamw_judge),
    Question("lr_cosine_schedule", _sched_cases, _sched_judge),
    Question("clip_grad_norm_", _clip_cases, _clip_judge),
    Question("get_batch", _batch_cases, _batch_judge),
    Question("checkpoint", _ckpt_cases, _ckpt_judge, needs=("save_checkpoint", "load_checkpoint")),
)

check = _core.lesson_check(QUESTIONS, "cross_entropy", devices=False)
