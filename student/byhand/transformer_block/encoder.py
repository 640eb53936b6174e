"""Lesson 06_transformer_block, `Encoder`: its cases and its judge."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import Case, gen, let, new, rand
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._dropout import COPIES, OUTPUTS, copies_label, copies_steps, forked, judge_copies
from ._shared import (
    ReferenceEncoder,
    _called_on_x,
    _compare,
    _default_probe,
    _eval_label,
    _eval_twice,
    _ignores_mask,
    _judge_default,
    _judge_eval,
    _on_x_label,
    _pad,
    _with_probe,
    encoder_state,
    ref_stack,
    ref_torch_encoder,
)

# the earlier answers its check runs: the reference of each when the student's fails its own check
EARLIER = ("EncoderBlock",)

REFERENCE = ReferenceEncoder  # what replaces an answer that fails (byhand._depends)


def _encoder_cases(hidden):
    # (B, L, d_model, n_heads, d_ff, n_layers, norm_first, padded, dtype)
    specs = [
        (2, 5, 12, 3, 20, 2, True, False, torch.float32),
        (3, 6, 8, 2, 14, 3, False, True, torch.float64),
        (2, 7, 16, 4, 24, 3, True, True, torch.float64),
    ]
    if hidden:
        specs = [
            (3, 8, 20, 4, 32, 4, True, True, torch.float32),
            (4, 6, 12, 3, 28, 2, False, False, torch.float32),
            (2, 9, 10, 5, 18, 2, True, False, torch.float64),
        ]
    cases = []
    for i, (b, seq, d, h, d_ff, n, nf, padded, dt) in enumerate(specs):
        g = gen(6300 + 41 * i + 7 * d + (900 if hidden else 0))
        state = encoder_state(n, d, d_ff, g, dt, nf)
        x = rand(b, seq, d, dtype=dt, mean=-0.5, std=3.0, generator=g)
        pad = _pad(b, seq, g) if padded else None
        steps = [new("enc", "Encoder", n, d, h, d_ff, norm_first=nf, state=state, dtype=dt), let("x", x)]
        steps += _called_on_x("enc", pad)
        probe = i == 0 and not hidden  # norm_first left out: the signature's default
        if probe:
            steps += _default_probe("Encoder", (n, d, h, d_ff), x.float(), 6350)
        label = _with_probe(
            _on_x_label(
                f"Encoder(n_layers={n}, d_model={d}, n_heads={h}, d_ff={d_ff}, norm_first={nf})", x, pad
            ),
            probe,
        )
        cases.append(
            Case(
                label,
                steps,
                ["y", "x"]
                + (["y_nopad"] if pad is not None else [])
                + (["y_default", "y_explicit"] if probe else []),
                facts=dict(state=state, h=h, n=n, x=x, pad=pad, nf=nf, dt=dt),
                size=b * seq * d * n,
            )
        )
    # dropout > 0 in eval mode
    b, seq, d, h, d_ff, n, nf, p = (
        (2, 5, 12, 3, 20, 2, True, 0.3) if not hidden else (3, 6, 10, 2, 18, 2, False, 0.5)
    )
    g = gen(6390 + (900 if hidden else 0))
    state = encoder_state(n, d, d_ff, g, torch.float64, nf)
    x = rand(b, seq, d, dtype=torch.float64, mean=-0.5, std=3.0, generator=g)
    steps = [
        new("enc", "Encoder", n, d, h, d_ff, dropout=p, norm_first=nf, state=state, dtype=torch.float64),
        *_eval_twice("enc", x),
    ]
    cases.append(
        Case(
            _eval_label(
                f"Encoder(n_layers={n}, d_model={d}, n_heads={h}, d_ff={d_ff}, dropout={p}, norm_first={nf})",
                x.shape,
            ),
            steps,
            ["y", "y_again", "x"],
            facts=dict(state=state, h=h, n=n, x=x, pad=None, nf=nf, dt=torch.float64, eval=p),
            size=10**6,
        )
    )
    # dropout > 0 in training mode: it reaches the blocks (their outputs spread as torch's do)
    seq, d, h, d_ff, n, nf, p = (5, 12, 3, 20, 2, True, 0.3) if not hidden else (6, 10, 2, 18, 2, False, 0.4)
    g = gen(6370 + (900 if hidden else 0))
    state = encoder_state(n, d, d_ff, g, torch.float64, nf)
    x = rand(1, seq, d, dtype=torch.float64, mean=-0.5, std=3.0, generator=g)
    module = f"Encoder(n_layers={n}, d_model={d}, n_heads={h}, d_ff={d_ff}, dropout={p}, norm_first={nf})"
    steps = [
        new("enc", "Encoder", n, d, h, d_ff, dropout=p, norm_first=nf, state=state, dtype=torch.float64),
        *copies_steps("enc", "x", x, 6380),
    ]
    cases.append(
        Case(
            copies_label(module, "x", x.shape, "torch.float64"),
            steps,
            OUTPUTS,
            facts=dict(state=state, h=h, n=n, x=x, nf=nf, train=p),
            size=10**6 + 1,
        )
    )
    return cases


def _encoder_judge(case, out):
    f = case.facts
    if f.get("train"):
        xs, p = f["x"].expand(COPIES, *f["x"].shape[1:]), f["train"]
        return judge_copies(
            "Encoder",
            f"nn.TransformerEncoder(nn.TransformerEncoderLayer(..., dropout={p}), ...)",
            p,
            out,
            forked(6371, lambda: ref_torch_encoder(f["state"], f["h"], f["n"], xs, None, f["nf"], dropout=p)),
            N_(
                "dropout never reaches the blocks: every copy gave the same output in training mode. Build "
                "each block as EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=norm_first)"
            ),
            [],
        )
    state, h, n, x, pad, nf, dt = f["state"], f["h"], f["n"], f["x"], f["pad"], f["nf"], f["dt"]
    if f.get("eval"):
        return _judge_eval("Encoder", out, ref_torch_encoder(state, h, n, x, pad, nf), dt)
    _judge_default("Encoder", out)
    exp = ref_torch_encoder(state, h, n, x, pad, nf)
    sel = (lambda t: t[pad]) if pad is not None else (lambda t: t)
    mistakes = []
    if nf:
        mistakes += [
            (
                N_(
                    "the final LayerNorm is missing: a Pre-LN stack never normalizes its residual stream, "
                    "so Encoder must end with self.norm(x) after the last block"
                ),
                lambda: sel(ref_stack(state, h, n, x, pad, nf, final_norm=False)),
            ),
            (
                N_(
                    "self.norm is applied after every block: apply the final LayerNorm once, after the last one"
                ),
                lambda: sel(ref_stack(state, h, n, x, pad, nf, norm_every_block=True)),
            ),
        ]
    else:
        mistakes.append(
            (
                N_("the blocks are Pre-LN although norm_first=False: pass norm_first to every EncoderBlock"),
                lambda: sel(ref_stack(state, h, n, x, pad, nf, blocks_nf=True)),
            )
        )
    if pad is not None:
        mistakes.append(
            (
                N_("the padding mask does not reach the blocks: call every block with pad_mask"),
                lambda: sel(ref_stack(state, h, n, x, pad, nf, pass_pad=False)),
            )
        )
    _compare(
        "Encoder",
        out["y"],
        exp,
        pad,
        dt,
        mistakes,
        N_(
            "run the blocks in order (layers[0] first), each with pad_mask, and finish with self.norm when "
            "norm_first"
        ),
        mask_hint=_ignores_mask(out, out["y"], "Encoder"),
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(msg("Encoder modified its input x in place"))
