"""The check of `LayerNormFunction` (lesson 08_backward): the helper that runs the Function where
the student's code lives (`run_function`), its cases and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _core, _judge
from .._core import Case, call, gen, got_expected, graded, helper, hint_line, let, rand, ref
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import INFERENCE_MODE, _ln_grads_judge, _tols, by_autograd, used_autograd

EARLIER = ("layer_norm_backward",)  # its backward's: the reference when the student's fails

FN_AUTOGRAD_HINT = N_(
    "backward returns what your layer_norm_backward(dy, x, weight, ctx.eps) computes: autograd calls "
    "your backward, not the other way round"
)

# ---------------------------------------------------------------------------------------------
# LayerNormFunction: the helper that runs in the student's kernel


def run_function(cls, x, weight, bias, eps, dy):
    """Apply `cls` (an autograd.Function) to fresh leaves, backward with `dy` (in inference mode: a
    backward that calls autograd finds no graph and raises), and report raw facts:
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
    with INFERENCE_MODE():  # backward builds no graph here: autograd called inside it raises
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
    if error is not None and by_autograd(str(error)):
        raise used_autograd(msg("LayerNormFunction's backward"), str(error), None, FN_AUTOGRAD_HINT)
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
