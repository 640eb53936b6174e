"""Lesson 03_residual: what its exercises share: the linear and LayerNorm references, the
sublayer connection's reference (`SublayerConnection` and `HybridSublayerConnection`), their case
builder and their judge."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import _judge
from .._core import Case, call, let, new, rand, ref
from .._judge import assert_close, diagnose, expect_tensor
from ..i18n import N_, msg


def _tol(dtype):
    return (1e-4, 1e-5) if dtype != torch.float64 else (1e-7, 1e-9)


def _linear_state(d_in, d_out, dt, g, zero=False):
    if zero:
        return {"weight": torch.zeros(d_out, d_in, dtype=dt), "bias": torch.zeros(d_out, dtype=dt)}
    return {
        "weight": rand(d_out, d_in, dtype=dt, std=1.5 / math.sqrt(d_in), generator=g),
        "bias": rand(d_out, dtype=dt, mean=0.2, std=0.5, generator=g),
    }


def _lin(x, state, prefix=""):
    return F.linear(x.double(), state[f"{prefix}weight"].double(), state[f"{prefix}bias"].double())


def _mode_words(mode: str):
    """A case label's words for the mode the module is called in."""
    return N_("eval mode") if mode == "eval" else N_("training mode")


def _drawn(mean, std):
    """A case label's words for how x was drawn: (mean 0.5, std 2)."""
    return msg("(mean {mean}, std {std})", mean=str(mean), std=str(std))


def _same_input(out, f, what):
    advice = N_("use out-of-place ops (torch.relu(h), not h.relu_(); nn.Dropout without inplace=True)")
    _judge.inputs_unchanged(out, f, ("x",), what, advice)


# ---------------------------------------------------------------------------------------------
# SublayerConnection


def _sublayer(spec, t):
    kind, state = spec
    y = _lin(t, state)
    return torch.tanh(y) if kind == "linear_tanh" else y


def _ln(t, norm_state):
    return F.layer_norm(
        t.double(), (t.shape[-1],), norm_state["weight"].double(), norm_state["bias"].double(), 1e-5
    )


def ref_sublayer_connection(x, norm_state, spec, pre_norm, placement=None, drop_all=False):
    """The expected output in float64. `placement` names a mistake model; drop_all: dropout(p=1)."""
    x = x.double()

    def ln(t):
        return _ln(t, norm_state)

    def sub(t):
        return _sublayer(spec, t)

    drop = (lambda t: torch.zeros_like(t)) if drop_all else (lambda t: t)
    placement = placement or ("pre" if pre_norm else "post")
    if placement == "pre":
        return x + drop(sub(ln(x)))
    if placement == "post":
        return ln(x + drop(sub(x)))
    if placement == "hybrid":
        return x + drop(ln(sub(x)))
    if placement == "pre_no_residual":
        return drop(sub(ln(x)))
    if placement == "post_no_residual":
        return ln(drop(sub(x)))
    if placement == "normed_residual":
        return ln(x) + drop(sub(ln(x)))
    if placement == "hybrid_no_residual":
        return drop(ln(sub(x)))
    if placement == "hybrid_drop_inside":  # x + norm(dropout(sublayer(x))): the norm after the dropout
        return x + ln(drop(sub(x)))
    if placement == "drop_everything":
        return drop(x + sub(ln(x))) if pre_norm else drop(ln(x + sub(x)))
    raise ValueError(placement)


def _sub_words(kind: str):
    """What each kind of sublayer in the cases is, in the labels."""
    if kind == "linear":
        return N_("an nn.Linear")
    if kind == "zero":
        return N_("a zero sublayer (nn.Linear with zero weight and bias)")
    assert kind == "linear_tanh", kind
    return "nn.Sequential(nn.Linear, nn.Tanh)"


def _around_a_sublayer(cls: str, shape, kind: str, mode: str, dt, g, **kw):
    """The steps of one case: `cls` (a SublayerConnection or its hybrid) with a random norm, around
    an nn.Linear (zeroed for "zero", followed by tanh for "linear_tanh"), called on a random x in
    `mode`. Draws x, the norm's weight and bias, then the sublayer's, from `g`, in that order.
    Returns (steps, x, norm_state, sub_state)."""
    d = shape[-1]
    x = rand(*shape, dtype=dt, mean=1.5, std=3.0, generator=g)
    norm_state = {
        "weight": rand(d, dtype=dt, mean=1.5, std=0.5, generator=g),
        "bias": rand(d, dtype=dt, mean=-0.5, std=1.0, generator=g),
    }
    sub_state = _linear_state(d, d, dt, g, zero=kind == "zero")
    steps = [
        new("blk", cls, d, state={f"norm.{k}": v for k, v in norm_state.items()}, dtype=dt, **kw),
        new("lin", "torch.nn.Linear", d, d, state=sub_state, dtype=dt),
    ]
    if kind == "linear_tanh":
        steps += [new("act", "torch.nn.Tanh"), new("sub", "torch.nn.Sequential", ref("lin"), ref("act"))]
    sub_ref = ref("sub") if kind == "linear_tanh" else ref("lin")
    if mode == "eval":
        steps.append(call("_mode", ref("blk", "eval")))
    # a second call on the same input: dropout that is on where it should be off changes it
    steps += [
        let("x", x),
        call("y", ref("blk"), ref("x"), sub_ref),
        call("y_again", ref("blk"), ref("x"), sub_ref),
    ]
    return steps, x, norm_state, sub_state


def _connection_case(cls, shape, kind, mode, dt, g, size, facts, **kw) -> Case:
    """A case of the sublayer connection `cls` (arguments `kw`) around a sublayer of `kind`."""
    steps, x, norm_state, sub_state = _around_a_sublayer(cls, shape, kind, mode, dt, g, **kw)
    args = ", ".join([str(shape[-1])] + [f"{k}={v}" for k, v in kw.items()])
    label = msg(
        "{module}, random norm weight and bias, {mode}, sublayer = {sublayer}, x {shape} {dtype} {stats}",
        module=f"{cls}({args})",
        mode=_mode_words(mode),
        sublayer=_sub_words(kind),
        shape=str(tuple(shape)),
        dtype=str(dt),
        stats=_drawn(1.5, 3),
    )
    facts = dict(
        x=x,
        norm_state=norm_state,
        spec=(kind, sub_state),
        p=kw.get("dropout"),
        mode=mode,
        kind=kind,
        raised_hint=_judge.leading_dims_hint(shape),
        **facts,
    )
    return Case(label, steps, ["y", "x", "y_again"], facts=facts, size=size)


def _judge_connection(out, f, exp, who, mistakes, expected) -> None:
    """The output of a sublayer connection against `exp`; on a mismatch, named after the first
    of `mistakes()` (hint, output) it matches, else `expected`."""
    x = f["x"]
    y = expect_tensor(out["y"], msg("{name} output", name=who), shape=exp.shape)
    _judge.expect_dtype(y, x.dtype, msg("{name} output", name=who))
    rtol, atol = _tol(x.dtype)
    _same_input(out, f, who)  # first: an answer that adds into x changes what the second call sees
    if _judge.close(y, exp.to(y.dtype), rtol, atol):
        return
    hint = diagnose(y, mistakes())
    again = out.get("y_again")
    random = (
        isinstance(again, torch.Tensor) and again.shape == y.shape and not _judge.close(again, y, rtol, atol)
    )
    if not hint and f["mode"] == "train" and f["p"] is None and random:
        hint = N_("with no dropout argument, dropout should default to 0.0 (no dropout)")
    if not hint and f["mode"] == "eval":
        hint = N_(
            "in eval mode dropout must do nothing: use nn.Dropout (it follows module.eval()), or "
            "F.dropout(h, p, training=self.training)"
        )
    assert_close(y, exp.to(y.dtype), msg("{name} output", name=who), hint or expected, rtol=rtol, atol=atol)
