"""Lesson 03_residual, `HybridSublayerConnection`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .._core import gen
from ..i18n import N_
from ._shared import _connection_case, _judge_connection, ref_sublayer_connection

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
