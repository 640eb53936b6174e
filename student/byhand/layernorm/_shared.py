"""Lesson 02_layernorm: the references, mistake models and helpers its exercises share (float64,
computed in the judge's process)."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import Case, call, let, new, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg

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


# ---------------------------------------------------------------------------------------------
# The reference answers, in the input's dtype: put in place of a student's answer that fails its own
# check while a later question's cases run (a LayerNorm whose forward calls layer_norm: byhand._depends)


def reference_layer_norm(x, weight, bias, eps=1e-5):
    return ref_layer_norm(x, weight, bias, eps).to(x.dtype)


def reference_rms_norm(x, weight, eps=1e-6):
    return ref_rms_norm(x, weight, eps).to(x.dtype)
