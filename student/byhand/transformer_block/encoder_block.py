"""Lesson 06_transformer_block, `EncoderBlock`: its cases, its reference, its mistakes and its judge."""

from __future__ import annotations

import torch
import torch.nn as nn

from .. import _judge
from .._core import Case, gen, let, new, rand
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._dropout import COPIES, OUTPUTS, copies_label, copies_steps, forked, judge_copies
from ._shared import (
    F64,
    ReferenceEncoderBlock,
    _called_on_x,
    _compare,
    _default_probe,
    _eval_label,
    _eval_twice,
    _ignores_mask,
    _judge_default,
    _judge_eval,
    _no_grad_f64,
    _on_x_label,
    _pad,
    _with_probe,
    layer_state,
    ref_block,
)

REFERENCE = ReferenceEncoderBlock  # what replaces an answer that fails (byhand._depends)


def ref_torch_layer(state, h, x, pad, norm_first, dropout=0.0):
    """nn.TransformerEncoderLayer with the same weights (float64), in training mode: with `dropout`
    > 0 it draws from the global RNG."""
    d, d_ff = x.shape[-1], state["linear1.weight"].shape[0]
    with torch.random.fork_rng(devices=[]):
        layer = nn.TransformerEncoderLayer(
            d, h, d_ff, dropout=dropout, batch_first=True, norm_first=norm_first, dtype=F64
        )
    layer.load_state_dict({k: v.to(F64) for k, v in state.items()})
    return _no_grad_f64(layer, x.to(F64), src_key_padding_mask=None if pad is None else ~pad)


def _block_mistakes(state, h, x, pad, nf, block=ref_block):
    """(hint, output) pairs of the block's classic mistakes, one at a time and two at once, for
    `diagnose`."""
    sel = (lambda t: t[pad]) if pad is not None else (lambda t: t)
    singles = [
        (
            N_(
                "Pre-LN and Post-LN are swapped: norm_first=True is x + sublayer(norm(x)) (Pre-LN), "
                "norm_first=False is norm(x + sublayer(x)) (Post-LN)"
            ),
            dict(norm_first=not nf),
        ),
        (
            N_(
                "the residual connection is missing around both sublayers: each sublayer's output is "
                "added to its input x"
            ),
            dict(res_attn=False, res_ff=False),
        ),
        (
            N_("the residual connection around the attention sublayer is missing: add its input x back"),
            dict(res_attn=False),
        ),
        (
            N_("the residual connection around the feed-forward sublayer is missing: add its input back"),
            dict(res_ff=False),
        ),
        (
            N_("the ReLU between linear1 and linear2 is missing: FFN(x) = linear2(relu(linear1(x)))"),
            dict(act="none"),
        ),
        (
            N_(
                "the FFN uses GELU: this block (like nn.TransformerEncoderLayer's default) uses ReLU, "
                "linear2(relu(linear1(x)))"
            ),
            dict(act="gelu"),
        ),
        (
            N_(
                "norm1 and norm2 are swapped: norm1 goes with the attention sublayer, norm2 with the feed-forward"
            ),
            dict(swap_norms=True),
        ),
    ]
    if pad is None:
        singles.append(
            (
                N_(
                    "self_attn mixes the batch, not the sequence: nn.MultiheadAttention expects (L, B, d) "
                    "unless it is built with batch_first=True"
                ),
                dict(seq_first=True),
            )
        )
    if not nf:
        singles.append(
            (
                N_(
                    "Post-LN normalizes the sum, norm(x + sublayer(x)); yours normalizes the sublayer's output "
                    "before adding the residual (x + norm(sublayer(x)))"
                ),
                dict(post_norm_sublayer=True),
            )
        )
    if pad is not None:
        singles += [
            (
                N_(
                    "the padding mask polarity is inverted: pad_mask is True for real tokens, while "
                    "nn.MultiheadAttention's key_padding_mask is True for the positions to ignore: pass ~pad_mask"
                ),
                dict(pad_mode="inverted"),
            ),
            (
                N_(
                    "your block ignores the padding mask: pass key_padding_mask=~pad_mask to self_attn, so no "
                    "token attends to padding"
                ),
                dict(pad_mode="ignored"),
            ),
        ]

    def model(norm_first=nf, **kw):
        return sel(block(state, h, x, pad, norm_first, **kw))

    return _judge.with_pairs(singles, model)


def _block_cases(hidden):
    # (B, L, d_model, n_heads, d_ff, norm_first, padded, dtype)
    specs = [
        (2, 5, 12, 3, 20, True, False, torch.float32),
        (3, 6, 8, 2, 14, False, False, torch.float64),
        (2, 7, 16, 4, 24, True, True, torch.float32),
        (3, 5, 12, 2, 18, False, True, torch.float64),
    ]
    if hidden:
        specs = [
            (4, 9, 24, 4, 40, True, True, torch.float64),
            (3, 11, 20, 5, 36, False, True, torch.float32),
            (5, 6, 30, 6, 50, True, False, torch.float32),
            (2, 10, 16, 8, 30, False, False, torch.float64),
        ]
    cases = []
    for i, (b, seq, d, h, d_ff, nf, padded, dt) in enumerate(specs):
        g = gen(6100 + 37 * i + 11 * d + (900 if hidden else 0))
        state = layer_state(d, d_ff, g, dt)
        x = rand(b, seq, d, dtype=dt, mean=0.5, std=2.0, generator=g)
        pad = _pad(b, seq, g) if padded else None
        steps = [new("blk", "EncoderBlock", d, h, d_ff, norm_first=nf, state=state, dtype=dt), let("x", x)]
        steps += _called_on_x("blk", pad)
        probe = i == 0 and not hidden  # norm_first left out: the signature's default
        if probe:
            steps += _default_probe("EncoderBlock", (d, h, d_ff), x.float(), 6150)
        label = _with_probe(
            _on_x_label(f"EncoderBlock(d_model={d}, n_heads={h}, d_ff={d_ff}, norm_first={nf})", x, pad),
            probe,
        )
        cases.append(
            Case(
                label,
                steps,
                ["y", "x"]
                + (["y_nopad"] if pad is not None else [])
                + (["y_default", "y_explicit"] if probe else []),
                facts=dict(state=state, h=h, x=x, pad=pad, nf=nf, dt=dt),
                size=b * seq * d,
            )
        )
    # dropout > 0 in eval mode: the block must be deterministic and equal to the one without dropout
    b, seq, d, h, d_ff, nf, p = (3, 6, 12, 3, 20, True, 0.4) if not hidden else (2, 8, 16, 4, 28, False, 0.25)
    g = gen(6190 + (900 if hidden else 0))
    state = layer_state(d, d_ff, g, torch.float64)
    x = rand(b, seq, d, dtype=torch.float64, mean=0.5, std=2.0, generator=g)
    steps = [
        new("blk", "EncoderBlock", d, h, d_ff, dropout=p, norm_first=nf, state=state, dtype=torch.float64),
        *_eval_twice("blk", x),
    ]
    cases.append(
        Case(
            _eval_label(
                f"EncoderBlock(d_model={d}, n_heads={h}, d_ff={d_ff}, dropout={p}, norm_first={nf})", x.shape
            ),
            steps,
            ["y", "y_again", "x"],
            facts=dict(state=state, h=h, x=x, pad=None, nf=nf, dt=torch.float64, eval=p),
            size=10**6,
        )
    )
    # dropout > 0 in training mode: its outputs over many copies of one x spread as torch's do
    trains = (
        [(5, 12, 3, 20, True, 0.3)] if not hidden else [(6, 16, 4, 28, False, 0.2), (4, 10, 2, 18, True, 0.5)]
    )
    for i, (seq, d, h, d_ff, nf, p) in enumerate(trains):
        g = gen(6170 + 3 * i + (900 if hidden else 0))
        state = layer_state(d, d_ff, g, torch.float64)
        x = rand(1, seq, d, dtype=torch.float64, mean=0.5, std=2.0, generator=g)
        module = f"EncoderBlock(d_model={d}, n_heads={h}, d_ff={d_ff}, dropout={p}, norm_first={nf})"
        steps = [
            new(
                "blk", "EncoderBlock", d, h, d_ff, dropout=p, norm_first=nf, state=state, dtype=torch.float64
            ),
            *copies_steps("blk", "x", x, 6180 + i),
        ]
        cases.append(
            Case(
                copies_label(module, "x", x.shape, "torch.float64"),
                steps,
                OUTPUTS,
                facts=dict(state=state, h=h, x=x, nf=nf, train=p, seed=6170 + 3 * i),
                size=10**6 + 1,
            )
        )
    return cases


def _dropout_judge(f, y):
    """The block with dropout f["train"] in training mode, on COPIES copies of f["x"]."""
    state, h, nf, p = f["state"], f["h"], f["nf"], f["train"]
    xs = f["x"].expand(COPIES, *f["x"].shape[1:])

    def placed(*drops):
        return lambda: forked(
            f["seed"] + 1, lambda: ref_block(state, h, xs, None, nf, dropout=p, drops=drops)
        )

    mistakes = [
        (
            N_("dropout is missing after the ReLU: FFN(t) = dropout(linear2(dropout(relu(linear1(t)))))"),
            placed("attn", "out"),
        ),
        (
            N_(
                "the attention weights are not dropped: build self_attn with dropout=dropout "
                "(nn.MultiheadAttention then drops its attention weights in training mode), or, by hand, "
                "apply dropout to the softmax's output"
            ),
            placed("out", "relu"),
        ),
        (
            N_(
                "only the attention weights are dropped: apply dropout to each sublayer's output too, "
                "before the residual sum, and after the ReLU"
            ),
            placed("attn"),
        ),
        (
            N_(
                "dropout is applied to each sublayer's input: apply it to the sublayer's output, before "
                "the residual sum"
            ),
            placed("attn", "in", "relu"),
        ),
        (
            N_(
                "dropout is applied to the block's output (the residual stream): apply it to each "
                "sublayer's output, before the residual sum"
            ),
            placed("attn", "relu", "stream"),
        ),
        (
            N_(
                "your dropout keeps the kept values as they are: nn.Dropout and F.dropout scale them by "
                "1/(1-p), so that the expected output stays the same"
            ),
            placed("attn", "out", "relu", "unscaled"),
        ),
    ]
    judge_copies(
        "EncoderBlock",
        f"nn.TransformerEncoderLayer(..., dropout={p}, batch_first=True, norm_first={nf})",
        p,
        y,
        forked(f["seed"], lambda: ref_torch_layer(state, h, xs, None, nf, dropout=p)),
        N_(
            "your block never applies dropout: every copy gave the same output in training mode. Build "
            "self_attn with dropout=dropout, and apply nn.Dropout(dropout) after the ReLU and to each "
            "sublayer's output"
        ),
        mistakes,
    )


def _block_judge(case, out):
    f = case.facts
    if f.get("train"):
        return _dropout_judge(f, out)
    state, h, x, pad, nf, dt = f["state"], f["h"], f["x"], f["pad"], f["nf"], f["dt"]
    if f.get("eval"):
        return _judge_eval("EncoderBlock", out, ref_torch_layer(state, h, x, pad, nf), dt)
    _judge_default("EncoderBlock", out)
    exp = ref_torch_layer(state, h, x, pad, nf)
    _compare(
        "EncoderBlock",
        out["y"],
        exp,
        pad,
        dt,
        _block_mistakes(state, h, x, pad, nf),
        msg(
            "compare with nn.TransformerEncoderLayer(norm_first={nf}) step by step: self_attn, then "
            "linear1 -> relu -> linear2, each inside its sublayer connection",
            nf=str(nf),
        ),
        mask_hint=_ignores_mask(out, out["y"], "EncoderBlock"),
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(
            msg(
                "EncoderBlock modified its input x in place: use out-of-place ops (x = x + ..., not x += ...)"
            )
        )
