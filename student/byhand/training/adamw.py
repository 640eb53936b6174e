"""AdamW: the helper `run_adamw` (run where the answer runs: hundreds of steps on a noisy quadratic,
a changed learning rate, a parameter without a gradient, a state_dict round trip), the model of
its classic mistakes, their hints, its cases and its judge (torch.optim.AdamW is the reference)."""

from __future__ import annotations

import copy
import math

import torch

from .._core import Case, call, gen, got_expected, graded, helper, hint_line, let, rand, ref
from .._judge import CheckFailure, assert_close, close, diagnose, expect_tensor
from ..i18n import N_, Msg, msg
from ._shared import F64, import_before_cases

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
            if mistake == "eps_in_sqrt":
                p.sub_(rate * (m[i] / bc1) / (v[i] / bc2 + eps).sqrt())
            else:
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
    "eps_in_sqrt": N_(
        "eps is added inside the square root, sqrt(v_hat + eps): torch.optim.AdamW adds it to the root, "
        "m_hat / (sqrt(v_hat) + eps); with gradients near eps's size the two steps differ"
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
    import_before_cases()
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
    hint = ""
    # each mistake's model is a whole run of hundreds of steps: only an answer off torch's needs them
    if not close(got_flat, exp_flat.to(got_flat.dtype), rtol, atol):
        hint = diagnose(
            got_flat,
            [
                (
                    _ADAMW_HINTS[k],
                    lambda k=k: torch.cat([p.reshape(-1) for p in _adamw_model(f["inits"], f, k)]),
                )
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
