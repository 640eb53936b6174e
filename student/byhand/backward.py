"""Checks for lesson 08_backward: gradients by hand.

Every reference gradient is autograd's, computed in the judge's process in float64 on the inputs the
judge generated (`torch.autograd.grad` through `torch.softmax`, `F.cross_entropy`, `F.layer_norm`,
and the attention of lesson 01). The mistake models are hand-written formulas, one classic mistake each, recomputed
on the same inputs, so a hint names what the answer does ("your dx equals dy * y: only the diagonal
term of the softmax Jacobian").

`LayerNormFunction` needs autograd where the student's code lives, so its cases call the helper
`run_function` there: it applies the Function under `torch.autograd.graph.saved_tensors_hooks`,
runs the backward pass with the judge's `dy`, and sends back the raw results only: the forward
output, the three gradients, one row of plain numbers per tensor the Function kept for its
backward (saved, or stored on `ctx`), and the error text if backward raised. The judge compares
the gradients with autograd itself and decides from the rows what the Function kept; it never runs
`gradcheck` in the kernel (a submission could fake that verdict, not autograd's numbers here).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import _core, _judge
from ._core import Case, Question, call, calling, gen, got_expected, graded, helper, hint_line, let, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "08_backward"
HELPERS = ("run_function",)


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
# softmax_backward


def ref_softmax_backward(dy, y, mistake=None):
    """dx = y * (dy - sum(dy * y)), or one classic mistake (float64)."""
    dy, y = dy.double(), y.double()
    s = (dy * y).sum(-1, keepdim=True)
    if mistake == "diag_only":
        return dy * y
    if mistake == "jacobian_diagonal":
        return dy * y * (1 - y)
    if mistake == "no_diag":
        return -y * s
    if mistake == "sign":
        return y * (s - dy)
    if mistake == "log_softmax":
        return dy - y * dy.sum(-1, keepdim=True)
    if mistake == "wrong_dim":
        return y * (dy - (dy * y).sum(0, keepdim=True))
    if mistake == "wrong_dim_2":
        return y * (dy - (dy * y).sum(-2, keepdim=True))
    if mistake == "full_sum":
        return y * (dy - (dy * y).sum())
    return y * (dy - s)


_SOFTMAX_MISTAKES = [
    (
        "diag_only",
        N_(
            "your dx equals dy * y: that keeps only the diagonal term diag(y) of the softmax Jacobian "
            "J = diag(y) - y y^T. Every y_j depends on every x_i: subtract y * sum(dy * y, dim=-1, keepdim=True)"
        ),
    ),
    (
        "jacobian_diagonal",
        N_(
            "your dx equals dy * y * (1 - y): that is only the diagonal of the Jacobian (the sigmoid "
            "derivative). The off-diagonal entries -y_i y_j count too: dx = y * (dy - sum(dy * y))"
        ),
    ),
    (
        "no_diag",
        N_("your dx equals -y * sum(dy * y): the diagonal term y * dy of the Jacobian is missing"),
    ),
    ("sign", N_("your dx has the wrong sign: dx = y * (dy - sum(dy * y)), not y * (sum(dy * y) - dy)")),
    (
        "log_softmax",
        N_(
            "your dx equals dy - y * sum(dy): that is the backward of log_softmax, not of softmax; "
            "softmax's is y * (dy - sum(dy * y))"
        ),
    ),
    (
        "wrong_dim",
        N_(
            "the sum(dy * y) runs over the wrong dim (dim 0): the softmax is over the last dim, so sum "
            "over dim=-1 with keepdim=True"
        ),
    ),
    (
        "wrong_dim_2",
        N_(
            "the sum(dy * y) runs over the wrong dim (dim -2): the softmax is over the last dim, so sum "
            "over dim=-1 with keepdim=True"
        ),
    ),
    (
        "full_sum",
        N_(
            "your sum(dy * y) adds up every entry of the tensor, one number for all rows: each row is its "
            "own softmax, so the dot product is per row, (dy * y).sum(dim=-1, keepdim=True)"
        ),
    ),
]


def _softmax_cases(hidden):
    # (leading dims, n, dtype, logit scale)
    specs = [
        ((3,), 5, torch.float32, 2.0),
        ((2, 4), 7, torch.float64, 1.0),
        ((5, 2, 3), 6, torch.float32, 3.0),
    ]
    if hidden:
        specs = [
            ((4,), 9, torch.float64, 4.0),
            ((3, 5), 11, torch.float32, 0.5),
            ((2, 3, 4), 8, torch.float64, 2.5),
            ((6, 7), 13, torch.float32, 5.0),
        ]
    cases = []
    for i, (lead, n, dt, scale) in enumerate(specs):
        g = gen(8100 + 17 * i + (500 if hidden else 0))
        x = rand(*lead, n, dtype=torch.float64, mean=0.5, std=scale, generator=g)
        y = torch.softmax(x, dim=-1).to(dt)
        dy = rand(*lead, n, dtype=dt, mean=0.4, std=1.5, generator=g)
        cases.append(
            Case(
                msg(
                    "y = softmax(x) with x {shape} (std {std}), dy {dy_shape} (mean 0.4), {dtype}",
                    shape=tuple(x.shape),
                    std=scale,
                    dy_shape=tuple(dy.shape),
                    dtype=dt,
                ),
                [let("dy", dy), let("y", y), call("dx", "softmax_backward", ref("dy"), ref("y"))],
                ["dx", "dy", "y"],
                facts=dict(x=x, y=y, dy=dy),
                size=x.numel(),
            )
        )
    return cases


def _softmax_judge(case, out):
    f = case.facts
    dy, y = f["dy"], f["y"]
    (exp,) = _autograd(lambda x: torch.softmax(x, dim=-1), [f["x"]], dy)
    dx = expect_tensor(out["dx"], "softmax_backward(dy, y)", shape=exp.shape)
    hints = dict(_SOFTMAX_MISTAKES)
    hint = diagnose(dx, [(hints[k], lambda k=k: ref_softmax_backward(dy, y, k)) for k in hints])
    _assert_grad(
        dx,
        exp,
        msg("dx (the gradient w.r.t. x)"),
        hint or "dx = y * (dy - sum(dy * y, dim=-1))",  # code: the same in every language
        y.dtype,
    )
    _unchanged(out, f, ("dy", "y"), "softmax_backward")


# ---------------------------------------------------------------------------------------------
# cross_entropy_backward


def ref_cross_entropy_backward(logits, target, mistake=None):
    """d F.cross_entropy(logits, target) / d logits (mean over the rows), or one classic mistake (float64)."""
    z = logits.double()
    n = z.shape[0]
    p = torch.softmax(z, dim=0 if mistake == "softmax_dim0" else -1)
    onehot = F.one_hot(target, z.shape[-1]).double()
    if mistake == "sum_not_mean":
        return p - onehot
    if mistake == "mean_over_all":
        return (p - onehot) / z.numel()
    if mistake == "sign":
        return (onehot - p) / n
    if mistake == "no_onehot":
        return p / n
    if mistake == "logits_not_probabilities":
        return (z - onehot) / n
    return (p - onehot) / n


_CE_MISTAKES = [
    (
        "sum_not_mean",
        N_(
            "your dlogits is N times too large: F.cross_entropy averages the loss over the N rows, so "
            "every row's gradient is divided by N"
        ),
    ),
    (
        "mean_over_all",
        N_(
            "your dlogits is divided by N * C, every entry of the logits: the loss is a mean over the N "
            "rows only (one loss per row), so divide by N"
        ),
    ),
    (
        "sign",
        N_(
            "your dlogits has the wrong sign: raising the target's logit lowers the loss, so its gradient "
            "is negative there and positive at the other classes"
        ),
    ),
    (
        "no_onehot",
        N_(
            "your dlogits is the probabilities alone, p / N: the -log p[target] term also gives -1 at each "
            "row's target class, which is missing"
        ),
    ),
    (
        "logits_not_probabilities",
        N_(
            "your dlogits uses the logits where the probabilities belong: the softmax of the logits enters "
            "the gradient, not the logits themselves"
        ),
    ),
    (
        "softmax_dim0",
        N_(
            "your softmax runs over the rows (dim 0): each row's logits are their own softmax, over the "
            "classes, dim=-1"
        ),
    ),
]

_CE_DIVIDES_BY_P = N_(
    "your dlogits has inf or NaN where autograd's is finite: a chain that divides by p (the log's "
    "gradient -1 / p[target] fed into softmax_backward) breaks when p[target] underflows to 0, as "
    "it does here for logits this far apart. Multiply the two steps out on paper: the 1 / p "
    "cancels, and what is left needs no division"
)


def _ce_cases(hidden):
    # (N rows, C classes, dtype, logit std); the last visible case has logits 200 apart (p underflows)
    specs = [
        (4, 5, torch.float64, 1.5),
        (6, 3, torch.float32, 2.0),
        (3, 7, torch.float32, 60.0),
    ]
    if hidden:
        specs = [
            (9, 11, torch.float64, 3.0),
            (2, 13, torch.float32, 0.5),
            (7, 4, torch.float64, 80.0),
            (12, 6, torch.float32, 1.0),
        ]
    cases = []
    for i, (n, c, dt, scale) in enumerate(specs):
        g = gen(8500 + 29 * i + (500 if hidden else 0))
        z = rand(n, c, dtype=dt, mean=0.7, std=scale, generator=g)
        t = torch.randint(0, c, (n,), generator=g)
        if scale > 10:  # make some target the row's smallest logit: p[target] underflows to 0
            t[0] = int(z[0].argmin())
        cases.append(
            Case(
                msg(
                    "logits {shape} (std {std}), target {target_shape} int64, {dtype}",
                    shape=(n, c),
                    std=scale,
                    target_shape=(n,),
                    dtype=dt,
                ),
                [
                    let("logits", z),
                    let("target", t),
                    call("dlogits", "cross_entropy_backward", ref("logits"), ref("target")),
                ],
                ["dlogits", "logits", "target"],
                facts=dict(logits=z, target=t),
                size=z.numel() * (100 if scale > 10 else 1),  # the underflow case is judged last
            )
        )
    return cases


def _ce_judge(case, out):
    f = case.facts
    z, t = f["logits"], f["target"]
    (exp,) = _autograd(lambda z_: F.cross_entropy(z_, t), [z], torch.tensor(1.0, dtype=torch.float64))
    got = expect_tensor(out["dlogits"], "cross_entropy_backward(logits, target)", shape=exp.shape)
    if not torch.isfinite(got).all():
        what = msg("{name} from {who}", name="dlogits", who="cross_entropy_backward")
        raise CheckFailure(msg("{what} contains inf or NaN.", what=what) + hint_line(_CE_DIVIDES_BY_P))
    hints = dict(_CE_MISTAKES)
    hint = diagnose(got, [(hints[k], lambda k=k: ref_cross_entropy_backward(z, t, k)) for k in hints])
    _assert_grad(
        got,
        exp,
        msg("dlogits (the gradient of the mean cross-entropy w.r.t. the logits)"),
        hint or msg("chain the log's gradient at the target class into the softmax's backward and simplify"),
        z.dtype,
    )
    _unchanged(out, f, ("logits",), "cross_entropy_backward")


# ---------------------------------------------------------------------------------------------
# layer_norm_backward


def ref_layer_norm_backward(dy, x, w, eps, mistake=None):
    """(dx, dweight, dbias) by the compact formula, or with one classic mistake (float64)."""
    dy, x, w = dy.double(), x.double(), w.double()
    d = x.shape[-1]
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=mistake == "unbiased", keepdim=True)
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
    ("eps_outside", N_("eps is added to the std, outside the sqrt: rstd = 1 / sqrt(var + eps)")),
    ("eps_ignored", N_("eps is ignored: rstd = 1 / sqrt(var + eps), with the eps passed in")),
    ("default_eps", N_("the eps passed in is not used (you used 1e-5): rstd = 1 / sqrt(var + eps)")),
]


def _ln_cases(hidden):
    # (leading dims, d, eps or None, x mean, x std, dtype)
    specs = [
        ((5,), 4, None, 1.0, 2.0, torch.float32),
        (
            (3, 4),
            6,
            1e-5,
            -0.5,
            0.5,
            torch.float64,
        ),  # dy a transposed view (not contiguous), as autograd may pass it
        ((2, 3, 5), 7, 0.1, 2.0, 0.3, torch.float32),
        ((4,), 6, None, 0.5, 0.01, torch.float64),  # variance near the default eps: the default shows
        ((), 5, 0.1, 1.0, 2.0, torch.float32),  # one token, no leading dims, as a hidden case has
    ]
    if hidden:
        specs = [
            ((7,), 8, 0.1, 0.5, 0.25, torch.float64),
            ((4, 5), 9, None, -3.0, 4.0, torch.float32),
            ((2, 3, 4), 5, 1e-3, 1.0, 0.1, torch.float64),
            ((3, 2, 2, 3), 11, 1e-5, 0.0, 1.5, torch.float32),
            ((), 10, None, 1.0, 2.0, torch.float64),  # one token, no leading dims
        ]
    cases = []
    for i, (lead, d, eps, mean, std, dt) in enumerate(specs):
        g = gen(8200 + 31 * i + (500 if hidden else 0))
        x = rand(*lead, d, dtype=dt, mean=mean, std=std, generator=g)
        w = rand(d, dtype=dt, mean=1.5, std=0.5, generator=g)
        dy = rand(*lead, d, dtype=dt, mean=0.5, std=1.0, generator=g)
        kw = {} if eps is None else {"eps": eps}
        strided = not hidden and i == 1
        if strided:  # the same values, as a transposed view of a contiguous tensor
            steps = [
                let("dy_t", dy.transpose(0, 1).contiguous()),
                call("dy", ref("dy_t", "transpose"), 0, 1),
                let("x", x),
                let("weight", w),
                call("grads", "layer_norm_backward", ref("dy"), ref("x"), ref("weight"), **kw),
            ]
        else:
            steps = calling("grads", "layer_norm_backward", dict(dy=dy, x=x, weight=w), **kw)
        if eps is None:  # the same call with eps=1e-5 given: its own mistakes are named before the default's
            steps.append(
                call("grads_explicit", "layer_norm_backward", ref("dy"), ref("x"), ref("weight"), eps=1e-5)
            )
        label = msg(
            "x {shape} (mean {mean}, std {std}), {dy}, random weight, {eps}, {dtype}",
            shape=tuple(x.shape),
            mean=mean,
            std=std,
            dy=msg("dy {shape} (a non-contiguous transposed view)", shape=tuple(dy.shape))
            if strided
            else f"dy {tuple(dy.shape)}",
            eps=N_("eps=default") if eps is None else f"eps={eps}",
            dtype=dt,
        )
        facts = dict(x=x, weight=w, dy=dy, eps=1e-5 if eps is None else eps, default_eps=eps is None)
        size = x.numel() if lead else 10**6  # judged last: the other cases name the usual mistakes
        outputs = ["grads", "dy", "x", "weight"] + (["grads_explicit"] if eps is None else [])
        cases.append(Case(label, steps, outputs, facts=facts, size=size))
    return cases


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
        for k in ("unbiased", "eps_outside", "eps_ignored", "default_eps")
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


def _ln_judge(case, out):
    f = case.facts
    x, w, dy, eps = f["x"], f["weight"], f["dy"], f["eps"]
    b = torch.zeros_like(w)
    if "grads_explicit" in out:
        _ln_grads_judge(out["grads_explicit"], x, w, b, eps, dy, "layer_norm_backward")
    _ln_grads_judge(out["grads"], x, w, b, eps, dy, "layer_norm_backward", f.get("default_eps", False))
    _unchanged(out, f, ("dy", "x", "weight"), "layer_norm_backward")


# ---------------------------------------------------------------------------------------------
# attention_backward


def _finite_fill(dtype):
    return torch.finfo(dtype).min


def ref_attention(q, k, v, mask=None):
    """Lesson 01's attention, written so that autograd gives finite gradients on a fully masked row:
    masked scores get the most negative float (not -inf) and a row with no allowed key is zeroed."""
    scale = 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale  # (..., Lq, Lk)
    if mask is None:
        return torch.softmax(s, -1) @ v
    s = s.masked_fill(~mask, _finite_fill(s.dtype))
    p = torch.softmax(s, -1) * mask.any(-1, keepdim=True)  # dead rows -> 0
    return p @ v  # (..., Lq, Lk) x (..., Lk, d_v) -> (..., Lq, d_v)


def ref_attention_backward(d_out, q, k, v, mask=None, mistake=None):
    """(dq, dk, dv) by the hand formulas, or with one classic mistake (float64)."""
    d_out, q, k, v = d_out.double(), q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1])
    fwd_scale = {"no_scale_forward": 1.0, "scale_dk": 1 / q.shape[-1]}.get(mistake, scale)
    bwd_scale = {"no_scale_forward": 1.0, "no_scale_backward": 1.0, "scale_dk": 1 / q.shape[-1]}.get(
        mistake, scale
    )
    s = q @ k.transpose(-2, -1) * fwd_scale
    m = mask
    if mistake == "mask_ignored":
        m = None
    elif mistake == "mask_inverted" and mask is not None:
        m = ~mask
    if m is not None:
        s = s.masked_fill(~m, -math.inf)
    p = torch.nan_to_num(torch.softmax(s, -1), nan=0.0)
    if mistake == "mask_nan" and m is not None:
        p = torch.softmax(s, -1)
    dv = p.transpose(-2, -1) @ d_out
    dp = d_out @ v.transpose(-2, -1)
    if mistake == "softmax_diag_only":
        ds = p * dp
    else:
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    if mistake == "dk_no_transpose":  # dS q exists only when Lq = Lk: otherwise nothing to match
        dk = ds @ q * bwd_scale if ds.shape[-1] == q.shape[-2] else None
        return ds @ k * bwd_scale, dk, dv
    return ds @ k * bwd_scale, ds.transpose(-2, -1) @ q * bwd_scale, dv


_DK_NO_TRANSPOSE = N_(
    "your dk is dS q, without the transpose: S = q k^T / sqrt(d_k) makes S[i, j] depend on key j "
    "through every query i, so dk sums over the queries, dk = dS^T q / sqrt(d_k) "
    "(shape (..., Lk, d_k); dS q only has that shape when Lq = Lk)"
)

_ATTN_MISTAKES = [
    (
        "no_scale_backward",
        N_(
            "dq and dk miss the scale: scores = q k^T / sqrt(d_k), so dq = dS k / sqrt(d_k) and "
            "dk = dS^T q / sqrt(d_k)"
        ),
    ),
    (
        "no_scale_forward",
        N_(
            "the attention weights are recomputed without the scale 1/sqrt(d_k) (and dq, dk miss it): "
            "scores = q k^T / sqrt(d_k)"
        ),
    ),
    (
        "scale_dk",
        N_(
            "the scores are divided by d_k: attention divides q k^T by sqrt(d_k), so the weights and "
            "dq, dk use 1/sqrt(d_k)"
        ),
    ),
    (
        "mask_ignored",
        N_(
            "the mask is ignored: masked keys must get weight 0 in the forward recomputation, so they get "
            "no gradient (fill the scores where mask is False with -inf before the softmax)"
        ),
    ),
    (
        "mask_inverted",
        N_(
            "the mask polarity is inverted: True means 'may attend', so fill the scores where the mask is False"
        ),
    ),
    (
        "softmax_diag_only",
        N_(
            "dS = P * dP keeps only the diagonal term of the softmax Jacobian: "
            "dS = P * (dP - sum(dP * P, dim=-1, keepdim=True))"
        ),
    ),
    ("dk_no_transpose", _DK_NO_TRANSPOSE),
]

_NAN_HINT = N_(
    "your gradients contain NaN: a fully masked row (a query with no allowed key) has softmax of all "
    "-inf = NaN. Its weights are 0 (lesson 1), so its dS is 0: torch.nan_to_num the weights, then "
    "the row gives dq = 0 and adds nothing to dk and dv"
)


# a case's mask, by its kind (`_core.random_mask`)
_MASK_KINDS = {
    None: N_("mask={mask} (none)"),
    "random": N_("mask={mask} (random)"),
    "causal": N_("mask={mask} (causal)"),
    "dead_row": N_("mask={mask} (dead_row)"),
    "broadcast": N_("mask={mask} (broadcast)"),
}


def _attn_cases(hidden):
    # (leading dims, Lq, Lk, d_k, d_v, mask kind, dtype)
    specs = [
        ((), 4, 4, 6, 3, None, torch.float64),  # the smallest, square: dS q has dk's shape only when Lq = Lk
        ((2,), 3, 5, 8, 6, None, torch.float32),
        ((2, 3), 5, 4, 16, 7, "random", torch.float64),
        ((3,), 6, 6, 12, 5, "causal", torch.float32),
        ((2, 2), 4, 7, 9, 3, "dead_row", torch.float64),
    ]
    if hidden:
        specs = [
            ((3, 2), 7, 9, 32, 10, "broadcast", torch.float32),
            ((4,), 9, 9, 24, 11, "causal", torch.float64),
            ((2, 3), 6, 8, 20, 13, "dead_row", torch.float32),
            ((2, 2, 2), 5, 6, 10, 4, "dead_row", torch.float64),
            ((5,), 8, 11, 64, 6, None, torch.float64),
        ]
    cases = []
    for i, (lead, lq, lk, dk, dv, mk, dt) in enumerate(specs):
        g = gen(8300 + 41 * i + (500 if hidden else 0))
        q = rand(*lead, lq, dk, dtype=dt, mean=0.5, std=1.5, generator=g)
        k = rand(*lead, lk, dk, dtype=dt, mean=-0.3, std=1.5, generator=g)
        v = rand(*lead, lk, dv, dtype=dt, mean=1.0, std=2.0, generator=g)
        d_out = rand(*lead, lq, dv, dtype=dt, mean=0.3, std=1.0, generator=g)
        mask = _core.random_mask(mk, lead, lq, lk, g)
        if mk == "broadcast":
            mask[2, :] = False  # and a query with no allowed key
        steps = [let("d_out", d_out), let("q", q), let("k", k), let("v", v)]
        args = [ref("d_out"), ref("q"), ref("k"), ref("v")]
        if mask is None:
            steps.append(call("grads", "attention_backward", *args))
        else:
            steps += [let("mask", mask), call("grads", "attention_backward", *args, mask=ref("mask"))]
        label = msg(
            "d_out {d_out}, q {q}, k {k}, v {v}, {dtype}, {mask}",
            d_out=tuple(d_out.shape),
            q=tuple(q.shape),
            k=tuple(k.shape),
            v=tuple(v.shape),
            dtype=dt,
            mask=msg(_MASK_KINDS[mk], mask="none" if mask is None else tuple(mask.shape)),
        )
        cases.append(
            Case(
                label,
                steps,
                ["grads", "d_out", "q", "k", "v"],
                facts=dict(q=q, k=k, v=v, d_out=d_out, mask=mask),
                size=q.numel() + k.numel(),
            )
        )
    return cases


def _attn_judge(case, out):
    f = case.facts
    q, k, v, d_out, mask = f["q"], f["k"], f["v"], f["d_out"], f["mask"]
    grads = out["grads"]
    if not isinstance(grads, (tuple, list)) or len(grads) != 3:
        raise CheckFailure(
            msg(
                "{who} should return three tensors ({names}), got {got}",
                who="attention_backward",
                names="dq, dk, dv",
                got=f"{grads!r:.80}",
            )
        )
    exp = _autograd(lambda q_, k_, v_: ref_attention(q_, k_, v_, mask), [q, k, v], d_out)
    hints = dict(_ATTN_MISTAKES)
    models = {key: ref_attention_backward(d_out, q, k, v, mask, key) for key in hints}
    for i, name in sorted(enumerate(("dq", "dk", "dv")), key=lambda t: -t[0]):  # dv first: it needs no dS
        got = expect_tensor(grads[i], name, shape=exp[i].shape)
        what = msg("{name} from {who}", name=name, who="attention_backward")
        if torch.isnan(got).any():
            raise CheckFailure(msg("{what} contains NaN.", what=what) + hint_line(_NAN_HINT))
        hint = diagnose(got, [(hints[key], lambda key=key: models[key][i]) for key in hints])
        _assert_grad(
            got,
            exp[i],
            what,
            hint
            or msg(
                "recompute P = softmax(q k^T / sqrt(d_k), masked); dv = P^T d_out; dP = d_out v^T; "
                "dS = P * (dP - sum(dP * P, -1)); dq = dS k / sqrt(d_k); dk = dS^T q / sqrt(d_k)"
            ),
            q.dtype,
        )
    _unchanged(out, f, ("d_out", "q", "k", "v"), "attention_backward")


# ---------------------------------------------------------------------------------------------
# LayerNormFunction: the helper that runs in the student's kernel


def run_function(cls, x, weight, bias, eps, dy):
    """Apply `cls` (an autograd.Function) to fresh leaves, backward with `dy`, and report raw facts:
    (y, dx, dweight, dbias, kept, backward_error). `kept` has one row per tensor kept for backward:
    [how ("saved": by save_for_backward; "inner": by an op inside forward, i.e. a graph built there;
    "ctx": an attribute of ctx), numel, bytes, storage number (same storage, same number), role
    ("x", "weight", "bias", "y" or "other"), part of an autograd graph (0/1)]."""
    apply = getattr(cls, "apply", cls)  # a stub that is not a class still says "not done"
    x, weight, bias = (t.detach().clone().requires_grad_(True) for t in (x, weight, bias))
    storages: dict = {}

    def storage_id(t):
        return storages.setdefault(t.untyped_storage().data_ptr(), len(storages))

    roles = {storage_id(t): name for name, t in (("x", x), ("weight", weight), ("bias", bias))}
    y, node, saved = _core.apply_recording(apply, x, weight, bias, eps)
    if isinstance(y, torch.Tensor):
        roles.setdefault(storage_id(y), "y")
    kept = []
    for how, t in saved:
        sid = storage_id(t)
        inner = t.grad_fn is not None and t.grad_fn is not node  # part of a graph built inside forward
        leaf = t.requires_grad and t.is_leaf and roles.get(sid) not in ("x", "weight", "bias")
        kept.append(
            [how, t.numel(), t.numel() * t.element_size(), sid, roles.get(sid, "other"), int(inner or leaf)]
        )
    error = _core.backward_error(y, dy)
    return y.detach() if isinstance(y, torch.Tensor) else y, x.grad, weight.grad, bias.grad, kept, error


# ---------------------------------------------------------------------------------------------
# LayerNormFunction: cases and judge


def _fn_cases(hidden):
    # (leading dims, d, eps, x mean, x std, dtype)
    specs = [
        ((6,), 5, 1e-5, 1.0, 2.0, torch.float64),
        ((3, 4), 8, 0.1, -1.0, 0.3, torch.float32),
        ((), 7, 1e-5, 0.5, 1.5, torch.float64),  # one token, no leading dims, as a hidden case has
    ]
    if hidden:
        specs = [
            ((2, 3, 4), 7, 1e-5, 2.0, 1.5, torch.float32),
            ((5, 3), 12, 0.05, 0.5, 0.2, torch.float64),
            ((2, 2, 3, 2), 6, 1e-3, 0.0, 3.0, torch.float64),
            ((), 9, 1e-5, -1.0, 0.5, torch.float64),  # one token, no leading dims
        ]
    cases = []
    for i, (lead, d, eps, mean, std, dt) in enumerate(specs):
        g = gen(8400 + 43 * i + (500 if hidden else 0))
        x = rand(*lead, d, dtype=dt, mean=mean, std=std, generator=g)
        w = rand(d, dtype=dt, mean=1.5, std=0.5, generator=g)
        b = rand(d, dtype=dt, mean=-0.5, std=1.0, generator=g)
        dy = rand(*lead, d, dtype=dt, mean=0.5, std=1.0, generator=g)
        steps = [let("x", x), let("weight", w), let("bias", b), let("dy", dy)]
        run = helper("backward.run_function")
        steps.append(
            call("r", run, graded("LayerNormFunction"), ref("x"), ref("weight"), ref("bias"), eps, ref("dy"))
        )
        label = msg(
            "{call} with x {shape} (mean {mean}, std {std}), random weight and bias, then backward with a "
            "random dy, {dtype}",
            call=f"LayerNormFunction.apply(x, weight, bias, eps={eps})",
            shape=tuple(x.shape),
            mean=mean,
            std=std,
            dtype=dt,
        )
        cases.append(
            Case(
                label,
                steps,
                ["r"],
                facts=dict(x=x, weight=w, bias=b, dy=dy, eps=eps),
                size=x.numel() if lead else 10**6,
            )
        )
    return cases


def _kept_summary(kept, x):
    """From the kernel's rows: distinct storages kept, full-size ones, bytes; nothing computed there."""
    rows = [r for r in kept if isinstance(r, (list, tuple)) and len(r) == 6]
    distinct = {}
    for how, numel, nbytes, sid, role, graph in rows:
        distinct.setdefault(sid, (int(numel), int(nbytes), role))
    full = [s for s, (n, _, role) in distinct.items() if n >= x.numel() and role not in ("weight", "bias")]
    return dict(
        rows=rows,
        storages=len(distinct),
        full=len(full),
        elements=sum(n for n, _, _ in distinct.values()),
        bytes=sum(b for _, b, _ in distinct.values()),
        graph=any(r[5] for r in rows) or any(r[0] == "inner" for r in rows),
    )


def _fn_judge(case, out):
    f = case.facts
    x, w, b, dy, eps = f["x"], f["weight"], f["bias"], f["dy"], f["eps"]
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 6:
        raise CheckFailure(msg("the grader could not apply LayerNormFunction (no results came back)"))
    y, dx, dw, db, kept, error = r
    kept = kept if isinstance(kept, (list, tuple)) else []
    info = _kept_summary(kept, x)
    if error is not None:
        if info["storages"] == 0 or info["elements"] < x.numel():
            hint = msg(
                "your forward saves nothing its backward needs (it kept "
                "{n} tensors): save x and weight with ctx.save_for_backward(x, weight), "
                "store eps on ctx (ctx.eps = eps), and read them back with ctx.saved_tensors",
                n=info["storages"],
            )
        elif "number of gradients" in str(error):
            hint = msg(
                "backward must return one gradient per input of forward: (dx, dweight, dbias, None), None for eps"
            )
        elif "invalid gradient" in str(error):
            hint = msg(
                "a gradient has the wrong shape: dweight and dbias have weight's shape (summed over leading dims)"
            )
        else:
            hint = msg("check what forward saves and what backward reads back")
        raise CheckFailure(
            msg("the backward pass of LayerNormFunction raised {error}", error=str(error)) + hint_line(hint)
        )
    y_exp = F.layer_norm(x.double(), (x.shape[-1],), w.double(), b.double(), eps)
    expected = msg("forward should return layer_norm(x, weight, bias, eps), with the eps passed in")
    grads = (("x", dx), ("weight", dw), ("bias", db))
    _judge.function_judged(
        "LayerNormFunction.apply(x, weight, bias, eps)", y, y_exp, expected, _tols(y_exp, x.dtype), grads
    )
    _ln_grads_judge((dx, dw, db), x, w, b, eps, dy, msg("LayerNormFunction's backward"))
    if info["graph"]:
        raise CheckFailure(
            msg(
                "LayerNormFunction saves the whole graph: its forward built an autograd graph (tensors saved "
                "by ops inside forward, or kept with a grad_fn), so the primitive ops' intermediates stay in "
                "memory ({n} tensors, {nbytes} bytes).",
                n=info["storages"],
                nbytes=info["bytes"],
            )
            + hint_line(
                msg(
                    "do not turn autograd back on inside forward (it runs with autograd off); save only x and "
                    "weight, and let backward call layer_norm_backward instead of torch.autograd.grad"
                )
            )
        )
    on_ctx = [r for r in info["rows"] if r[0] == "ctx"]
    if on_ctx:
        roles = sorted({str(r[4]) for r in on_ctx})
        raise CheckFailure(
            msg("LayerNormFunction keeps tensors as attributes of ctx instead of saving them.")
            + got_expected(
                msg(
                    "{n} tensors stored as ctx attributes (roles: {roles})",
                    n=len(on_ctx),
                    roles=", ".join(roles),
                ),
                msg("tensors kept with ctx.save_for_backward(x, weight), plain values (eps) as attributes"),
            )
            + hint_line(
                msg(
                    "use ctx.save_for_backward(x, weight) and ctx.saved_tensors, not ctx.x = x: autograd "
                    "then checks that no in-place op changed them before backward (a stale ctx.x gives wrong "
                    "gradients silently), frees them once backward has run, and lets saved-tensor hooks "
                    "(offloading, checkpointing) see them; ctx.x = y on an output also makes a reference cycle "
                    "that leaks memory"
                )
            )
        )
    budget = x.numel() + 4 * (x.numel() // x.shape[-1]) + 4 * x.shape[-1]
    if info["full"] > 1 or info["elements"] > budget:
        raise CheckFailure(
            msg("LayerNormFunction saves more than its backward needs.")
            + got_expected(
                msg(
                    "{n} tensors, {full} the size of x, {elements} numbers",
                    n=info["storages"],
                    full=info["full"],
                    elements=info["elements"],
                ),
                msg(
                    "at most one tensor the size of x ({size} numbers) plus per-row statistics "
                    "and weight, {budget} numbers in all",
                    size=x.numel(),
                    budget=budget,
                ),
            )
            + hint_line(
                msg(
                    "it saves its input plus intermediates it does not need: layer_norm_backward(dy, x, "
                    "weight, eps) needs only x and weight (and eps, stored on ctx)"
                )
            )
        )
    if info["storages"] == 0:
        raise CheckFailure(
            msg(
                "LayerNormFunction's backward got the right gradients, yet its forward kept no tensor for it "
                "(neither saved nor on ctx)."
            )
            + hint_line(
                msg(
                    "backward must take what it needs from ctx "
                    "(ctx.save_for_backward / ctx.saved_tensors), not from a global or a closure"
                )
            )
        )


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("softmax_backward", _softmax_cases, _softmax_judge),
    Question("cross_entropy_backward", _ce_cases, _ce_judge),
    Question("layer_norm_backward", _ln_cases, _ln_judge),
    Question("attention_backward", _attn_cases, _attn_judge, needs=("softmax_backward",)),
    Question("LayerNormFunction", _fn_cases, _fn_judge, needs=("layer_norm_backward",)),
)

check = _core.lesson_check(QUESTIONS, "softmax_backward", devices=False)
