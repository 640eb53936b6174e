"""Checks for lesson 03_residual: the position-wise feed-forward network and the sublayer connection.

Each graded name has cases (small first; hidden ones add seeds, dtypes and shapes) and a judge that
compares with a float64 reference built from torch's own ops on the same weights (`F.linear`,
`F.relu`, `F.layer_norm`) and, on a mismatch, recognises the classic mistakes of docs/mistakes.md
by recomputing them. The modules are built in the student's kernel with weights the judge chose
(`new(..., state=...)`); the sublayer handed to `SublayerConnection` is a torch module built the same
way. "Zero the sublayer" (zero weight and bias) separates the placements: Pre-LN is then the
identity and Post-LN is LN(x). Dropout is checked without relying on random numbers: in eval mode
it must do nothing, in training mode with p=1 it must drop everything it wraps.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import _core, _judge
from ._core import Case, Question, call, gen, got_expected, hint_line, let, new, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "03_residual"


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


# ---------------------------------------------------------------------------------------------
# PositionwiseFeedForward


def ref_ffn(state, x, act="relu_mid", drop_all=False, drop_after=False):
    """w2(relu(w1(x))) in float64; `act` switches on a mistake; drop_all: dropout(p=1) between the layers;
    drop_after: dropout(p=1) after w2 (a mistake)."""
    h = _lin(x, state, "w1.")
    if act in ("relu_mid", "relu_both"):
        h = F.relu(h)
    elif act == "gelu":
        h = F.gelu(h)
    elif act == "sigmoid":
        h = torch.sigmoid(h)
    elif act == "tanh":
        h = torch.tanh(h)
    if drop_all:
        h = torch.zeros_like(h)
    y = _lin(h, state, "w2.")
    if act in ("relu_after", "relu_both"):
        y = F.relu(y)
    return torch.zeros_like(y) if drop_after else y


# (input shape, d_ff, dropout, mode, dtype); mode: "fresh" = structure only, "default" = no dropout
# argument, "eval" = module.eval(), "train" = training mode
_FFN_VISIBLE = [
    ((2, 3, 6), 10, None, "fresh", torch.float32),
    ((2, 5, 6), 14, None, "default", torch.float32),
    ((7, 8), 20, 0.0, "train", torch.float64),
    ((2, 2, 3, 5), 11, 0.0, "train", torch.float32),
    ((7,), 13, 0.0, "train", torch.float64),  # one token, no leading dims
    ((3, 4, 5), 12, 0.5, "eval", torch.float32),
    ((2, 3, 6), 9, 1.0, "train", torch.float64),
]
_FFN_HIDDEN = [
    ((2, 3, 4, 10), 24, 0.0, "train", torch.float32),
    ((6, 9), 18, 0.0, "train", torch.float64),
    ((10,), 16, 0.0, "train", torch.float32),
    ((5, 7, 12), 40, 0.3, "eval", torch.float64),
    ((4, 6, 8), 16, 1.0, "train", torch.float32),
    ((9, 16), 64, None, "default", torch.float64),
]


def _mode_words(mode: str):
    """A case label's words for the mode the module is called in."""
    return N_("eval mode") if mode == "eval" else N_("training mode")


def _drawn(mean, std):
    """A case label's words for how x was drawn: (mean 0.5, std 2)."""
    return msg("(mean {mean}, std {std})", mean=str(mean), std=str(std))


def _ffn_cases(hidden):
    specs = _FFN_HIDDEN if hidden else _FFN_VISIBLE
    cases = []
    for i, (shape, d_ff, p, mode, dt) in enumerate(specs):
        g = gen(5000 + 37 * i + (300 if hidden else 0))
        d = shape[-1]
        x = rand(*shape, dtype=dt, mean=0.5, std=2.0, generator=g)
        kw = {} if p is None else {"dropout": p}
        args = f"{d}, {d_ff}" + ("" if p is None else f", dropout={p}")
        if mode == "fresh":
            steps = [new("ffn", "PositionwiseFeedForward", d, d_ff, **kw)]
            outputs = [f"ffn.{n}" for n in ("w1.weight", "w1.bias", "w2.weight", "w2.bias")]
            cases.append(
                Case(
                    msg("{module}: its layers", module=f"PositionwiseFeedForward({args})"),
                    steps,
                    outputs,
                    facts=dict(mode=mode, d=d, d_ff=d_ff),
                    size=0,
                )
            )
            continue
        state = {
            **{f"w1.{k}": v for k, v in _linear_state(d, d_ff, dt, g).items()},
            **{f"w2.{k}": v for k, v in _linear_state(d_ff, d, dt, g).items()},
        }
        steps = [new("ffn", "PositionwiseFeedForward", d, d_ff, state=state, dtype=dt, **kw), let("x", x)]
        if mode == "eval":
            steps.append(call("_mode", ref("ffn", "eval")))
        steps.append(call("y", ref("ffn"), ref("x")))
        # a second call on the same input: dropout that is on where it should be off changes it
        steps.append(call("y_again", ref("ffn"), ref("x")))
        label = msg(
            "{module} with random weights, {mode}, x {shape} {dtype} {stats}",
            module=f"PositionwiseFeedForward({args})",
            mode=_mode_words(mode),
            shape=str(tuple(shape)),
            dtype=str(dt),
            stats=_drawn(0.5, 2),
        )
        cases.append(
            Case(
                label,
                steps,
                ["y", "x", "y_again"],
                facts=dict(mode=mode, p=p, state=state, x=x, raised_hint=_judge.leading_dims_hint(shape)),
                size=x.numel() * d_ff,
            )
        )
    return cases


_FFN_HINTS = [
    ("relu_after", N_("the ReLU is applied after w2: it goes between the layers, w2(relu(w1(x)))")),
    ("relu_both", N_("there is a ReLU after w2 too: the output of w2 is not activated, w2(relu(w1(x)))")),
    (
        None,
        N_(
            "the ReLU is missing: without it the two linear layers collapse into one linear map; "
            "use w2(relu(w1(x)))"
        ),
    ),
    ("gelu", N_("that is GELU; the Transformer's FFN uses ReLU: torch.relu (or x.clamp(min=0))")),
    ("sigmoid", N_("that is a sigmoid; the Transformer's FFN uses ReLU: torch.relu (or x.clamp(min=0))")),
    ("tanh", N_("that is tanh; the Transformer's FFN uses ReLU: torch.relu (or x.clamp(min=0))")),
]


FFN_OUTPUT = msg("{name} output", name="PositionwiseFeedForward")


def _ffn_judge(case, out):
    f = case.facts
    if f["mode"] == "fresh":
        d, d_ff = f["d"], f["d_ff"]
        for name, shape in (
            ("w1.weight", (d_ff, d)),
            ("w1.bias", (d_ff,)),
            ("w2.weight", (d, d_ff)),
            ("w2.bias", (d,)),
        ):
            got = out[f"ffn.{name}"]
            if isinstance(got, _core.Unsupported) and "missing attribute" in got.type_name:
                layer = name.split(".")[0]
                attr = f"self.{layer}"
                raise CheckFailure(
                    msg("PositionwiseFeedForward.{name} is missing.", name=name)
                    + got_expected(
                        msg("there is no {attr}", attr=attr),
                        msg("{attr} = nn.Linear(...), an attribute of the module", attr=attr),
                    )
                    + hint_line(
                        msg(
                            "there is no {attr}: the exercise names the layers self.w1 and self.w2 (layers kept "
                            "in a Python list are neither named nor registered)",
                            attr=attr,
                        )
                    )
                )
            if not isinstance(got, torch.Tensor) or tuple(got.shape) != shape:
                what = got if not isinstance(got, torch.Tensor) else tuple(got.shape)
                raise CheckFailure(
                    msg("PositionwiseFeedForward.{name} is wrong.", name=name)
                    + got_expected(str(what), msg("a tensor of shape {shape}", shape=str(shape)))
                    + hint_line(N_("w1 = nn.Linear(d_model, d_ff) and w2 = nn.Linear(d_ff, d_model)"))
                )
        return
    state, x, p, mode = f["state"], f["x"], f["p"], f["mode"]
    drop_all = mode == "train" and p == 1.0
    exp = ref_ffn(state, x, drop_all=drop_all)
    y = expect_tensor(out["y"], FFN_OUTPUT, shape=exp.shape)
    _judge.expect_dtype(y, x.dtype, FFN_OUTPUT)
    rtol, atol = _tol(x.dtype)
    if _judge.close(y, exp.to(y.dtype), rtol, atol):
        _same_input(out, f, "PositionwiseFeedForward")
        return
    singles = [(h, dict(act=a)) for a, h in _FFN_HINTS]
    if drop_all:
        singles += [
            (
                N_(
                    "with dropout=1.0 in training mode every hidden unit is dropped, so the output should be "
                    "w2.bias alone; yours did not drop anything: apply self.dropout (an nn.Dropout(dropout)) "
                    "to relu(w1(x))"
                ),
                dict(drop_all=False),
            ),
            (
                N_(
                    "with dropout=1.0 in training mode the output should be w2.bias alone; yours is 0: the "
                    "dropout goes between the layers, w2(dropout(relu(w1(x)))), not after w2"
                ),
                dict(drop_all=False, drop_after=True),
            ),
        ]

    def model(**kw):
        return ref_ffn(state, x, **{"drop_all": drop_all, **kw})

    hint = diagnose(y, _judge.with_pairs(singles, model))
    again = out.get("y_again")
    # dropout is to blame only when it is on: two calls on one input then give two outputs
    random = (
        isinstance(again, torch.Tensor) and again.shape == y.shape and not _judge.close(again, y, rtol, atol)
    )
    if not hint and mode == "eval" and random:
        hint = N_(
            "in eval mode dropout must do nothing: use nn.Dropout (it follows module.eval()), or "
            "F.dropout(h, p, training=self.training)"
        )
    if not hint and mode == "default" and random:
        hint = N_("with no dropout argument, dropout should default to 0.0 (no dropout)")
    expected = N_("expected w2(dropout(relu(w1(x)))) with the module's own w1 and w2")
    assert_close(y, exp.to(y.dtype), FFN_OUTPUT, hint or expected, rtol, atol)


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


# (input shape, pre_norm (None = default), dropout (None = default), mode, sublayer kind, dtype), in the
# order they are judged: explicit placements first (so a swap is not mistaken for a wrong default),
# then the zero sublayer, the defaults and dropout.
# mode: "train" (a fresh module), "eval" (module.eval()); sublayer: "linear", "zero", "linear_tanh"
_SUB_VISIBLE = [
    ((4, 3, 6), True, 0.0, "train", "linear", torch.float32),
    ((3, 4, 8), False, 0.0, "train", "linear", torch.float64),
    ((3, 5, 7), True, 0.0, "train", "linear_tanh", torch.float64),
    ((6, 10), False, 0.0, "train", "linear_tanh", torch.float32),
    ((2, 2, 3, 6), True, 0.0, "train", "linear", torch.float64),
    ((2, 3, 7), True, 0.0, "train", "zero", torch.float32),
    ((3, 2, 7), False, 0.0, "train", "zero", torch.float64),
    ((2, 5, 6), None, None, "train", "linear", torch.float32),
    ((2, 3, 2, 5), None, None, "train", "zero", torch.float64),
    ((4, 3, 6), True, 0.5, "eval", "linear", torch.float32),
    ((2, 4, 5), False, 1.0, "train", "linear", torch.float64),
    ((3, 5, 6), True, 1.0, "train", "linear", torch.float32),
]
_SUB_HIDDEN = [
    ((4, 6, 10), True, 0.0, "train", "linear_tanh", torch.float64),
    ((5, 12), False, 0.0, "train", "linear_tanh", torch.float32),
    ((2, 3, 4, 9), None, None, "train", "zero", torch.float64),
    ((3, 7, 12), False, 0.3, "eval", "linear", torch.float32),
    ((6, 5, 11), True, 1.0, "train", "linear_tanh", torch.float64),
]


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


def _sub_cases(hidden):
    specs = _SUB_HIDDEN if hidden else _SUB_VISIBLE
    cases = []
    for i, (shape, pre_norm, p, mode, kind, dt) in enumerate(specs):
        g = gen(6000 + 43 * i + (300 if hidden else 0))
        kw = {}
        if p is not None:
            kw["dropout"] = p
        if pre_norm is not None:
            kw["pre_norm"] = pre_norm
        facts = dict(pre_norm=True if pre_norm is None else pre_norm, default_pre_norm=pre_norm is None)
        cases.append(
            _connection_case(
                "SublayerConnection", shape, kind, mode, dt, g, i + (100 if hidden else 0), facts, **kw
            )
        )
    return cases


def _sub_judge(case, out):
    f = case.facts
    x, norm_state, spec, pre_norm = f["x"], f["norm_state"], f["spec"], f["pre_norm"]
    drop_all = f["mode"] == "train" and f["p"] == 1.0
    exp = ref_sublayer_connection(x, norm_state, spec, pre_norm, drop_all=drop_all)

    def model(placement, drop=drop_all):
        return ref_sublayer_connection(x, norm_state, spec, pre_norm, placement, drop)

    expected = (
        N_("expected x + dropout(sublayer(norm(x))) with self.norm = nn.LayerNorm(d_model)")
        if pre_norm
        else N_("expected norm(x + dropout(sublayer(x))) with self.norm = nn.LayerNorm(d_model)")
    )
    _judge_connection(out, f, exp, "SublayerConnection", lambda: _sub_mistakes(f, model), expected)


def _sub_mistakes(f, model) -> list:
    """(hint, output) of SublayerConnection's classic mistakes, the likeliest for this case first."""
    pre_norm, drop_all = f["pre_norm"], f["mode"] == "train" and f["p"] == 1.0
    this, other = ("Pre-LN", "Post-LN") if pre_norm else ("Post-LN", "Pre-LN")
    zero = f["kind"] == "zero"
    mistakes = [
        (
            msg(
                "Pre-LN and Post-LN are swapped: pre_norm={pre_norm} asks for {this}, yours computed {other} "
                "(with a zero sublayer, Pre-LN must return x unchanged and Post-LN must return LN(x))",
                pre_norm=str(pre_norm),
                this=this,
                other=other,
            )
            if zero
            else msg(
                "Pre-LN and Post-LN are swapped: pre_norm={pre_norm} asks for {this}, yours computed {other}",
                pre_norm=str(pre_norm),
                this=this,
                other=other,
            ),
            lambda: model("post" if pre_norm else "pre"),
        ),
        (
            N_(
                "the residual path is missing: add the block's input x back (with a zero sublayer, a Pre-LN "
                "block must return x itself)"
            )
            if zero and pre_norm
            else N_("the residual path is missing: add the block's input x back"),
            lambda: model("pre_no_residual" if pre_norm else "post_no_residual"),
        ),
        (
            N_(
                "the residual adds the normalised x: normalise a copy for the sublayer, and add the raw x, "
                "x + dropout(sublayer(norm(x)))"
            ),
            lambda: model("normed_residual"),
        ),
        (
            N_(
                "that is the hybrid placement x + dropout(norm(sublayer(x))); "
                "Pre-LN normalises the sublayer's input: x + dropout(sublayer(norm(x)))"
            )
            if pre_norm
            else N_(
                "that is the hybrid placement x + dropout(norm(sublayer(x))); "
                "Post-LN normalises the sum: norm(x + dropout(sublayer(x)))"
            ),
            lambda: model("hybrid"),
        ),
    ]
    if f["default_pre_norm"]:
        mistakes.insert(
            0,
            (
                N_(
                    "pre_norm should default to True (Pre-LN): __init__(self, d_model, dropout=0.0, "
                    "pre_norm=True)"
                ),
                lambda: model("post"),
            ),
        )
    if drop_all:  # checked first: with p=1 "no residual" and "dropout on everything" both give 0
        mistakes[:0] = [
            (
                msg(
                    "with dropout=1.0 in training mode the sublayer's output is entirely dropped, so the block "
                    "should return {result}; yours dropped nothing: apply self.dropout (an nn.Dropout(dropout)) "
                    "to the sublayer's output",
                    result="x" if pre_norm else "LN(x)",
                ),
                lambda: model(None, drop=False),
            ),
            (
                N_(
                    "with dropout=1.0 in training mode only the sublayer's output is dropped; yours dropped "
                    "everything: the dropout wraps sublayer(...) only, before the residual is added"
                ),
                lambda: model("drop_everything"),
            ),
        ]
    return mistakes


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


# ---------------------------------------------------------------------------------------------
# HybridSublayerConnection: x + dropout(norm(sublayer(x)))

# (input shape, dropout (None = default), mode, sublayer kind, dtype)
_HYB_VISIBLE = [
    ((4, 3, 6), 0.0, "train", "linear", torch.float32),
    ((5, 9), 0.0, "train", "linear_tanh", torch.float64),
    ((2, 2, 3, 7), 0.0, "train", "linear_tanh", torch.float32),
    ((3, 4, 8), None, "train", "zero", torch.float64),
    ((2, 5, 7), 0.5, "eval", "linear", torch.float32),
    ((3, 2, 6), 1.0, "train", "linear", torch.float64),
]
_HYB_HIDDEN = [
    ((5, 6, 10), 0.0, "train", "linear_tanh", torch.float64),
    ((4, 11), 0.0, "train", "linear", torch.float32),
    ((2, 3, 4, 9), None, "train", "zero", torch.float32),
    ((4, 12), 0.3, "eval", "linear_tanh", torch.float32),
    ((3, 5, 11), 1.0, "train", "linear", torch.float32),
]


def _hyb_cases(hidden):
    specs = _HYB_HIDDEN if hidden else _HYB_VISIBLE
    cases = []
    for i, (shape, p, mode, kind, dt) in enumerate(specs):
        g = gen(6800 + 47 * i + (300 if hidden else 0))
        kw = {} if p is None else {"dropout": p}
        size = i + (100 if hidden else 0)
        cases.append(_connection_case("HybridSublayerConnection", shape, kind, mode, dt, g, size, {}, **kw))
    return cases


def _hyb_judge(case, out):
    f = case.facts
    x, norm_state, spec = f["x"], f["norm_state"], f["spec"]
    drop_all = f["mode"] == "train" and f["p"] == 1.0

    def model(placement, drop=drop_all):
        return ref_sublayer_connection(x, norm_state, spec, True, placement, drop)

    exp = model("hybrid")
    expected = N_("expected x + dropout(norm(sublayer(x))) with self.norm = nn.LayerNorm(d_model)")
    _judge_connection(
        out, f, exp, "HybridSublayerConnection", lambda: _hyb_mistakes(exp, drop_all, model), expected
    )


def _hyb_mistakes(exp, drop_all, model) -> list:
    """(hint, output) of HybridSublayerConnection's classic mistakes, the likeliest for this case first."""
    mistakes = [
        (
            N_(
                "that is Pre-LN, x + dropout(sublayer(norm(x))): the hybrid normalizes the sublayer's output, "
                "x + dropout(norm(sublayer(x)))"
            ),
            lambda: model("pre"),
        ),
        (
            N_(
                "that is Post-LN, norm(x + dropout(sublayer(x))): the hybrid adds the raw x after normalizing "
                "the sublayer's output, x + dropout(norm(sublayer(x)))"
            ),
            lambda: model("post"),
        ),
        (
            N_("the residual path is missing: add the block's input x back, x + dropout(norm(sublayer(x)))"),
            lambda: model("hybrid_no_residual"),
        ),
    ]
    if drop_all:
        mistakes[:0] = [
            (
                N_(
                    "with dropout=1.0 in training mode the normalized sublayer output is entirely dropped, so "
                    "the block should return x; yours dropped nothing: apply self.dropout after self.norm"
                ),
                lambda: model("hybrid", drop=False),
            ),
            (
                N_(
                    "the dropout is applied before the norm, x + norm(dropout(sublayer(x))): with dropout=1.0 "
                    "that gives x + norm.bias, not x. Dropout comes last, x + dropout(norm(sublayer(x)))"
                ),
                lambda: model("hybrid_drop_inside"),
            ),
            (
                N_(
                    "with dropout=1.0 in training mode only the update is dropped; yours dropped everything: "
                    "the dropout wraps norm(sublayer(x)) only, before x is added"
                ),
                lambda: torch.zeros_like(exp),
            ),
        ]
    return mistakes


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("PositionwiseFeedForward", _ffn_cases, _ffn_judge),
    Question("SublayerConnection", _sub_cases, _sub_judge),
    Question("HybridSublayerConnection", _hyb_cases, _hyb_judge),
)

check = _core.lesson_check(QUESTIONS, "SublayerConnection")
