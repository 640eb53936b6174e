"""Lesson 02_layernorm, `batch_norm`: its cases, its reference, its mistakes and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _judge, i18n
from .._core import Case, call, gen, let, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import _affine, _drawn, _expect_dtype, _tol

# ---------------------------------------------------------------------------------------------
# batch_norm


def ref_batch_norm(
    x,
    rm,
    rv,
    w,
    b,
    training,
    momentum,
    eps,
    norm_unbiased=False,
    running_biased=False,
    momentum_swapped=False,
    no_update=False,
    eval_batch_stats=False,
    eval_updates=False,
    stat_dim=0,
):
    """F.batch_norm in float64 on copies, or one classic mistake. Returns (y, running_mean, running_var)."""
    x, rm, rv = x.double(), rm.double().clone(), rv.double().clone()
    w, b = w.double(), b.double()
    use_batch = training or eval_batch_stats
    if use_batch:
        n = x.shape[stat_dim]
        mean = x.mean(stat_dim, keepdim=True)
        var_b = x.var(stat_dim, unbiased=False, keepdim=True)
        var_u = var_b * n / (n - 1)
        y = (x - mean) / ((var_u if norm_unbiased else var_b) + eps).sqrt() * w + b
        if (training or eval_updates) and not no_update and stat_dim == 0:
            new_v = var_b if running_biased else var_u
            m = 1 - momentum if momentum_swapped else momentum
            rm = (1 - m) * rm + m * mean.squeeze(0)
            rv = (1 - m) * rv + m * new_v.squeeze(0)
    else:
        y = (x - rm) / (rv + eps).sqrt() * w + b
    return y, rm, rv


def _torch_batch_norm(x, rm, rv, w, b, training, momentum, eps):
    rm, rv = rm.double().clone(), rv.double().clone()
    y = F.batch_norm(x.double(), rm, rv, w.double(), b.double(), training, momentum, eps)
    return y, rm, rv


# (N, C, steps: list of (training, momentum or None, eps or None), dtype)
_BN_VISIBLE = [
    (5, 3, [(True, None, None)], torch.float32),
    (6, 4, [(True, 0.3, 1e-5), (True, 0.3, 1e-5), (False, 0.3, 1e-5)], torch.float64),
    (4, 7, [(False, None, None)], torch.float64),  # float64: the default eps shows
]
_BN_HIDDEN = [
    (8, 5, [(True, 0.1, 0.1), (False, 0.1, 0.1)], torch.float32),
    (3, 6, [(True, 0.5, 1e-5), (True, 0.5, 1e-5), (True, 0.5, 1e-5)], torch.float64),
    (16, 9, [(True, None, None), (False, None, None)], torch.float64),
]


def _bn_cases(hidden):
    specs = _BN_HIDDEN if hidden else _BN_VISIBLE
    cases = []
    for i, (n, c, calls, dt) in enumerate(specs):
        g = gen(4000 + 53 * i + (300 if hidden else 0))
        rm = rand(c, dtype=dt, mean=0.5, std=1.0, generator=g)
        rv = rand(c, dtype=dt, mean=0.0, std=1.0, generator=g).abs() + 0.5
        w, b = _affine(c, dt, g)
        steps = [let("rm", rm), let("rv", rv), let("w", w), let("b", b)]
        xs, outputs, trail = [], [], []
        for j, (training, momentum, eps) in enumerate(calls):
            x = rand(n, c, dtype=dt, mean=2.0, std=3.0, generator=g)
            xs.append(x)
            kw = {} if momentum is None else {"momentum": momentum}
            if eps is not None:
                kw["eps"] = eps
            steps += [
                let(f"x{j}", x),
                call(
                    f"y{j}",
                    "batch_norm",
                    ref(f"x{j}"),
                    ref("rm"),
                    ref("rv"),
                    ref("w"),
                    ref("b"),
                    training,
                    **kw,
                ),
            ]
            outputs.append(f"y{j}")
            args = (
                f"{'' if momentum is None else f' momentum={momentum}'}{'' if eps is None else f' eps={eps}'}"
            )
            trail.append(msg("train{args}", args=args) if training else msg("eval{args}", args=args))
        outputs += ["rm", "rv"] + [f"x{j}" for j in range(len(calls))]
        label = msg(
            "x {shape} {dtype} {stats}, random running buffers, weight and bias; calls: {calls}",
            shape=str((n, c)),
            dtype=str(dt),
            stats=_drawn(2, 3),
            calls=i18n.join(N_(", "), trail),
        )
        cases.append(
            Case(
                label,
                steps,
                outputs,
                facts=dict(xs=xs, rm=rm, rv=rv, w=w, b=b, calls=calls),
                size=n * c * len(calls),
            )
        )
    return cases


_BN_MISTAKES = [
    (
        "norm_unbiased",
        N_(
            "the batch is normalised with the unbiased variance (divides by N-1); F.batch_norm "
            "normalises with the biased one, x.var(0, unbiased=False), and uses the unbiased one "
            "only to update running_var"
        ),
    ),
    (
        "running_biased",
        N_(
            "running_var is updated with the biased batch variance; PyTorch updates it with the "
            "unbiased one: var(0, unbiased=False) * N / (N - 1)"
        ),
    ),
    (
        "momentum_swapped",
        N_(
            "momentum is the weight of the NEW statistic: running = (1 - momentum) * running "
            "+ momentum * batch_stat"
        ),
    ),
    (
        "no_update",
        N_(
            "the running buffers were not updated in place: running_mean = ... only rebinds a local "
            "name; write into the tensor (running_mean.mul_(1 - momentum).add_(momentum * mean), or "
            "running_mean.copy_(...)) under torch.no_grad()"
        ),
    ),
    (
        "eval_batch_stats",
        N_(
            "in eval mode (training=False) normalise with running_mean and running_var, "
            "not with the batch statistics"
        ),
    ),
    ("eval_updates", N_("in eval mode (training=False) the running buffers must not change")),
    (
        "stat_dim",
        N_(
            "you averaged over the features (dim 1) of each sample: that is LayerNorm. BatchNorm "
            "averages each feature (column) over the batch, dim 0"
        ),
    ),
]


_BN_DEFAULT_EPS = N_(
    "the default eps should be 1e-5 (as F.batch_norm): batch_norm(..., momentum=0.1, eps=1e-5)"
)


def _over_calls(f: dict, batch_norm, default_eps=1e-5, **mistake) -> tuple:
    """(each call's output, running_mean, running_var after the last call) of the case's calls in
    turn, computed by `batch_norm` (torch's, or the reference with a mistake; `default_eps`: the
    eps of a call that leaves it out)."""
    rm, rv, ys = f["rm"], f["rv"], []
    for x, (training, momentum, eps) in zip(f["xs"], f["calls"]):
        momentum, eps = 0.1 if momentum is None else momentum, default_eps if eps is None else eps
        y, rm, rv = batch_norm(x, rm, rv, f["w"], f["b"], training, momentum, eps, **mistake)
        ys.append(y)
    return ys, rm, rv


def _bn_judge(case, out):
    f = case.facts
    calls = f["calls"]

    def run(**mistake):
        return _over_calls(f, ref_batch_norm, **mistake)

    exp_ys, rm, rv = _over_calls(f, _torch_batch_norm)
    dt = f["xs"][0].dtype
    rtol, atol = _tol(dt)
    mistakes = {key: run(stat_dim=1) if key == "stat_dim" else run(**{key: True}) for key, _ in _BN_MISTAKES}
    hints = dict(_BN_MISTAKES)
    if any(eps is None for _, _, eps in calls):  # a call that leaves eps out: its default is used
        for e in (0.0, 1e-6, 1e-3):
            mistakes[f"default_eps {e}"] = run(default_eps=e)
            hints[f"default_eps {e}"] = _BN_DEFAULT_EPS

    for j, exp in enumerate(exp_ys):
        y = expect_tensor(
            out[f"y{j}"], msg("{x} output (call {i})", x="batch_norm", i=j + 1), shape=exp.shape
        )
        _expect_dtype(y, dt, "batch_norm")
        if not _judge.close(y, exp.to(dt), rtol, atol):
            hint = diagnose(y, [(hints[k], lambda k=k: mistakes[k][0][j]) for k in hints])
            if not hint and j > 0:
                hint = N_("the first call was right: check how the running buffers are updated and used")
            assert_close(
                y,
                exp.to(dt),
                msg("{x} output (call {i} of {n})", x="batch_norm", i=j + 1, n=len(calls)),
                hint
                or N_(
                    "training: (x - batch mean) / sqrt(biased batch var + eps) * weight + bias; "
                    "eval: the same with running_mean / running_var"
                ),
                rtol=rtol,
                atol=atol,
            )
    for name, exp, k in (("running_mean", rm, 1), ("running_var", rv, 2)):
        got = expect_tensor(out["rm" if k == 1 else "rv"], name, shape=exp.shape)
        if not _judge.close(got, exp.to(dt), rtol, atol):
            hint = diagnose(got, [(hints[m], lambda m=m: mistakes[m][k]) for m in hints])
            assert_close(
                got,
                exp.to(dt),
                msg("{x} after all calls", x=name),
                hint
                or N_(
                    "in training, running = (1 - momentum) * running + momentum * batch statistic "
                    "(unbiased variance for running_var), updated in place; in eval, unchanged"
                ),
                rtol=rtol,
                atol=atol,
            )
    for j, x in enumerate(f["xs"]):
        if not _judge.close(out[f"x{j}"], x):
            raise CheckFailure(
                msg("batch_norm modified its input x in place: only the running buffers may change")
            )
