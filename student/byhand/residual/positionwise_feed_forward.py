"""Lesson 03_residual, `PositionwiseFeedForward`: its cases, its reference, its mistakes and its judge."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import _core, _judge
from .._core import Case, call, gen, got_expected, hint_line, let, new, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import _drawn, _lin, _linear_state, _mode_words, _same_input, _tol

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
