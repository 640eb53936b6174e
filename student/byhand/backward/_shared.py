"""What several of lesson 08_backward's exercises share: the comparison of a gradient with
autograd's, and the layer-norm backward's float64 reference, its catalogued mistakes and the judge
of its three gradients (`layer_norm_backward`'s and `LayerNormFunction`'s checks both run them)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _judge
from .._core import LINE, got_expected, helper, hint_line
from .._core.steps import _student_line
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg


def _tols(expected: torch.Tensor, dtype):
    """Gradients are sums of products: the absolute tolerance follows their scale."""
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    return (2e-4, 2e-5 * scale) if dtype != torch.float64 else (1e-7, 1e-9 * scale)


def _assert_grad(got, expected, what, hint, dtype):
    rtol, atol = _tols(expected, dtype)
    got = expect_tensor(got, what, shape=expected.shape)
    _judge.expect_dtype(got, dtype, what)
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        hint = hint or msg("your result contains NaN where autograd's has none")
    assert_close(got, expected.to(dtype), what, hint, rtol=rtol, atol=atol)


def _unchanged(out, facts, names, fn_name):
    advice = msg("a backward function must leave its inputs as they are (use out-of-place ops)")
    _judge.inputs_unchanged(out, facts, names, fn_name, advice)


def _autograd(fn, inputs, grad_out):
    """d(<fn(*inputs), grad_out>)/d(inputs), by autograd in float64."""
    xs = [t.detach().double().requires_grad_(True) for t in inputs]
    y = fn(*xs)
    return torch.autograd.grad(y, xs, grad_out.double())


# ---------------------------------------------------------------------------------------------
# By hand, not by autograd: the exercises forbid it, so the answers run where it builds no graph


# bound when the checks are imported (the setup cell, before any answer): an answer that rebinds
# torch.inference_mode afterwards does not turn the rule off
INFERENCE_MODE = torch.inference_mode


def by_autograd(error: str) -> bool:
    """Is `error` ("Type: message") autograd's complaint that it has no graph to go back through, what
    torch.autograd.grad and .backward() raise where ops record nothing?"""
    return error.startswith("RuntimeError:") and "does not require grad" in error


def without_autograd(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` under torch.inference_mode(), where no op records a graph, not even
    inside torch.enable_grad(): ("ok", its result), or ("autograd", the error, (cell, line, code) of
    the answer's line that raised it) when autograd raised for want of a graph. Any other error goes
    on up, reported as an answer's error always is. Runs where the answer lives."""
    try:
        with INFERENCE_MODE():
            return ("ok", fn(*args, **kwargs))
    except RuntimeError as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
        if not by_autograd(error):
            raise
        at = _student_line(exc, getattr(fn, "__globals__", {})) or {}
        # (cell, line, code): the wire carries no dicts
        where = (at.get("cell", ""), at.get("line", 0), at.get("code", "")) if at else ()
        return ("autograd", error, where)


# a case's `call` of this instead of the answer: `call(out, BY_HAND, graded(name), *args)`
BY_HAND = helper("backward.without_autograd")

AUTOGRAD_HINT = N_(
    "compute the gradients from the formulas of this lesson: autograd (torch.autograd.grad, .backward()) "
    "is what the checks compare your answer with, not what may compute it"
)


def used_autograd(who: str, error: str, at, hint=AUTOGRAD_HINT) -> CheckFailure:
    """The failure of an answer whose call of autograd raised where autograd builds no graph."""
    where = ""  # the line of the answer that called autograd, (cell, line, code), as an error names it
    if isinstance(at, (tuple, list)) and len(at) == 3 and isinstance(at[1], int) and at[1] > 0:
        cell, line, code = str(at[0])[:200], at[1], str(at[2] or "")[:200]
        if code:
            where = LINE + msg("in your code: {cell}, line {line}: {code}", cell=cell, line=line, code=code)
        else:
            where = LINE + msg("in your code: {cell}, line {line}", cell=cell, line=line)
    return CheckFailure(
        msg(
            "{who} computes its gradients with autograd: called where autograd builds no graph "
            "(inside torch.inference_mode()), it raised autograd's error.",
            who=who,
        )
        + LINE
        + msg("got:      {code}", code=error)
        + LINE
        + msg("expected: {expected}", expected=msg("gradients computed from the formulas, without autograd"))
        + where
        + hint_line(hint)
    )


def by_hand(value, who: str):
    """What `without_autograd` sent back: the answer's result, or its failure when it used autograd."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == "ok":
        return value[1]
    if isinstance(value, (tuple, list)) and len(value) == 3 and value[0] == "autograd":
        raise used_autograd(who, str(value[1])[:300], value[2])
    raise CheckFailure(msg("{name}: the grader could not read what it returned", name=who))


# ---------------------------------------------------------------------------------------------
# layer_norm_backward


def ref_layer_norm_backward(dy, x, w, eps, mistake=None):
    """(dx, dweight, dbias) by the compact formula, or with one classic mistake (float64)."""
    dy, x, w = dy.double(), x.double(), w.double()
    d = x.shape[-1]
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=mistake in ("unbiased", "unbiased_var"), keepdim=True)
    e = {"eps_ignored": 0.0, "default_eps": 1e-5}.get(mistake, eps)
    rstd = 1 / (var.sqrt() + e) if mistake == "eps_outside" else (var + e).rsqrt()
    xhat = (x - mean) * rstd
    g = dy if mistake == "weight_ignored" else dy * w
    a, b = g.mean(-1, keepdim=True), (g * xhat).mean(-1, keepdim=True)
    if mistake == "unbiased":
        b = (g * xhat).sum(-1, keepdim=True) / (d - 1)
    a_dy, b_dy = dy.mean(-1, keepdim=True), (dy * xhat).mean(-1, keepdim=True)
    dx = {
        "no_mean_term": rstd * (g - xhat * b),
        "no_var_term": rstd * (g - a),
        "constant_stats": rstd * g,
        "var_term_sign": rstd * (g - a + xhat * b),
        "means_of_dy": rstd * (g - a_dy - xhat * b_dy),
    }.get(mistake, rstd * (g - a - xhat * b))

    def flat(t):
        return t.reshape(-1, d)  # (..., d) -> (tokens, d)

    dw = flat(dy * xhat).sum(0)
    if mistake == "dweight_uses_x":
        dw = flat(dy * x).sum(0)
    if mistake == "dweight_mean":
        dw = flat(dy * xhat).mean(0)
    db = flat(dy).mean(0) if mistake == "dbias_mean" else flat(dy).sum(0)
    return dx, dw, db


_LN_DX_MISTAKES = [
    (
        "constant_stats",
        N_(
            "your dx equals rstd * dy * weight: mean and variance were treated as constants. Both depend "
            "on x: dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) with g = dy * weight"
        ),
    ),
    (
        "no_mean_term",
        N_(
            "your dx misses the mean term -mean(g): the mean depends on x too (the path through mu). "
            "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * weight"
        ),
    ),
    (
        "no_var_term",
        N_(
            "your dx misses the variance term -x_hat * mean(g * x_hat): the variance depends on x too "
            "(the path through sigma^2). dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))"
        ),
    ),
    (
        "var_term_sign",
        N_(
            "your dx adds the variance term instead of subtracting it: + x_hat * mean(g * x_hat). "
            "Raising the variance shrinks every x_hat (d x_hat / d sigma^2 = -x_hat / (2 (sigma^2 + eps))), "
            "so the path through sigma^2 enters with a minus: dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))"
        ),
    ),
    (
        "means_of_dy",
        N_(
            "your mean terms use dy where they need g = dy * weight: mean(dy) and mean(dy * x_hat). The "
            "mean and variance paths start from the gradient reaching x_hat, which is g: "
            "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))"
        ),
    ),
    (
        "weight_ignored",
        N_("your dx ignores weight: the gradient reaching x_hat is g = dy * weight, not dy"),
    ),
    (
        "unbiased",
        N_(
            "you used the unbiased variance (divides by d-1); layer_norm uses the population variance, "
            "and the backward divides by d"
        ),
    ),
    (
        "unbiased_var",
        N_(
            "x_hat and rstd use the unbiased variance (x.var(-1) divides by d - 1 unless unbiased=False): "
            "layer_norm normalises with the population variance, the mean of (x - mean)^2, "
            "x.var(-1, unbiased=False)"
        ),
    ),
    ("eps_outside", N_("eps is added to the std, outside the sqrt: rstd = 1 / sqrt(var + eps)")),
    ("eps_ignored", N_("eps is ignored: rstd = 1 / sqrt(var + eps), with the eps passed in")),
    ("default_eps", N_("the eps passed in is not used (you used 1e-5): rstd = 1 / sqrt(var + eps)")),
]


def ref_ln_grads(x, w, b, eps, dy):
    """autograd through F.layer_norm, float64."""
    return _autograd(lambda x_, w_, b_: F.layer_norm(x_, (x.shape[-1],), w_, b_, eps), [x, w, b], dy)


def _param_grad_hint(name, got, x):
    """`got` has the wrong shape: name the reduction it did."""
    shape, lead, d = tuple(got.shape), tuple(x.shape[:-1]), x.shape[-1]
    if x.dim() == 1 and shape == ():
        return msg(
            "{name} is a scalar for a single token x of shape ({d},): with no leading dims, "
            ".sum(dim=()) sums over every dim (an empty tuple of dims means all of them). Reduce "
            "with .reshape(-1, d).sum(0), which works for any number of leading dims",
            name=name,
            d=d,
        )
    if shape == tuple(x.shape):
        return msg(
            "{name} is not reduced: it has x's shape {shape}. The same weight is used at every "
            "position, so its gradient is summed over all leading dims {dims}",
            name=name,
            shape=shape,
            dims=tuple(range(x.dim() - 1)),
        )
    if shape == lead:
        return msg(
            "{name} is reduced over the wrong dim: you summed over the features (dim -1). Sum over "
            "all leading dims instead, keeping the last one: shape (d,)",
            name=name,
        )
    if len(shape) >= 2 and shape[-1] == d:
        return msg(
            "{name} is reduced over the first dim only (shape {shape}): sum over all leading dims, "
            "e.g. .sum(dim={dims}) or .reshape(-1, d).sum(0)",
            name=name,
            shape=shape,
            dims=tuple(range(x.dim() - 1)),
        )
    return msg("{name} should have weight's shape ({d},): sum over all leading dims", name=name, d=d)


LNB_DEFAULT_EPS = N_(
    "the default eps should be 1e-5 (as F.layer_norm): layer_norm_backward(dy, x, weight, eps=1e-5)"
)


def _ln_grads_judge(grads, x, w, b, eps, dy, who, default_eps=False):
    """Judge (dx, dweight, dbias) against autograd; shared by both questions."""
    if not isinstance(grads, (tuple, list)) or len(grads) != 3:
        raise CheckFailure(
            msg(
                "{who} should return three tensors ({names}), got {got}",
                who=who,
                names="dx, dweight, dbias",
                got=f"{grads!r:.80}",
            )
        )
    exp = ref_ln_grads(x, w, b, eps, dy)
    names = ("dx", "dweight", "dbias")
    for name, got, e in zip(names[1:], grads[1:], exp[1:]):
        got = expect_tensor(got, msg("{name} from {who}", name=name, who=who))
        if tuple(got.shape) != tuple(e.shape):
            raise CheckFailure(
                msg("{what} has the wrong shape.", what=name)
                + got_expected(tuple(got.shape), tuple(e.shape))
                + hint_line(_param_grad_hint(name, got, x))
            )
    hints = dict(_LN_DX_MISTAKES)
    models = {k: ref_layer_norm_backward(dy, x, w, eps, k) for k in hints}
    dx = expect_tensor(grads[0], msg("{name} from {who}", name="dx", who=who), shape=exp[0].shape)
    defaults = []
    if default_eps:  # called without eps: a wrong default is named before an ignored eps
        defaults = [
            (LNB_DEFAULT_EPS, lambda e=e: ref_layer_norm_backward(dy, x, w, e)[0]) for e in (0.0, 1e-6, 1e-8)
        ]
    hint = diagnose(dx, defaults + [(hints[k], lambda k=k: models[k][0]) for k in hints])
    _assert_grad(
        dx,
        exp[0],
        msg("{name} from {who}", name="dx", who=who),
        hint
        or msg(
            "dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * weight, means over the last dim"
        ),
        x.dtype,
    )
    dw_hints = [
        (
            N_("dweight uses x instead of x_hat: y = x_hat * weight + bias, so dweight = sum(dy * x_hat)"),
            lambda: ref_layer_norm_backward(dy, x, w, eps, "dweight_uses_x")[1],
        ),
        (
            N_(
                "dweight is averaged over the leading dims: the gradient of a shared weight is the sum "
                "of its uses, not their mean"
            ),
            lambda: ref_layer_norm_backward(dy, x, w, eps, "dweight_mean")[1],
        ),
    ] + [
        (hints[k], lambda k=k: models[k][1])
        for k in ("unbiased", "unbiased_var", "eps_outside", "eps_ignored", "default_eps")
    ]
    dweight = msg("{name} from {who}", name="dweight", who=who)
    _assert_grad(grads[1], exp[1], dweight, diagnose(grads[1], dw_hints), x.dtype)
    db_hint = diagnose(
        grads[2],
        [
            (
                N_(
                    "dbias is averaged over the leading dims: the gradient of a shared bias is the sum of its uses"
                ),
                lambda: ref_layer_norm_backward(dy, x, w, eps, "dbias_mean")[2],
            )
        ],
    )
    _assert_grad(
        grads[2],
        exp[2],
        msg("{name} from {who}", name="dbias", who=who),
        db_hint or msg("dbias = sum of dy over all leading dims"),
        x.dtype,
    )


# ---------------------------------------------------------------------------------------------
# The reference answers, in the inputs' dtype: put in place of a student's answer that fails its own
# check while a later question's cases run (byhand._depends)


def reference_softmax_backward(dy, y):
    return (y.double() * (dy.double() - (dy.double() * y.double()).sum(-1, keepdim=True))).to(y.dtype)


def reference_layer_norm_backward(dy, x, weight, eps=1e-5):
    dx, dw, db = ref_layer_norm_backward(dy, x, weight, eps)
    return dx.to(x.dtype), dw.to(weight.dtype), db.to(weight.dtype)
