"""The check of `CausalSelfAttention` (lesson 07_decoder): its cases, its catalogued mistakes and
its judge (the reference, `ref_attention`, is in `_shared.py`: the GPT's runs it too)."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import LINE, AnswerError, Case, call, gen, got_expected, helper, hint_line, let, new, rand, ref
from .._core.known_errors import explain_error
from .._core.steps import _student_line
from .._judge import CheckFailure, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import (
    CACHED,
    F64,
    ReferenceCausalSelfAttention,
    _check_cache,
    _compare_y,
    _pair,
    _tol,
    attn_state,
    ref_attention,
)

REFERENCE = ReferenceCausalSelfAttention  # what replaces an answer that fails (byhand._depends)

# a device every torch has, on a CPU-only machine too: a tensor the forward makes on the CPU shows
OTHER_DEVICE = torch.device("meta")
VIEW_ERROR = "view size is not compatible with input tensor's size and stride"  # torch's words


def attend(attn, x):
    """`attn(x)`, run where the student's code lives. When it raises torch's "view size is not
    compatible" error: ("raised", the error, [cell, line, code] of the student's line that raised it
    or None, the y that the same call gives with each such view done by reshape, or None), so the
    judge can tell a view that splits the heads without the transpose (its y is that mistake's) from
    one that merges them after the transpose (its y is right: only the view was wrong)."""
    try:
        return attn(x)
    except RuntimeError as exc:
        if VIEW_ERROR not in str(exc):
            raise
        error = f"{type(exc).__name__}: {exc}"[:2000]
        at = _student_line(exc, getattr(getattr(type(attn), "forward", None), "__globals__", None))
    own = torch.Tensor.__dict__.get("view")  # torch's view is its C base class's: usually none here
    original = torch.Tensor.view

    def view(self, *shape, **kwargs):
        try:
            return original(self, *shape, **kwargs)
        except RuntimeError as exc:
            if VIEW_ERROR not in str(exc):
                raise
            return self.reshape(*shape, **kwargs)

    torch.Tensor.view = view
    try:
        y = attn(x)
        y = y[0] if isinstance(y, (tuple, list)) and y else y
    except Exception:  # noqa: BLE001 - it raises another error then: no output to name a mistake by
        y = None
    finally:
        if own is None:
            del torch.Tensor.view
        else:
            torch.Tensor.view = own
    where = None if at is None else [at["cell"], at["line"], at["code"]]
    return ("raised", error, where, y if isinstance(y, torch.Tensor) else None)


def _device_of(t) -> str:
    return str(t.device) if isinstance(t, torch.Tensor) else type(t).__name__[:40]


def _run_twice(attn, x, x_new, cache, device):
    """attn on x without a cache, then on x_new with `cache`, with the inputs on `device`: the
    devices of y, k and v of each call (six strings)."""
    devices = []
    for args, kw in (
        ((x.to(device),), {}),
        ((x_new.to(device),), {"kv_cache": tuple(c.to(device) for c in cache)}),
    ):
        y, (k, v) = attn(*args, **kw)
        devices += [_device_of(y), _device_of(k), _device_of(v)]
    return devices


def on_other_device(attn, x, x_new, cache):
    """Where `attn`'s outputs are when its parameters and inputs are on OTHER_DEVICE, run where the
    student's code lives: the devices of y, k and v of a call on x without a cache, then of one on
    x_new with `cache` (six strings), or the error a call raised (text).

    First cheaply, on the CPU with OTHER_DEVICE as torch's default device: an answer that makes every
    tensor on x's device never touches OTHER_DEVICE there (the meta device's kernels import torch's
    compiler, seconds), so its outputs are where they would be on OTHER_DEVICE. Else, for real on
    OTHER_DEVICE, which treats a tensor made on the CPU as a GPU does (a CPU scalar mixes with it,
    x.to(device) moves it)."""
    try:
        with torch.device(OTHER_DEVICE):
            if _run_twice(attn, x, x_new, cache, x.device) == [_device_of(x)] * 6:
                return [str(OTHER_DEVICE)] * 6
    except Exception:  # noqa: BLE001 - a tensor made on the default device: judged for real below
        pass
    try:
        return _run_twice(attn.to(OTHER_DEVICE), x, x_new, cache, OTHER_DEVICE)
    except Exception as exc:  # noqa: BLE001 - a fact to judge
        return f"{type(exc).__name__}: {exc}"[:300]


def _attn_mistakes(s, x, h, cache=None):
    m = [
        (
            N_(
                "your attention ignores the causal mask: the query at position t may attend only to keys "
                "0..t (with a cache: 0..T_past + t)"
            ),
            lambda: ref_attention(s, x, h, cache, mask="none")[0],
        ),
        (
            N_(
                "the causal mask is inverted: each query attends to the future (keys t..T-1), not to the past "
                "(keys 0..t). True on and below the diagonal means 'may attend'"
            ),
            lambda: ref_attention(s, x, h, cache, mask="inverted")[0],
        ),
        (
            N_("the scores are not scaled: divide q @ k^T by sqrt(d_head)"),
            lambda: ref_attention(s, x, h, cache, scale="none")[0],
        ),
        (
            N_(
                "the scores are divided by sqrt(d_model): each head has d_head = d_model // n_heads features, "
                "divide by sqrt(d_head)"
            ),
            lambda: ref_attention(s, x, h, cache, scale="model")[0],
        ),
        (
            N_(
                "q, k and v are read from the wrong parts of qkv(x): it stacks q, k, v in that order "
                "(qkv(x).split(d_model, dim=-1))"
            ),
            lambda: ref_attention(s, x, h, cache, order="kqv")[0],
        ),
        (
            N_(
                "q, k and v are read from the wrong parts of qkv(x): it stacks q, k, v in that order "
                "(qkv(x).split(d_model, dim=-1))"
            ),
            lambda: ref_attention(s, x, h, cache, order="vkq")[0],
        ),
        (
            N_(
                "the heads are split by a view without the transpose: (B, T, d) -> (B, T, H, d_head) "
                "-> transpose(1, 2) -> (B, H, T, d_head)"
            ),
            lambda: ref_attention(s, x, h, cache, no_transpose=True)[0],
        ),
        (
            N_(
                "the heads are merged by a reshape without the transpose: (B, H, T, d_head).reshape(B, T, d) "
                "mixes positions and heads, so position t gets other positions' outputs. Transpose back "
                "first: y.transpose(1, 2).reshape(B, T, d_model)"
            ),
            lambda: ref_attention(s, x, h, cache, merge_no_transpose=True)[0],
        ),
        (
            N_(
                "the softmax runs over the queries (dim=-2): each key's column sums to 1, so an output "
                "depends on the later queries. Normalize each query's row over the keys: softmax(dim=-1)"
            ),
            lambda: ref_attention(s, x, h, cache, softmax_dim=-2)[0],
        ),
        (
            N_(
                "your mask also hides the diagonal (keys j < t): the query at t may attend to its own key, "
                "keys 0..t (mask[t, j] = j <= t; torch.tril keeps the diagonal)"
            ),
            lambda: ref_attention(s, x, h, cache, mask="strict")[0],
        ),
    ]
    if cache is not None:
        m = [
            (
                N_(
                    "with a cache, the positions of your causal mask restart at 0: the new query t is at "
                    "absolute position T_past + t and may attend to keys 0..T_past + t (mask[t, j] = "
                    "j <= T_past + t)"
                ),
                lambda: ref_attention(s, x, h, cache, offset=False)[0],
            ),
            (
                N_(
                    "the cache is concatenated in the wrong order: the cached (earlier) keys and values come "
                    "first, then the new ones: torch.cat([past_k, k], dim=2)"
                ),
                lambda: ref_attention(s, x, h, cache, new_first=True)[0],
            ),
        ] + m
    return m


def _attn_specs(hidden):
    # (B, T, d_model, n_heads, dtype, T_past of the cached run (0: no cache), T_new)
    if not hidden:
        return [
            (2, 5, 12, 3, torch.float32, 0, 0),
            (3, 4, 8, 2, torch.float64, 0, 0),
            (2, 7, 12, 3, torch.float32, 6, 1),
            (3, 9, 8, 2, torch.float64, 5, 4),
        ]
    return [
        (4, 10, 24, 4, torch.float64, 0, 0),
        (1, 6, 20, 5, torch.float32, 0, 0),
        (2, 11, 16, 4, torch.float32, 10, 1),
        (3, 12, 30, 6, torch.float64, 7, 5),
        (1, 8, 16, 1, torch.float32, 4, 4),
    ]


def _attn_cases(hidden):
    cases = []
    for i, (b, t, d, h, dt, t_past, t_new) in enumerate(_attn_specs(hidden)):
        g = gen(7100 + 31 * i + 7 * d + (900 if hidden else 0))
        s = attn_state(d, g, dt)
        x = rand(b, t, d, dtype=dt, mean=0.3, std=2.0, generator=g)
        module = f"CausalSelfAttention(d_model={d}, n_heads={h})"
        if t_past == 0:
            x_pert = x.clone()
            x_pert[:, -1] = rand(b, d, dtype=dt, mean=-1.0, std=3.0, generator=g)  # a different last token
            steps = [
                new("attn", "CausalSelfAttention", d, h, state=s, dtype=dt),
                let("x", x),
                let("x_pert", x_pert),
                call("full", helper("decoder.attend"), ref("attn"), ref("x")),
                call("pert", helper("decoder.attend"), ref("attn"), ref("x_pert")),
            ]
            cases.append(
                Case(
                    msg(
                        "{module} ({dtype}), x {shape}, no cache",
                        module=module,
                        dtype=dt,
                        shape=tuple(x.shape),
                    ),
                    steps,
                    ["full", "pert", "x"],
                    facts=dict(s=s, x=x, x_pert=x_pert, h=h, dt=dt),
                    size=b * t * d,
                )
            )
        else:
            _, (pk, pv) = ref_attention(s, x[:, :t_past], h)
            cache = (pk.to(dt), pv.to(dt))
            x_new = x[:, t_past : t_past + t_new]
            steps = [
                new("attn", "CausalSelfAttention", d, h, state=s, dtype=dt),
                let("x_new", x_new),
                let("cache", cache),
                call("inc", ref("attn"), ref("x_new"), kv_cache=ref("cache")),
            ]
            cases.append(
                Case(
                    msg(
                        "{module} ({dtype}), x {shape} (the next {n} positions) with kv_cache = (k, v) of the "
                        "first T_past={t_past}, each {cache_shape} = (B, n_heads, T_past, d_head): the time "
                        "axis is dim 2",
                        module=module,
                        dtype=dt,
                        shape=tuple(x_new.shape),
                        n=t_new,
                        t_past=t_past,
                        cache_shape=tuple(pk.shape),
                    ),
                    steps,
                    ["inc", "cache"],
                    facts=dict(s=s, x_new=x_new, cache=cache, h=h, dt=dt),
                    size=CACHED + b * t * d,
                )
            )
    cases.append(_device_case(hidden))
    return cases


def _device_case(hidden):
    """The module moved to OTHER_DEVICE, called there without and with a cache: its outputs must be
    there too (a mask made by torch.arange without device= stays on the CPU). Judged last."""
    b, t, d, h, dt, t_past = (
        (2, 6, 12, 3, torch.float32, 4) if not hidden else (3, 7, 16, 4, torch.float64, 5)
    )
    g = gen(7190 + (900 if hidden else 0))
    s = attn_state(d, g, dt)
    x = rand(b, t, d, dtype=dt, mean=0.3, std=2.0, generator=g)
    _, (pk, pv) = ref_attention(s, x[:, :t_past], h)
    cache = (pk.to(dt), pv.to(dt))
    module = f"CausalSelfAttention(d_model={d}, n_heads={h})"
    return Case(
        msg(
            "{module} ({dtype}) moved to {device}, called there on x {shape} without a cache, then on the "
            "next {n} positions with the cache of the first {t_past}",
            module=module,
            dtype=dt,
            device=f"torch.device({str(OTHER_DEVICE)!r})",
            shape=(b, t_past, d),
            n=t - t_past,
            t_past=t_past,
        ),
        [
            new("attn", "CausalSelfAttention", d, h, state=s, dtype=dt),
            let("x", x[:, :t_past]),
            let("x_new", x[:, t_past:]),
            let("cache", cache),
            call(
                "devices",
                helper("decoder.on_other_device"),
                ref("attn"),
                ref("x"),
                ref("x_new"),
                ref("cache"),
            ),
        ],
        ["devices"],
        facts=dict(device=True, d=d, h=h, dt=dt, x=x[:, :t_past]),
        size=2 * CACHED,
    )


DEVICE_HINT = N_(
    "a tensor your forward makes is on the CPU, not on x's device: the mask's positions made by "
    "torch.arange(T) without device= give this error. Make every new tensor on x's device, "
    "torch.arange(T, device=x.device)"
)


def _positions_on_the_cpu_error(f):
    """The error the reference raises on OTHER_DEVICE when its mask's positions are made on the CPU."""
    cls = type("PositionsOnTheCpu", (ReferenceCausalSelfAttention,), {"positions_on": "cpu"})
    attn = cls(f["d"], f["h"]).to(f["dt"]).to(OTHER_DEVICE)
    try:
        attn(f["x"].to(OTHER_DEVICE))
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


def _device_judge(f, got):
    want = str(OTHER_DEVICE)
    expected = f"y.device = k.device = v.device = {want!r}"
    if isinstance(got, str):
        if "device" not in got:  # an op without a kernel for the meta device: nothing to judge there
            return
        hint = DEVICE_HINT if got == _positions_on_the_cpu_error(f) else ""
        raise CheckFailure(
            msg("CausalSelfAttention raised an error with its input on {device}.", device=want)
            + got_expected(msg("{name} raised {error}", name="CausalSelfAttention", error=got), expected)
            + (hint_line(hint) if hint else "")
        )
    if isinstance(got, (list, tuple)) and list(got) == [want] * 6:
        return
    if isinstance(got, (list, tuple)) and len(got) == 6:
        call = list(got[:3]) if list(got[:3]) != [want] * 3 else list(got[3:])  # the call that is off
        shown = "y.device = {!r}, k.device = {!r}, v.device = {!r}".format(*call)
    else:
        shown = f"{got!r:.200}"
    raise CheckFailure(
        msg("CausalSelfAttention did not return its outputs on the device of its input.")
        + got_expected(shown, expected)
    )


SPLIT_VIEW_HINT = N_(
    "the heads are split by a view without the transpose: view(B, n_heads, T, d_head) of the "
    "(B, T, d_model) tensor raises here, and reshape(B, n_heads, T, d_head) would run but mix "
    "positions and heads. Split as view(B, T, n_heads, d_head), then transpose(1, 2)"
)


def _raised_view(got, f, dt):
    """The no-cache call raised torch's view error (`attend`): the message an answer that raises
    gets, with the mistake named when the same call with each failing view done by reshape gives
    that mistake's y (a view that merges the heads after the transpose gives the right y: then the
    error's own explanation, use reshape, is the advice)."""
    _, error, where, y = got
    line = ""
    if isinstance(where, (list, tuple)) and len(where) == 3:
        cell, number, code = where
        line = LINE + (
            msg("in your code: {cell}, line {line}: {code}", cell=cell, line=number, code=code)
            if code
            else msg("in your code: {cell}, line {line}", cell=cell, line=number)
        )
    split = ref_attention(f["s"], f["x"], f["h"], no_transpose=True)[0]
    named = (
        isinstance(y, torch.Tensor) and y.shape == split.shape and _judge.close(y.to(F64), split, *_tol(dt))
    )
    if named:
        raise AnswerError(
            msg("{name} raised {error}", name="CausalSelfAttention", error=error)
            + line
            + hint_line(SPLIT_VIEW_HINT)
        )
    raise AnswerError(
        msg("{name} raised an error: {meaning}", name="CausalSelfAttention", meaning=explain_error(error))
        + LINE
        + msg("the error: {error}", error=error)
        + line
    )


ATTN_GENERIC = N_(
    "compare step by step: q, k, v = qkv(x).split(d_model, -1), heads (B, n_heads, T, d_head), "
    "scores / sqrt(d_head), causal mask, softmax over the keys, merge the heads, proj"
)
ATTN_GENERIC_CACHE = N_(
    "compare step by step: q, k, v = qkv(x).split(d_model, -1), heads (B, n_heads, T, d_head), "
    "scores / sqrt(d_head), causal mask, softmax over the keys, merge the heads, proj; with a cache, "
    "concatenate the past k, v before the new ones along dim 2"
)


def _attn_judge(case, out):
    f = case.facts
    if f.get("device"):
        _device_judge(f, out["devices"])
        return
    s, h, dt = f["s"], f["h"], f["dt"]
    if "x" in f:
        x = f["x"]
        for name in ("full", "pert"):
            got = out[name]
            if isinstance(got, tuple) and len(got) == 4 and got[0] == "raised":
                _raised_view(got, f if name == "full" else {**f, "x": f["x_pert"]}, dt)
        y, cache = _pair(out["full"], "CausalSelfAttention(x)")
        y_pert, _ = _pair(out["pert"], "CausalSelfAttention(x)")
        exp, (ek, ev) = ref_attention(s, x, h)
        what = msg("{module} output {name}", module="CausalSelfAttention", name="y")
        expect_tensor(y, what, shape=exp.shape)
        expect_tensor(y_pert, what, shape=exp.shape)
        if not torch.isnan(y).any() and not _judge.close(y_pert[:, :-1], y[:, :-1], *_tol(dt)):
            raise CheckFailure(
                msg(
                    "changing only the last token changed your outputs at earlier positions: they look at "
                    "the future."
                )
                + hint_line(
                    diagnose(y.to(F64), _attn_mistakes(s, x, h))
                    or N_(
                        "an output at position t must depend on tokens 0..t only: check the causal mask "
                        "(keys 0..t), the softmax's dim (over the keys, dim=-1) and that the heads are split "
                        "and merged with transpose(1, 2)"
                    )
                )
            )
        _compare_y(y, exp, dt, what, _attn_mistakes(s, x, h), ATTN_GENERIC)
        _check_cache(cache, ek, ev, dt, N_("new_cache (no cache given)"))
        if not _judge.close(out["x"], x):
            raise CheckFailure(
                msg("{who} modified its input {name} in place", who="CausalSelfAttention", name="x")
            )
    else:
        x_new, past = f["x_new"], f["cache"]
        y, cache = _pair(out["inc"], "CausalSelfAttention(x, kv_cache)")
        exp, (ek, ev) = ref_attention(s, x_new, h, past)
        _compare_y(
            y,
            exp,
            dt,
            msg("{module} output {name} with a cache", module="CausalSelfAttention", name="y"),
            _attn_mistakes(s, x_new, h, past),
            ATTN_GENERIC_CACHE,
        )
        _check_cache(cache, ek, ev, dt, "new_cache")
        for name, given, sent in zip("kv", out["cache"], past):
            if not _judge.close(given, sent):
                raise CheckFailure(
                    msg(
                        "{who} modified the given cache's {name} in place",
                        who="CausalSelfAttention",
                        name=name,
                    )
                )
