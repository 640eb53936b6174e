"""Judge helpers: the comparisons a check module's judges make, each failing with a message that
says got vs expected and, when it can, which classic mistake the answer matches (`diagnose`).
They run where the judging happens (the student's kernel for a self-check, the grader's process
for a verdict) on results that have come back through the wire."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ._core import LINE, CheckFailure, Unsupported, got_expected, hint_line
from .i18n import N_, Msg, msg


def _fmt(t: torch.Tensor, limit: int = 6, at: int | None = None) -> str:
    """Up to `limit` values of `t` (flattened): the first ones, or with `at` (a flat index) the ones
    around it, so got and expected show where they differ."""
    flat = t.detach().reshape(-1)
    start = 0 if at is None else max(0, min(at - limit // 2, flat.numel() - limit))
    window = flat[start : start + limit].tolist()
    body = ", ".join(f"{v:.4g}" if t.dtype.is_floating_point else str(v) for v in window)
    before = "..., " if start > 0 else ""
    more = ", ..." if flat.numel() > start + limit else ""
    return f"[{before}{body}{more}]"


def expect_tensor(got: Any, what: str, shape=None, dtype=None) -> torch.Tensor:
    missing = _missing_attribute(got)
    if missing is not None:  # the module has no such attribute at all (self.gamma for self.weight)
        attr = f"self.{missing}"
        if shape is not None:
            wanted = msg("{attr}, a tensor of shape {shape}", attr=attr, shape=tuple(shape))
        else:
            wanted = msg("{attr}, a tensor", attr=attr)
        failure = CheckFailure(
            msg("{what} is missing: the module has no attribute {attr}.", what=what, attr=missing)
            + got_expected(msg("there is no {attr}", attr=attr), wanted)
            + hint_line(msg("there is no {attr}: the exercise names it", attr=attr))
        )
        failure.fact = True  # about the module, whatever else is wrong
        raise failure
    if not isinstance(got, torch.Tensor):
        raise CheckFailure(msg("{what} should be a tensor, got {got}", what=what, got=repr(got)))
    if shape is not None and tuple(got.shape) != tuple(shape):
        raise CheckFailure(
            msg("{what} has the wrong shape.", what=what) + got_expected(tuple(got.shape), tuple(shape))
        )
    if dtype is not None and got.dtype != dtype:
        raise CheckFailure(msg("{what} has the wrong dtype.", what=what) + got_expected(got.dtype, dtype))
    return got


# One rule for the whole course: a value is judged as the type the exercise names, before its value.
# Where it names a float, a Python number (int or float, not bool) is right and a tensor is not, even a
# 0-d one; where it names a scalar tensor, a tensor of shape () is right and a Python number or a
# tensor of shape (1,) is not. docs/authoring-lessons.md states the rule.

H_ITEM = N_("return a Python number: `.item()` turns a one-element tensor into one (or compute with `math`)")
H_NOT_ITEM = N_(
    "return the tensor itself (shape ()), not a Python number made of it with `.item()` or `float()`"
)
H_ONE_ELEMENT = N_("a tensor of shape (1,) is not a scalar: reduce without `keepdim`, or `.reshape(())`")


def type_of(value: Any) -> Msg | str:
    """What `value` is, for a got line: its type, and its shape or value when it has one."""
    if isinstance(value, bool):
        return msg("a bool ({value})", value=value)
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return msg("a tensor of shape () ({value})", value=f"{value.item():.6g}")
        return msg("a tensor of shape {shape}", shape=tuple(value.shape))
    if isinstance(value, int):
        return msg("an int ({value})", value=value)
    if isinstance(value, float):
        return msg("a float ({value})", value=f"{value:.6g}")
    if isinstance(value, Unsupported):
        return value.type_name
    return "None" if value is None else type(value).__name__


def expect_float(got: Any, what: str) -> float:
    """`got` as a float when it is a Python number; otherwise the type mismatch, before any value."""
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        return float(got)
    hint = H_ITEM if isinstance(got, torch.Tensor) and got.numel() == 1 else ""
    raise CheckFailure(
        msg("{what} should be a float (a Python number).", what=what)
        + got_expected(type_of(got), msg("a float"))
        + (hint_line(hint) if hint else ""),
        hint=hint,
    )


def expect_scalar_tensor(got: Any, what: str, hint: str = "") -> torch.Tensor:
    """`got` when it is a tensor of shape (); otherwise the type or shape mismatch, before any value.
    `hint`: the exercise's own advice for a tensor with more than one element."""
    if isinstance(got, torch.Tensor) and got.dim() == 0:
        return got
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        hint = H_NOT_ITEM
    elif isinstance(got, torch.Tensor) and got.numel() == 1:
        hint = H_ONE_ELEMENT
    elif not isinstance(got, torch.Tensor):
        hint = ""
    raise CheckFailure(
        msg("{what} should be a tensor of shape () (a scalar tensor).", what=what)
        + got_expected(type_of(got), msg("a tensor of shape ()"))
        + (hint_line(hint) if hint else ""),
        hint=hint,
    )


def _missing_attribute(got: Any) -> str | None:
    """The attribute name when `got` is an output that came back as a missing attribute."""
    if isinstance(got, Unsupported) and got.type_name.startswith("missing attribute"):
        import re

        m = re.search(r"has no attribute '(\w+)'", got.type_name)
        return m.group(1) if m else None
    return None


def expect_dtype(got: torch.Tensor, dtype, what: str) -> None:
    """Graded functions keep their input's dtype (float32 in, float32 out)."""
    if got.dtype != dtype:
        raise CheckFailure(
            msg("{what} should keep the input dtype.", what=what) + got_expected(got.dtype, dtype)
        )


def close(got: torch.Tensor, expected: torch.Tensor, rtol=None, atol=None) -> bool:
    if got.shape != expected.shape:
        return False
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        return bool(torch.equal(got.to(torch.bool), expected.to(torch.bool)))
    if rtol is None:
        rtol, atol = (1e-4, 1e-5) if expected.dtype != torch.float64 else (1e-7, 1e-9)
    g, e = got.to(torch.float64), expected.to(torch.float64)
    if torch.isnan(g).any() != torch.isnan(e).any():
        return False
    return bool(torch.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))


def assert_close(got: Any, expected: torch.Tensor, what: str, hint: str = "", rtol=None, atol=None):
    got = expect_tensor(got, what, shape=expected.shape)
    if close(got, expected, rtol, atol):
        return
    g, e = got.detach().to(torch.float64), expected.detach().to(torch.float64)
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        idx = (g != e).nonzero()[0].tolist()
        flat = int((g != e).reshape(-1).nonzero()[0])
        detail = msg("first difference at index {index}", index=tuple(idx))
    else:
        diff = (g - e).abs().nan_to_num(nan=float("inf"))
        flat = int(diff.reshape(-1).argmax())
        idx = np.unravel_index(flat, tuple(diff.shape)) if diff.dim() else ()
        detail = msg(
            "largest difference {diff} at index {index}: got {got}, expected {expected}",
            diff=f"{float(diff.reshape(-1)[flat]):.3g}",
            index=tuple(int(i) for i in idx),
            got=f"{float(g.reshape(-1)[flat]):.6g}",
            expected=f"{float(e.reshape(-1)[flat]):.6g}",
        )
    text = (
        msg("{what} is not what it should be.", what=what)
        + got_expected(_fmt(got, at=flat), _fmt(expected, at=flat))
        + LINE
        + detail
    )
    if hint:
        text += hint_line(hint)
    failure = CheckFailure(text, hint=hint)
    failure.separates = isinstance(hint, Diagnosis)
    raise failure


def mismatch(got: torch.Tensor, wrong: torch.Tensor, rtol=1e-3, atol=1e-4) -> float:
    """How far `got` is from `wrong`, in units of the tolerance (<= 1: they match); inf when the
    shapes or the NaN positions differ."""
    if not isinstance(wrong, torch.Tensor) or got.shape != wrong.shape:
        return math.inf
    g, w = got.detach().to(torch.float64), wrong.detach().to(torch.float64)
    gn, wn = torch.isnan(g), torch.isnan(w)
    if not torch.equal(gn, wn):
        return math.inf
    if g.numel() == 0 or bool(gn.all()):
        return 0.0
    g, w = g[~gn], w[~gn]
    if not (torch.isfinite(g).all() and torch.isfinite(w).all()):
        return 0.0 if torch.equal(g, w) else math.inf
    return float(((g - w).abs() / (atol + rtol * w.abs())).max())


class Diagnosis(Msg):
    """A hint `diagnose` found by matching the answer's output to one known mistake's output: a
    probe that separates that mistake from the others, so it may be named in a follow-up line."""


def diagnose(got: torch.Tensor, mistakes: list, rtol=1e-3, atol=1e-4) -> str:
    """The hint of the known mistake whose output `got` matches best, or "" when none matches.
    `mistakes` is a list of (hint, function computing that mistake's output). The best match, not
    the first: two mistakes can both come close on one input (the tutorial LayerNorm and the
    unbiased variance alone differ by eps), and the answer is the one it is closest to. On a tie the
    earlier entry wins, so list single mistakes before combinations."""
    best, best_hint = 1.0, ""
    for hint, compute in mistakes:
        try:
            err = mismatch(got, compute(), rtol, atol)
        except Exception:
            continue
        if err < best or (err <= 1.0 and not best_hint):
            best, best_hint = err, hint
    return Diagnosis(best_hint) if best_hint else best_hint


def with_pairs(singles: list, model: Callable) -> list:
    """(hint, compute) for each single mistake, then for every pair of them that change different
    things, so an answer with two bugs at once gets both named. `singles` is a list of
    (hint, kwargs for `model`); a pair merges the kwargs when their keys differ."""
    out = [(h, (lambda kw=kw: model(**kw))) for h, kw in singles]
    for i, (h1, k1) in enumerate(singles):
        for h2, k2 in singles[i + 1 :]:
            if set(k1).isdisjoint(k2):
                both = msg("two mistakes at once: {first}; and {second}", first=h1, second=h2)
                out.append((both, lambda kw={**k1, **k2}: model(**kw)))
    return out


LEADING_DIMS = N_(
    "x may have any number of leading dims, (..., d): work on the last dim only (x.shape[-1], x[..., i]), "
    "never unpack x.shape into a fixed number of names"
)


def leading_dims_hint(shape, usual: int = 3):
    """A case's `raised_hint` when its x has other leading dims than the usual (B, L, d): an answer
    that raised a shape error there assumed them."""
    from ._core import SHAPE_ERRORS

    return (LEADING_DIMS, SHAPE_ERRORS) if len(shape) != usual else None


OUT_OF_PLACE = N_("use out-of-place ops")


def inputs_unchanged(out: dict, facts: dict, names, who: str, advice: str = OUT_OF_PLACE) -> None:
    """Each input of `names` that came back must be what the case sent: the answer `who` must not
    modify its inputs in place."""
    for name in names:
        if name in out and not close(out[name], facts[name]):
            raise CheckFailure(
                msg("{who} modified its input {name} in place: {advice}", who=who, name=name, advice=advice)
            )


def function_judged(call: str, y: Any, y_exp: torch.Tensor, hint: str, tols: tuple, grads) -> None:
    """An autograd.Function applied as `call` ("Name.apply(...)"): its forward output against
    `y_exp` (within `tols`, rtol and atol), then a gradient for each of `grads` (name, its .grad
    after backward), which its backward must return."""
    y = expect_tensor(y, call, shape=y_exp.shape)
    rtol, atol = tols
    who = call.split(".")[0]
    assert_close(
        y, y_exp.to(y.dtype), msg("the forward output of {who}", who=who), hint, rtol=rtol, atol=atol
    )
    returns = f"return {', '.join('d' + name for name, _ in grads)}, None"
    for name, got in grads:
        if got is None:
            raise CheckFailure(
                msg(
                    "{name}.grad is None after backward: backward must return a gradient for {name} ({returns})",
                    name=name,
                    returns=returns,
                )
            )


def cache_pair(got: Any, exp_k: torch.Tensor, exp_v: torch.Tensor, what: str, limit: int | None = None):
    """(name, tensor, expected) for k, then v, of the KV cache `got`, which must be a pair (k, v);
    `limit`: how much of a wrong `got` the message shows."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        shown = repr(got) if limit is None else f"{got!r:.{limit}}"
        raise CheckFailure(msg("{what} should be a pair (k, v), got {got}", what=what, got=shown))
    for name, g, e in (("k", got[0], exp_k), ("v", got[1], exp_v)):
        yield name, expect_tensor(g, msg("{what}: {name}", what=what, name=name)), e
