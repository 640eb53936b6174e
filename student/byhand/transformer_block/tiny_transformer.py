"""Lesson 06_transformer_block, `TinyTransformer`: its cases, its reference and its judge."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .._core import Case, call, gen, got_expected, helper, hint_line, let, new, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._dropout import COPIES, OUTPUTS, copies_label, copies_steps, forked, judge_copies
from ._shared import (
    F64,
    _default_probe,
    _ignores_mask,
    _judge_default,
    _judge_eval,
    _pad,
    _pad_label,
    _sub,
    _with_probe,
    encoder_state,
    ref_pe,
    ref_stack,
    ref_torch_encoder,
)

# the earlier answers its check runs: the reference of each when the student's fails its own check
EARLIER = ("Encoder", "positional_encoding")

# ---------------------------------------------------------------------------------------------
# TinyTransformer (embedding + positional encoding + encoder + head)


def _model_cases(hidden):
    # (B, L, vocab, d_model, n_heads, d_ff, n_layers, max_len, norm_first, padded, dtype)
    specs = [
        (2, 6, 11, 12, 3, 20, 2, 9, True, True, torch.float32),
        (3, 5, 7, 8, 2, 16, 1, 5, False, False, torch.float32),
        # float64: the logits keep the model's dtype (an answer that casts to float32 fails here)
        (2, 4, 6, 8, 2, 12, 1, 6, True, False, torch.float64),
    ]
    if hidden:
        specs = [
            (4, 8, 13, 16, 4, 24, 2, 10, True, False, torch.float64),
            (2, 9, 10, 20, 5, 28, 3, 12, False, True, torch.float32),
        ]
    cases = []
    for i, (b, seq, v, d, h, d_ff, n, max_len, nf, padded, dt) in enumerate(specs):
        g = gen(6500 + 43 * i + 5 * d + (900 if hidden else 0))
        state = {"embed.weight": rand(v, d, generator=g, mean=0.1, std=1.0).to(dt)}
        state.update({"encoder." + k: t for k, t in encoder_state(n, d, d_ff, g, dt, nf).items()})
        state["head.weight"] = rand(v, d, generator=g, std=1.0 / math.sqrt(d)).to(dt)
        state["head.bias"] = rand(v, generator=g, mean=0.2, std=0.5).to(dt)
        tokens = torch.randint(0, v, (b, seq), generator=g)
        pad = _pad(b, seq, g) if padded else None
        steps = [
            new("model", "TinyTransformer", v, d, h, d_ff, n, max_len, norm_first=nf, state=state, dtype=dt),
            let("tokens", tokens),
            call("keys", helper("transformer_block.state_keys"), ref("model")),  # nothing but the given keys
        ]
        if pad is not None:
            steps += [
                let("pad", pad),
                call("y", ref("model"), ref("tokens"), ref("pad")),
                call("y_nopad", ref("model"), ref("tokens")),  # a probe: does the mask change anything?
            ]
        else:
            steps.append(call("y", ref("model"), ref("tokens")))
        probe = i == 0 and not hidden  # norm_first left out: the signature's default
        if probe:
            steps += _default_probe("TinyTransformer", (v, d, h, d_ff, n, max_len), tokens, 6550)
        label = _with_probe(
            msg(
                "{module} ({dtype}), tokens {shape}, {pad}",
                module=f"TinyTransformer(vocab_size={v}, d_model={d}, n_heads={h}, d_ff={d_ff}, n_layers={n}, "
                f"max_len={max_len}, norm_first={nf})",
                dtype=str(dt),
                shape=str(tuple(tokens.shape)),
                pad=_pad_label(pad),
            ),
            probe,
        )
        cases.append(
            Case(
                label,
                steps,
                ["y", "tokens", "keys"]
                + (["y_nopad"] if pad is not None else [])
                + (["y_default", "y_explicit"] if probe else []),
                facts=dict(state=state, h=h, n=n, max_len=max_len, tokens=tokens, pad=pad, nf=nf, dt=dt),
                size=b * seq * d * n,
            )
        )
    # dropout > 0 in eval mode
    b, seq, v, d, h, d_ff, n, max_len, nf, p = (
        (2, 5, 9, 12, 3, 20, 2, 8, True, 0.3) if not hidden else (3, 7, 11, 16, 4, 24, 2, 9, False, 0.6)
    )
    g = gen(6590 + (900 if hidden else 0))
    state = {"embed.weight": rand(v, d, generator=g, mean=0.1, std=1.0).to(F64)}
    state.update({"encoder." + k: t for k, t in encoder_state(n, d, d_ff, g, F64, nf).items()})
    state["head.weight"] = rand(v, d, generator=g, std=1.0 / math.sqrt(d)).to(F64)
    state["head.bias"] = rand(v, generator=g, mean=0.2, std=0.5).to(F64)
    tokens = torch.randint(0, v, (b, seq), generator=g)
    steps = [
        new(
            "model",
            "TinyTransformer",
            v,
            d,
            h,
            d_ff,
            n,
            max_len,
            dropout=p,
            norm_first=nf,
            state=state,
            dtype=F64,
        ),
        call("_mode", ref("model", "eval")),
        let("tokens", tokens),
        call("y", ref("model"), ref("tokens")),
        call("y_again", ref("model"), ref("tokens")),
    ]
    cases.append(
        Case(
            msg(
                "{module} ({dtype}) in eval mode (module.eval()), called twice on tokens {shape}, {pad}",
                module=f"TinyTransformer(vocab_size={v}, d_model={d}, n_heads={h}, d_ff={d_ff}, n_layers={n}, "
                f"max_len={max_len}, dropout={p}, norm_first={nf})",
                dtype="torch.float64",
                shape=str(tuple(tokens.shape)),
                pad=_pad_label(None),
            ),
            steps,
            ["y", "y_again", "tokens"],
            facts=dict(
                state=state, h=h, n=n, max_len=max_len, tokens=tokens, pad=None, nf=nf, dt=F64, eval=p
            ),
            size=10**6,
        )
    )
    # dropout > 0 in training mode: it reaches the encoder, and only the encoder
    seq, v, d, h, d_ff, n, max_len, nf, p = (
        (5, 9, 12, 3, 20, 2, 8, True, 0.3) if not hidden else (6, 11, 16, 4, 24, 2, 9, False, 0.4)
    )
    g = gen(6570 + (900 if hidden else 0))
    state = {"embed.weight": rand(v, d, generator=g, mean=0.1, std=1.0).to(F64)}
    state.update({"encoder." + k: t for k, t in encoder_state(n, d, d_ff, g, F64, nf).items()})
    state["head.weight"] = rand(v, d, generator=g, std=1.0 / math.sqrt(d)).to(F64)
    state["head.bias"] = rand(v, generator=g, mean=0.2, std=0.5).to(F64)
    tokens = torch.randint(0, v, (1, seq), generator=g)
    module = (
        f"TinyTransformer(vocab_size={v}, d_model={d}, n_heads={h}, d_ff={d_ff}, n_layers={n}, "
        f"max_len={max_len}, dropout={p}, norm_first={nf})"
    )
    steps = [
        new(
            "model",
            "TinyTransformer",
            v,
            d,
            h,
            d_ff,
            n,
            max_len,
            dropout=p,
            norm_first=nf,
            state=state,
            dtype=F64,
        ),
        *copies_steps("model", "tokens", tokens, 6580),
    ]
    cases.append(
        Case(
            copies_label(module, "tokens", tokens.shape, "torch.float64"),
            steps,
            OUTPUTS,
            facts=dict(state=state, h=h, n=n, max_len=max_len, tokens=tokens, nf=nf, train=p),
            size=10**6 + 1,
        )
    )
    return cases


def _dropout_judge(f, y):
    """The model with dropout f["train"] in training mode, on COPIES copies of f["tokens"]."""
    s, p = f["state"], f["train"]
    x, enc_state = ref_model(f)
    xs = x.expand(COPIES, *x.shape[1:])

    def head(t):
        return F.linear(t, s["head.weight"].to(F64), s["head.bias"].to(F64))

    def logits(t):
        return head(ref_torch_encoder(enc_state, f["h"], f["n"], t, None, f["nf"], dropout=p))

    judge_copies(
        "TinyTransformer",
        f"head(nn.TransformerEncoder(nn.TransformerEncoderLayer(..., dropout={p}), ...)(embed(tokens) + PE))",
        p,
        y,
        forked(6571, lambda: logits(xs)),
        N_(
            "dropout never reaches the encoder: every copy gave the same logits in training mode. Build it "
            "as Encoder(n_layers, d_model, n_heads, d_ff, dropout, norm_first=norm_first)"
        ),
        [
            (
                N_(
                    "dropout is applied to the embeddings too: in this lesson only the encoder's blocks use "
                    "dropout, logits = head(encoder(embed(tokens) + PE[:L], pad_mask))"
                ),
                lambda: forked(6572, lambda: logits(F.dropout(xs, p, training=True))),
            )
        ],
    )


def ref_model(f, pe=True, scale=1.0):
    s, tokens = f["state"], f["tokens"]
    d = s["embed.weight"].shape[1]
    x = s["embed.weight"].to(F64)[tokens] * scale  # (B, L) -> (B, L, d)
    if pe:
        x = x + ref_pe(f["max_len"], d)[: tokens.shape[1]]
    return x, _sub(s, "encoder.")


def _judge_keys(f, keys):
    """The model's state_dict holds the given keys and nothing else: the positional table is no part
    of it (the exercise: compute it in forward, or register_buffer(..., persistent=False))."""
    if not isinstance(keys, list):
        return
    given = f["state"]
    # the encoder's own keys are its question's (Encoder, EncoderBlock): a buffer there costs no point here
    extra = [
        k
        for k in keys
        if isinstance(k, list) and len(k) == 2 and k[0] not in given and not str(k[0]).startswith("encoder.")
    ]
    if not extra:
        return
    names = [str(k[0]) for k in extra]
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")  # as structure_messages.py cuts
    d = given["embed.weight"].shape[1]
    table = any(isinstance(k[1], list) and k[1][-2:] == [f["max_len"], d] for k in extra)
    raise CheckFailure(
        msg("TinyTransformer's state_dict has keys the exercise does not list: {keys}.", keys=shown)
        + got_expected(
            msg("the keys of embed, encoder and head, and {keys}", keys=shown),
            msg("the keys of embed, encoder and head only"),
        )
        + hint_line(
            N_(
                "the positional table is in the state dict: the exercise keeps it out; register it with "
                'self.register_buffer("pe", ..., persistent=False), or compute it in forward'
            )
            if table
            else N_(
                "keep only the listed submodules' parameters in the state dict: a buffer that is not a "
                "parameter goes in with persistent=False"
            )
        )
    )


def _model_judge(case, out):
    f = case.facts
    if f.get("train"):
        return _dropout_judge(f, out)
    s, pad, dt = f["state"], f["pad"], f["dt"]

    def head(y):
        return F.linear(y, s["head.weight"].to(F64), s["head.bias"].to(F64))

    x, enc_state = ref_model(f)
    exp = head(ref_torch_encoder(enc_state, f["h"], f["n"], x, pad, f["nf"]))
    if f.get("eval"):  # the positional table is float32 by contract: the tolerance of float32
        return _judge_eval("TinyTransformer", out, exp, torch.float32, logits=True)
    _judge_default("TinyTransformer", out)
    _judge_keys(f, out.get("keys"))
    sel = (lambda t: t[pad]) if pad is not None else (lambda t: t)
    d = s["embed.weight"].shape[1]

    def mistake(**kw):
        xm, _ = ref_model(f, **kw)
        return sel(head(ref_stack(enc_state, f["h"], f["n"], xm, pad, f["nf"])))

    mistakes = [
        (
            N_(
                "the positional encoding is missing: add positional_encoding(max_len, d_model)[:L] to the "
                "token embeddings"
            ),
            lambda: mistake(pe=False),
        ),
        (
            N_(
                "the embeddings are scaled by sqrt(d_model): in this lesson the input is embed(tokens) + PE, "
                "unscaled"
            ),
            lambda: mistake(scale=math.sqrt(d)),
        ),
    ]
    # PE is float32 by contract, so a float64 model carries float32 rounding of the table: 1e-4
    g = out["y"]
    expect_tensor(g, msg("{x} logits", x="TinyTransformer"), shape=exp.shape)
    if g.dtype != dt:
        if dt == F64 and g.dtype == torch.float32:  # what a cast to float32 gives, whatever else
            hint = hint_line(
                N_(
                    "your model casts to float32 (.float(), or dtype=torch.float32 somewhere): the logits keep "
                    "the model's dtype; cast the positional table to the embeddings' dtype instead"
                )
            )
        elif dt == torch.float32 and g.dtype == F64:  # a float64 table added to float32 embeddings
            hint = hint_line(N_("cast the positional table to the embeddings' dtype"))
        else:
            hint = ""
        raise CheckFailure(
            msg("TinyTransformer logits should have the model's dtype.") + got_expected(g.dtype, dt) + hint
        )
    gs = sel(g)
    hint = diagnose(gs, mistakes) or _ignores_mask(out, g, "TinyTransformer")
    assert_close(
        gs.to(F64),
        sel(exp),
        (
            msg("{x} logits at the real positions", x="TinyTransformer")
            if pad is not None
            else msg("{x} logits", x="TinyTransformer")
        ),
        hint
        or N_(
            "logits = head(encoder(embed(tokens) + PE[:L], pad_mask)), the pad_mask passed on as given "
            "(True at the real tokens)"
        ),
        rtol=1e-4,
        atol=1e-4,
    )
    if not torch.equal(out["tokens"], f["tokens"]):
        raise CheckFailure(msg("TinyTransformer modified its input tokens in place"))
