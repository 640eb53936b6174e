"""Lesson 03_residual, `SublayerConnection`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .._core import gen
from ..i18n import N_, msg
from ._shared import _connection_case, _judge_connection, ref_sublayer_connection

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
