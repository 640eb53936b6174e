"""Checks for lesson 02_layernorm: LayerNorm, RMSNorm and BatchNorm, by hand.

Each graded name has cases (small first; hidden ones add seeds, dtypes and shapes) and a judge that
compares with torch's own op (`F.layer_norm`, `F.rms_norm`, `F.batch_norm`, in float64) and, on a
mismatch, recognises the classic mistakes of docs/mistakes.md by recomputing them.

The inputs are built to separate the mistakes: small d (4..8) so the unbiased variance is off by
sqrt(d/(d-1)), a large eps (0.1) with small-variance rows so "eps outside the sqrt" shows, non-zero
means so "mean subtracted" shows in RMSNorm, B != L != d so a wrong dim shows, random affine
parameters so a missing or misplaced affine shows, and a small batch N for BatchNorm.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _core, _judge, i18n
from ._core import Case, Question, call, calling, gen, let, new, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "02_layernorm"

# ---------------------------------------------------------------------------------------------
# References and mistake models (float64, computed in the judge's process)


def _stats(x, dims=(-1,), unbiased=False):
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, unbiased=unbiased)
    return mean, var


def ref_layer_norm(x, weight, bias, eps, unbiased=False, eps_outside=False, dims=(-1,), affine="wb"):
    """LayerNorm over `dims`; the keyword arguments switch on one classic mistake each."""
    x = x.double()
    mean, var = _stats(x, dims, unbiased)
    xhat = (x - mean) / (var.sqrt() + eps if eps_outside else (var + eps).sqrt())
    w, b = weight.double(), bias.double()
    if affine == "wb":
        return xhat * w + b
    if affine == "none":
        return xhat
    if affine == "w":
        return xhat * w
    if affine == "b_then_w":
        return (xhat + b) * w
    raise ValueError(affine)


def ref_rms_norm(x, weight, eps, mean_subtracted=False, eps_outside=False, use_sum=False, affine=True):
    x = x.double()
    if mean_subtracted:
        x = x - x.mean(-1, keepdim=True)
    ms = x.pow(2).sum(-1, keepdim=True) if use_sum else x.pow(2).mean(-1, keepdim=True)
    y = x / (ms.sqrt() + eps if eps_outside else (ms + eps).sqrt())
    return y * weight.double() if affine else y


def _wrong_dims(x):
    """Dim choices a student might normalise over instead of the last one."""
    out = []
    if x.dim() >= 2:
        out.append((0,))
        if x.dim() >= 3:
            out.append((1,))
        out.append(tuple(range(x.dim())))
    return out


_TUTORIAL = N_(
    "this is the widely copied tutorial LayerNorm: x.std() is the unbiased std (divides by d-1) "
    "and eps is added outside the sqrt. Use the population variance "
    "(x.var(-1, unbiased=False, keepdim=True)) and divide by sqrt(var + eps)"
)


def _layer_norm_hint(y, x, w, b, eps):
    """The mistake (or pair of mistakes) whose output `y` matches best."""
    singles = [
        (
            N_(
                "you used the unbiased variance (x.var() / x.std() divide by d-1 by default); LayerNorm uses "
                "the population variance: x.var(-1, unbiased=False, keepdim=True)"
            ),
            dict(unbiased=True),
        ),
        (
            N_("eps is added to the std, outside the sqrt: divide by sqrt(var + eps), not sqrt(var) + eps"),
            dict(eps_outside=True),
        ),
        (
            N_("the affine parameters are ignored: multiply by weight and add bias after normalising"),
            dict(affine="none"),
        ),
        (N_("bias is missing: y = x_hat * weight + bias"), dict(affine="w")),
        (
            N_(
                "the affine parameters are applied in the wrong order: (x_hat + bias) * weight; "
                "it is x_hat * weight + bias"
            ),
            dict(affine="b_then_w"),
        ),
    ]
    for dims in _wrong_dims(x):
        singles.append(
            (
                msg(
                    "you normalised over dims {dims}: LayerNorm normalises each token over its "
                    "features, the last dim only (mean(-1, keepdim=True))",
                    dims=str(dims),
                ),
                dict(dims=dims),
            )
        )

    def model(**kw):
        return ref_layer_norm(x, w, b, eps, **kw)

    candidates = _judge.with_pairs(singles, model)
    tutorial = (_TUTORIAL, lambda: model(unbiased=True, eps_outside=True))
    candidates.insert(len(singles), tutorial)  # before the pairs: it is the pair with a name
    return diagnose(y, candidates)


def _same_input(out, facts, names, fn_name):
    _judge.inputs_unchanged(
        out, facts, names, fn_name, N_("use out-of-place ops (x - mean, not x.sub_(mean))")
    )


_expect_dtype = _judge.expect_dtype


def _tol(dtype):
    return (1e-4, 1e-5) if dtype != torch.float64 else (1e-7, 1e-9)


def _drawn(mean, std):
    """A case label's words for how x was drawn: (mean 2.0, std 3.0)."""
    return msg("(mean {mean}, std {std})", mean=str(mean), std=str(std))


def _affine(d, dt, g):
    weight = rand(d, dtype=dt, mean=1.5, std=0.5, generator=g)
    bias = rand(d, dtype=dt, mean=-0.5, std=1.0, generator=g)
    return weight, bias


# ---------------------------------------------------------------------------------------------
# layer_norm

# (shape, eps (None = the default 1e-5), x mean, x std, dtype)
_LN_VISIBLE = [
    ((3, 5, 4), None, 2.0, 3.0, torch.float32),
    ((2, 6, 7), 0.1, 1.0, 0.2, torch.float64),
    ((4, 3, 5), 1e-5, -1.5, 2.5, torch.float32),
    ((3, 4, 8), None, 0.01, 0.003, torch.float64),  # variance near the default eps: the default shows
]
_LN_HIDDEN = [
    ((6, 8), 0.1, 3.0, 0.3, torch.float32),
    ((2, 3, 5, 6), 1e-5, 0.5, 4.0, torch.float64),
    ((5, 7, 8), None, 0.01, 0.003, torch.float64),  # variance near the default eps
    ((3, 9, 16), 0.05, -2.0, 0.25, torch.float32),
]


def _ln_cases(hidden):
    specs = _LN_HIDDEN if hidden else _LN_VISIBLE
    cases = []
    for i, (shape, eps, mean, std, dt) in enumerate(specs):
        g = gen(2000 + 17 * i + (300 if hidden else 0))
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight, bias = _affine(shape[-1], dt, g)
        kw = {} if eps is None else {"eps": eps}
        steps = calling("y", "layer_norm", dict(x=x, weight=weight, bias=bias), **kw)
        data = dict(shape=str(tuple(shape)), dtype=str(dt), stats=_drawn(mean, std))
        if eps is None:
            label = msg("x {shape} {dtype} {stats}, random weight and bias, eps=default", **data)
        else:
            label = msg("x {shape} {dtype} {stats}, random weight and bias, eps={eps}", eps=str(eps), **data)
        cases.append(
            Case(
                label,
                steps,
                ["y", "x", "weight", "bias"],
                facts=dict(
                    x=x, weight=weight, bias=bias, eps=1e-5 if eps is None else eps, default_eps=eps is None
                ),
                size=x.numel(),
            )
        )
    return cases


def _ln_judge(case, out):
    f = case.facts
    x, w, b, eps = f["x"], f["weight"], f["bias"], f["eps"]
    exp = F.layer_norm(x.double(), (x.shape[-1],), w.double(), b.double(), eps)
    y = expect_tensor(out["y"], "layer_norm(x, weight, bias)", shape=exp.shape)
    _expect_dtype(y, x.dtype, "layer_norm")
    rtol, atol = _tol(x.dtype)
    hint = _layer_norm_hint(y, x, w, b, eps)
    if not hint and f["default_eps"]:
        hint = diagnose(
            y,
            [
                (
                    N_(
                        "the default eps should be 1e-5 (as F.layer_norm): layer_norm(x, weight, bias, eps=1e-5)"
                    ),
                    lambda e=e: ref_layer_norm(x, w, b, e),
                )
                for e in (1e-6, 1e-8, 1e-12, 0.0)
            ],
        )
    hint = hint or N_(
        "compare step by step: mean and population variance over "
        "the last dim, (x - mean) / sqrt(var + eps), then * weight + bias"
    )
    assert_close(y, exp.to(y.dtype), msg("{x} output", x="layer_norm"), hint, rtol=rtol, atol=atol)
    _same_input(out, f, ("x", "weight", "bias"), "layer_norm")


# ---------------------------------------------------------------------------------------------
# LayerNorm (module)

# (shape, eps (None = default), random state?, x mean, x std, dtype)
_LNM_VISIBLE = [
    ((2, 3, 4), None, False, 1.0, 2.0, torch.float32),
    ((3, 4, 6), 0.1, True, 2.0, 0.25, torch.float64),
    ((4, 5, 7), None, True, 0.01, 0.003, torch.float32),
]  # variance near the default eps
_LNM_HIDDEN = [
    ((5, 6, 8), 1e-3, True, -3.0, 0.05, torch.float64),
    ((7, 12), None, True, 2.0, 5.0, torch.float32),
    ((2, 3, 4, 5), 0.1, True, 0.5, 0.2, torch.float32),
]


def _lnm_cases(hidden):
    specs = _LNM_HIDDEN if hidden else _LNM_VISIBLE
    cases = []
    for i, (shape, eps, with_state, mean, std, dt) in enumerate(specs):
        g = gen(2500 + 31 * i + (300 if hidden else 0))
        d = shape[-1]
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight, bias = (
            _affine(d, dt, g) if with_state else (torch.ones(d, dtype=dt), torch.zeros(d, dtype=dt))
        )
        cases.append(
            _module_case(
                "LayerNorm",
                x,
                eps,
                {"weight": weight, "bias": bias} if with_state else None,
                with_state,
                _drawn(mean, std),
                dict(weight=weight, bias=bias, eps=1e-5 if eps is None else eps),
            )
        )
    return cases


def _module_case(cls: str, x, eps, state, random: bool, stats, facts: dict) -> Case:
    """`cls(d)` (or `cls(d, eps=eps)`) built in the kernel, loaded with `state` (None: its own fresh
    parameters, which come back too), called on x; `random`: the label says its parameters are
    random (else fresh), `stats` how x was drawn."""
    d, var = x.shape[-1], {"LayerNorm": "ln", "RMSNorm": "rn"}[cls]
    kw = {} if eps is None else {"eps": eps}
    steps = [new(var, cls, d, state=state, dtype=x.dtype, **kw), let("x", x), call("y", ref(var), ref("x"))]
    names = ("weight",) if cls == "RMSNorm" else ("weight", "bias")
    fresh = [f"{var}.{n}" for n in names] + [f"{var}.{n}.requires_grad" for n in names]
    data = dict(
        module=f"{cls}({d}{'' if eps is None else f', eps={eps}'})",
        shape=str(tuple(x.shape)),
        dtype=str(x.dtype),
        stats=stats,
    )
    if cls == "RMSNorm":
        label = (
            msg("{module}, random weight, x {shape} {dtype} {stats}", **data)
            if random
            else msg("{module}, fresh weight, x {shape} {dtype} {stats}", **data)
        )
    else:
        label = (
            msg("{module}, random weight and bias, x {shape} {dtype} {stats}", **data)
            if random
            else msg("{module}, fresh parameters, x {shape} {dtype} {stats}", **data)
        )
    outputs = ["y", "x"] + (fresh if state is None else [])
    facts = dict(x=x, default_eps=eps is None, fresh=state is None, **facts)
    return Case(label, steps, outputs, facts=facts, size=x.numel())


def _param_checks(out, prefix, d, dtype, cls, names=("weight", "bias")):
    """A fresh module: parameters of shape (d,), ones / zeros, learnable."""
    inits = {"weight": torch.ones(d, dtype=dtype), "bias": torch.zeros(d, dtype=dtype)}
    for name in names:
        p = expect_tensor(out[f"{prefix}.{name}"], f"{cls}.{name}", shape=(d,))
        if name == "weight":
            start = msg(
                "{name} should start as ones, so a fresh {cls} is a plain normalisation", name=name, cls=cls
            )
        else:
            start = msg(
                "{name} should start as zeros, so a fresh {cls} is a plain normalisation", name=name, cls=cls
            )
        assert_close(p, inits[name], msg("{x} at initialisation", x=f"{cls}.{name}"), start)
        if out[f"{prefix}.{name}.requires_grad"] is not True:
            raise CheckFailure(
                msg(
                    "{x} is not a learnable parameter (requires_grad is False): wrap it in nn.Parameter(...)",
                    x=f"{cls}.{name}",
                )
            )


def _lnm_judge(case, out):
    f = case.facts
    x, w, b, eps = f["x"], f["weight"], f["bias"], f["eps"]
    d = x.shape[-1]
    if f["fresh"]:
        _param_checks(out, "ln", d, x.dtype, "LayerNorm")
    exp = F.layer_norm(x.double(), (d,), w.double(), b.double(), eps)
    y = expect_tensor(out["y"], msg("{x} output", x="LayerNorm"), shape=exp.shape)
    _expect_dtype(y, x.dtype, "LayerNorm")
    hint = _layer_norm_hint(y, x, w, b, eps)
    if not hint and f["default_eps"]:
        hint = diagnose(
            y,
            [
                (
                    N_("the default eps should be 1e-5 (as nn.LayerNorm): __init__(self, d_model, eps=1e-5)"),
                    lambda e=e: ref_layer_norm(x, w, b, e),
                )
                for e in (1e-6, 1e-8, 1e-12, 0.0)
            ],
        )
    if not hint:
        hint = diagnose(
            y,
            [
                (
                    N_(
                        "the eps passed to __init__ is not used: store it (self.eps = eps) and use it in forward"
                    ),
                    lambda e=e: ref_layer_norm(x, w, b, e),
                )
                for e in (1e-5, 1e-6)
            ],
        )
    rtol, atol = _tol(x.dtype)
    assert_close(
        y,
        exp.to(y.dtype),
        msg("{x} output", x="LayerNorm"),
        hint
        or N_(
            "the same numbers as nn.LayerNorm with the same weight and bias are expected: normalise "
            "over the last dim with self.eps, then * self.weight + self.bias"
        ),
        rtol=rtol,
        atol=atol,
    )
    _same_input(out, f, ("x",), "LayerNorm")


# ---------------------------------------------------------------------------------------------
# rms_norm

# (shape, eps (None = default 1e-6), x mean, x std, dtype)
_RMS_VISIBLE = [
    ((3, 5, 4), None, 2.0, 0.5, torch.float32),
    ((2, 4, 6), 0.1, 0.3, 0.2, torch.float64),
    ((4, 3, 7), 1e-6, -1.0, 3.0, torch.float32),
    ((3, 4, 8), None, 0.0008, 0.0005, torch.float64),  # mean square near the default eps
]
_RMS_HIDDEN = [
    ((6, 8), 0.05, 1.5, 0.3, torch.float64),
    ((2, 3, 5, 9), None, -0.5, 2.0, torch.float32),
    ((5, 7, 16), None, 0.0008, 0.0005, torch.float64),  # mean square near the default eps
    ((3, 6, 10), 1e-6, 3.0, 1.0, torch.float64),
]


def _rms_cases(hidden):
    specs = _RMS_HIDDEN if hidden else _RMS_VISIBLE
    cases = []
    for i, (shape, eps, mean, std, dt) in enumerate(specs):
        g = gen(3000 + 23 * i + (300 if hidden else 0))
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight = rand(shape[-1], dtype=dt, mean=1.5, std=0.5, generator=g)
        kw = {} if eps is None else {"eps": eps}
        steps = [let("x", x), let("weight", weight), call("y", "rms_norm", ref("x"), ref("weight"), **kw)]
        data = dict(shape=str(tuple(shape)), dtype=str(dt), stats=_drawn(mean, std))
        if eps is None:
            label = msg("x {shape} {dtype} {stats}, random weight, eps=default", **data)
        else:
            label = msg("x {shape} {dtype} {stats}, random weight, eps={eps}", eps=str(eps), **data)
        cases.append(
            Case(
                label,
                steps,
                ["y", "x", "weight"],
                facts=dict(x=x, weight=weight, eps=1e-6 if eps is None else eps, default_eps=eps is None),
                size=x.numel(),
            )
        )
    return cases


def _rms_hint(y, x, w, eps, default_eps=False):
    mistakes = [
        (
            N_(
                "you subtracted the mean: that is LayerNorm. RMSNorm only re-scales: x / sqrt(mean(x^2) + eps)"
            ),
            lambda: ref_rms_norm(x, w, eps, mean_subtracted=True),
        ),
        (
            N_("eps is added to the rms, outside the sqrt: divide by sqrt(mean(x^2) + eps)"),
            lambda: ref_rms_norm(x, w, eps, eps_outside=True),
        ),
        (
            N_(
                "you used the sum of squares; RMSNorm uses their mean over the last dim: x.pow(2).mean(-1, keepdim=True)"
            ),
            lambda: ref_rms_norm(x, w, eps, use_sum=True),
        ),
        (
            N_("weight is ignored: multiply the normalised x by weight"),
            lambda: ref_rms_norm(x, w, eps, affine=False),
        ),
        (
            N_(
                "you divided by the std (mean subtracted inside the variance): RMSNorm divides by the root mean "
                "square sqrt(mean(x^2) + eps), with no mean anywhere"
            ),
            lambda: x.double() / (x.double().var(-1, unbiased=False, keepdim=True) + eps).sqrt() * w.double(),
        ),
    ]
    if default_eps:
        mistakes += [
            (
                N_("the default eps should be 1e-6: rms_norm(x, weight, eps=1e-6)"),
                lambda e=e: ref_rms_norm(x, w, e),
            )
            for e in (1e-5, 1e-8, 0.0)
        ]
    return diagnose(y, mistakes)


def _rms_judge(case, out):
    f = case.facts
    x, w, eps = f["x"], f["weight"], f["eps"]
    exp = F.rms_norm(x.double(), (x.shape[-1],), w.double(), eps)
    y = expect_tensor(out["y"], "rms_norm(x, weight)", shape=exp.shape)
    _expect_dtype(y, x.dtype, "rms_norm")
    rtol, atol = _tol(x.dtype)
    hint = _rms_hint(y, x, w, eps, f["default_eps"]) or N_(
        "y = x / sqrt(mean(x^2 over the last dim) + eps) * weight"
    )
    assert_close(y, exp.to(y.dtype), msg("{x} output", x="rms_norm"), hint, rtol=rtol, atol=atol)
    _same_input(out, f, ("x", "weight"), "rms_norm")


# ---------------------------------------------------------------------------------------------
# RMSNorm (module)

_RMSM_VISIBLE = [
    ((2, 3, 5), None, False, 1.0, 2.0, torch.float32),
    ((3, 4, 6), 0.1, True, 0.5, 0.3, torch.float64),
    ((4, 5, 8), None, True, 0.0008, 0.0005, torch.float64),
]  # mean square near the default eps
_RMSM_HIDDEN = [
    ((5, 6, 7), 1e-3, True, -2.0, 0.1, torch.float32),
    ((7, 12), None, True, 3.0, 4.0, torch.float64),
]


def _rmsm_cases(hidden):
    specs = _RMSM_HIDDEN if hidden else _RMSM_VISIBLE
    cases = []
    for i, (shape, eps, with_state, mean, std, dt) in enumerate(specs):
        g = gen(3500 + 41 * i + (300 if hidden else 0))
        d = shape[-1]
        x = rand(*shape, dtype=dt, mean=mean, std=std, generator=g)
        weight = rand(d, dtype=dt, mean=1.5, std=0.5, generator=g) if with_state else torch.ones(d, dtype=dt)
        cases.append(
            _module_case(
                "RMSNorm",
                x,
                eps,
                {"weight": weight} if with_state else None,
                with_state,
                _drawn(mean, std),
                dict(weight=weight, eps=1e-6 if eps is None else eps),
            )
        )
    return cases


def _rmsm_judge(case, out):
    f = case.facts
    x, w, eps = f["x"], f["weight"], f["eps"]
    d = x.shape[-1]
    if f["fresh"]:
        _param_checks(out, "rn", d, x.dtype, "RMSNorm", names=("weight",))
    ref_mod = torch.nn.RMSNorm(d, eps=eps, dtype=torch.float64)
    with torch.no_grad():
        ref_mod.weight.copy_(w.double())
        exp = ref_mod(x.double())
    y = expect_tensor(out["y"], msg("{x} output", x="RMSNorm"), shape=exp.shape)
    _expect_dtype(y, x.dtype, "RMSNorm")
    hint = _rms_hint(y, x, w, eps, f["default_eps"])
    if not hint:
        hint = diagnose(
            y,
            [
                (
                    N_(
                        "the eps passed to __init__ is not used: store it (self.eps = eps) and use it in forward"
                    ),
                    lambda e=e: ref_rms_norm(x, w, e),
                )
                for e in (1e-6, 1e-5)
            ],
        )
    expected = N_("the same numbers as nn.RMSNorm(d_model, eps=eps) with the same weight are expected")
    assert_close(y, exp.to(y.dtype), msg("{x} output", x="RMSNorm"), hint or expected, *_tol(x.dtype))
    _same_input(out, f, ("x",), "RMSNorm")


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


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("layer_norm", _ln_cases, _ln_judge),
    Question("LayerNorm", _lnm_cases, _lnm_judge),
    Question("rms_norm", _rms_cases, _rms_judge),
    Question("RMSNorm", _rmsm_cases, _rmsm_judge),
    Question("batch_norm", _bn_cases, _bn_judge),
)

check = _core.lesson_check(QUESTIONS, "layer_norm")
