"""Checks for lesson 06_transformer_block: positional encoding, the encoder block, the stack, the model.

The references are torch's own modules in float64, built in the judge's process with the weights
the case sent to the student's module: `nn.TransformerEncoderLayer` / `nn.TransformerEncoder`
(batch_first, dropout 0, norm_first both ways). The classic mistakes are recomputed by a small
functional model of the block (`ref_block`) with one thing changed, so a hint can say which one.
The graded names and their behaviour are documented in docs/api/06_transformer_block.md.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _core, _judge, i18n
from ._core import Case, Question, call, gen, got_expected, hint_line, let, new, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "06_transformer_block"
F64 = torch.float64

# ---------------------------------------------------------------------------------------------
# positional_encoding


def ref_pe(max_len, d_model, base=10000.0, swap=False, pair_index=True, concat=False, multiply=False):
    """The sinusoidal table of Vaswani et al. in float64 (and, with a flag, a classic mistake):
    PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d))."""
    pos = torch.arange(max_len, dtype=F64)[:, None]  # (L, 1)
    if pair_index:
        expo = torch.arange(0, d_model, 2, dtype=F64) / d_model  # 2i/d, one per pair
    else:
        expo = torch.arange(d_model // 2, dtype=F64) / d_model  # i/d: the "2" forgotten
    freq = base**expo if multiply else base**-expo  # (d/2,)
    ang = pos * freq  # (L, d/2)
    first, second = (torch.cos(ang), torch.sin(ang)) if swap else (torch.sin(ang), torch.cos(ang))
    if concat:
        return torch.cat([first, second], dim=-1)  # [sin..., cos...]
    return torch.stack([first, second], dim=-1).reshape(max_len, d_model)  # interleaved


def _pe_cases(hidden):
    specs = [(7, 4), (11, 6), (50, 16)] if not hidden else [(33, 10), (128, 64), (9, 126), (200, 48)]
    return [
        Case(
            msg("max_len={max_len}, d_model={d_model}", max_len=str(n), d_model=str(d)),
            [call("pe", "positional_encoding", n, d)],
            ["pe"],
            facts=dict(n=n, d=d),
            size=n * d,
        )
        for n, d in specs
    ]


def _pe_judge(case, out):
    n, d = case.facts["n"], case.facts["d"]
    exp = ref_pe(n, d)
    pe = expect_tensor(out["pe"], f"positional_encoding({n}, {d})", shape=exp.shape)
    if pe.dtype != torch.float32:
        raise CheckFailure(
            msg("positional_encoding should return torch's default dtype.")
            + got_expected(pe.dtype, "torch.float32")
            + hint_line(N_("build the table in float32, or compute in float64 and finish with .float()"))
        )
    hint = diagnose(
        pe,
        [
            (
                N_(
                    "sin and cos are swapped: even features 2i hold sin(p * w_i), odd features 2i+1 hold cos(p * w_i)"
                ),
                lambda: ref_pe(n, d, swap=True),
            ),
            (
                N_("the frequency base is 1000: it is 10000, w_i = 1 / 10000^(2i/d_model)"),
                lambda: ref_pe(n, d, base=1000.0),
            ),
            (
                N_(
                    "the frequency base is wrong: yours is w_i = 1 / 10000^(i/d_model) with i the pair index; the "
                    "exponent is 2i/d_model (2i is the even feature's index: torch.arange(0, d_model, 2))"
                ),
                lambda: ref_pe(n, d, pair_index=False),
            ),
            (
                N_(
                    "the frequency base is applied the wrong way round: w_i = 1 / 10000^(2i/d_model), so divide the "
                    "position by 10000^(2i/d_model)"
                ),
                lambda: ref_pe(n, d, multiply=True),
            ),
            (
                N_(
                    "your table has all the sines first, then all the cosines: interleave them, sin in the even "
                    "features 0::2 and cos in the odd features 1::2"
                ),
                lambda: ref_pe(n, d, concat=True),
            ),
        ],
    )
    assert_close(
        pe,
        exp.float(),
        f"positional_encoding({n}, {d})",
        hint or N_("check the formula: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)"),
        rtol=1e-4,
        atol=1e-4,
    )  # float32 sin of arguments up to ~200: ~1e-5 rounding


# ---------------------------------------------------------------------------------------------
# The block: random weights with the state-dict names of nn.TransformerEncoderLayer


def layer_state(d, d_ff, g, dtype, prefix=""):
    """Random weights for one block, every parameter non-trivial (LayerNorm affine included)."""
    s = {
        "self_attn.in_proj_weight": rand(3 * d, d, generator=g, std=1.5 / math.sqrt(d)),
        "self_attn.in_proj_bias": rand(3 * d, generator=g, mean=0.1, std=0.3),
        "self_attn.out_proj.weight": rand(d, d, generator=g, std=1.0 / math.sqrt(d)),
        "self_attn.out_proj.bias": rand(d, generator=g, mean=-0.1, std=0.3),
        "linear1.weight": rand(d_ff, d, generator=g, std=1.2 / math.sqrt(d)),
        "linear1.bias": rand(d_ff, generator=g, mean=0.1, std=0.4),
        "linear2.weight": rand(d, d_ff, generator=g, std=1.0 / math.sqrt(d_ff)),
        "linear2.bias": rand(d, generator=g, mean=0.2, std=0.3),
        "norm1.weight": rand(d, generator=g, mean=1.0, std=0.4),
        "norm1.bias": rand(d, generator=g, mean=0.3, std=0.4),
        "norm2.weight": rand(d, generator=g, mean=0.8, std=0.4),
        "norm2.bias": rand(d, generator=g, mean=-0.2, std=0.4),
    }
    return {prefix + k: v.to(dtype) for k, v in s.items()}


def _sub(state, prefix):
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def _no_grad_f64(module, *args, **kwargs):
    """Run a torch reference module in float64 on its slow (reference) path: training mode with
    dropout 0 and autograd on, so no fused fast path is taken."""
    module.train()
    with torch.enable_grad():
        return module(*args, **kwargs).detach()


def ref_torch_layer(state, h, x, pad, norm_first):
    """nn.TransformerEncoderLayer with the same weights (float64)."""
    d, d_ff = x.shape[-1], state["linear1.weight"].shape[0]
    with torch.random.fork_rng(devices=[]):
        layer = nn.TransformerEncoderLayer(
            d, h, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64
        )
    layer.load_state_dict({k: v.to(F64) for k, v in state.items()})
    return _no_grad_f64(layer, x.to(F64), src_key_padding_mask=None if pad is None else ~pad)


def ref_torch_encoder(state, h, n_layers, x, pad, norm_first):
    """nn.TransformerEncoder (with a final LayerNorm when Pre-LN) with the same weights (float64)."""
    d, d_ff = x.shape[-1], state["layers.0.linear1.weight"].shape[0]
    with torch.random.fork_rng(devices=[]):
        layer = nn.TransformerEncoderLayer(
            d, h, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=F64
        )
        enc = nn.TransformerEncoder(
            layer,
            n_layers,
            norm=nn.LayerNorm(d, dtype=F64) if norm_first else None,
            enable_nested_tensor=False,
        )
    enc.load_state_dict({k: v.to(F64) for k, v in state.items()})
    return _no_grad_f64(enc, x.to(F64), src_key_padding_mask=None if pad is None else ~pad)


def ref_block(
    state,
    h,
    x,
    pad,
    norm_first,
    res_attn=True,
    res_ff=True,
    act="relu",
    pad_mode="ok",
    post_norm_sublayer=False,
    seq_first=False,
    swap_norms=False,
):
    """A functional block in float64, used to recompute the classic mistakes. With the defaults it
    equals nn.TransformerEncoderLayer."""
    s = {k: v.to(F64) for k, v in state.items()}
    if swap_norms:  # norm2 used with attention, norm1 with the FFN
        s = {
            **s,
            "norm1.weight": s["norm2.weight"],
            "norm1.bias": s["norm2.bias"],
            "norm2.weight": s["norm1.weight"],
            "norm2.bias": s["norm1.bias"],
        }
    x = x.to(F64)
    d = x.shape[-1]
    kpm = None
    if pad is not None and pad_mode == "ok":
        kpm = ~pad  # torch's key_padding_mask: True = ignore
    elif pad is not None and pad_mode == "inverted":
        kpm = pad

    def ln1(t):
        return F.layer_norm(t, (d,), s["norm1.weight"], s["norm1.bias"], 1e-5)

    def ln2(t):
        return F.layer_norm(t, (d,), s["norm2.weight"], s["norm2.bias"], 1e-5)

    def sa(t):
        t = t if seq_first else t.transpose(0, 1)  # (B, L, d) -> (L, B, d); seq_first: batch_first forgotten
        y, _ = F.multi_head_attention_forward(
            t,
            t,
            t,
            d,
            h,
            s["self_attn.in_proj_weight"],
            s["self_attn.in_proj_bias"],
            None,
            None,
            False,
            0.0,
            s["self_attn.out_proj.weight"],
            s["self_attn.out_proj.bias"],
            training=False,
            key_padding_mask=kpm,
            need_weights=False,
        )
        return y if seq_first else y.transpose(0, 1)  # (L, B, d) -> (B, L, d)

    def ff(t):
        a = F.linear(t, s["linear1.weight"], s["linear1.bias"])
        a = {"relu": F.relu, "gelu": F.gelu, "none": lambda z: z}[act](a)
        return F.linear(a, s["linear2.weight"], s["linear2.bias"])

    keep_a, keep_f = (1.0 if res_attn else 0.0), (1.0 if res_ff else 0.0)
    if norm_first:
        x = keep_a * x + sa(ln1(x))
        return keep_f * x + ff(ln2(x))
    if post_norm_sublayer:  # x + LN(f(x)): the norm on the wrong side of the sum
        x = keep_a * x + ln1(sa(x))
        return keep_f * x + ln2(ff(x))
    x = ln1(keep_a * x + sa(x))
    return ln2(keep_f * x + ff(x))


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


def _ignores_mask(out, got, what):
    """A probe of the answer itself: the same call without the mask gave exactly the same output."""
    y0 = out.get("y_nopad")
    if isinstance(y0, torch.Tensor) and isinstance(got, torch.Tensor) and y0.shape == got.shape:
        if torch.equal(y0, got):
            return msg(
                "your {module} ignores its pad_mask argument: its output is the same with the mask and without "
                "it. Pass the mask on (key_padding_mask=~pad_mask for nn.MultiheadAttention, pad_mask for "
                "each block)",
                module=what,
            )
    return ""


def _pad(b, length, g):
    """A (B, L) bool padding mask, True = real token: one full sequence, the others shorter."""
    lengths = torch.randint(1, length, (b,), generator=g)
    lengths[0] = length
    return torch.arange(length)[None, :] < lengths[:, None]


def _tol(dtype):
    return (1e-4, 1e-4) if dtype == torch.float32 else (1e-7, 1e-8)


def _compare(name, got, exp, pad, dtype, mistakes, generic, mask_hint=""):
    """Compare `name`'s output at the real positions only (outputs at padding positions are not graded).
    `mask_hint`: what the answer's own with/without-mask probe says, used when no mistake matches."""
    what = msg("{x} output", x=name)
    expect_tensor(got, what, shape=exp.shape)
    _judge.expect_dtype(got, dtype, what)
    g, e = (got[pad], exp[pad]) if pad is not None else (got, exp)
    if torch.isnan(g).any():
        raise CheckFailure(
            msg("{what} contains NaN at real (non-padding) positions.", what=what)
            + hint_line(
                N_(
                    "nn.MultiheadAttention's key_padding_mask is True for positions to *ignore*, the opposite of "
                    "pad_mask: pass key_padding_mask=~pad_mask (with the polarity inverted, a full-length sequence "
                    "has every key ignored, and that gives NaN)"
                )
                if pad is not None
                else N_("look for a division by zero or a log of a negative number")
            )
        )
    hint = diagnose(g, mistakes) or mask_hint
    rtol, atol = _tol(dtype)
    assert_close(
        g.to(F64),
        e,
        msg("{x} output at the real positions", x=name) if pad is not None else what,
        hint or generic,
        rtol=rtol,
        atol=atol,
    )


# ---------------------------------------------------------------------------------------------
# EncoderBlock


def _called_on_x(module: str, pad) -> list:
    """The steps that call `module` on x: with the padding mask `pad` (and once more without it, a
    probe: does the mask change anything?) or, when `pad` is None, without one."""
    if pad is None:
        return [call("y", ref(module), ref("x"))]
    return [
        let("pad", pad),
        call("y", ref(module), ref("x"), ref("pad")),
        call("y_nopad", ref(module), ref("x")),
    ]


def _pad_label(pad):
    """A case label's padding mask: none, or the lengths of the real tokens of each sequence."""
    if pad is None:
        return N_("pad_mask=none")
    return msg("pad_mask=lengths {lengths}", lengths=str(pad.sum(1).tolist()))


def _with_probe(label, probe: bool):
    """A case label, and when the case also builds the module without norm_first, that too."""
    return msg("{label}; also built without norm_first (the default)", label=label) if probe else label


def _on_x_label(module: str, x, pad) -> i18n.Msg:
    """The label of a case that calls `module` on x (with its padding mask, if any)."""
    return msg(
        "{module}, x {shape} {dtype}, {pad}",
        module=module,
        shape=str(tuple(x.shape)),
        dtype=str(x.dtype),
        pad=_pad_label(pad),
    )


def _eval_label(module: str, shape) -> i18n.Msg:
    """The label of a case that calls `module` (float64, dropout > 0) twice on x in eval mode."""
    return msg(
        "{module} in eval mode (module.eval()), called twice on x {shape} {dtype}, {pad}",
        module=module,
        shape=str(tuple(shape)),
        dtype="torch.float64",
        pad=_pad_label(None),
    )


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
    return cases


def _default_probe(cls: str, args: tuple, x, seed: int) -> list:
    """Steps that build `cls(*args)` twice from the same seed, once leaving norm_first out and once
    with norm_first=True, and call both on x: the signature's default must be Pre-LN."""
    return [
        _core.seed(seed),
        new("m_default", cls, *args),
        _core.seed(seed),
        new("m_explicit", cls, *args, norm_first=True),
        let("x_probe", x),
        call("y_default", ref("m_default"), ref("x_probe")),
        call("y_explicit", ref("m_explicit"), ref("x_probe")),
    ]


def _judge_default(cls: str, out: dict) -> None:
    """The module built without norm_first must compute what the one with norm_first=True does."""
    if "y_default" not in out:
        return
    y, y_exp = out["y_default"], out["y_explicit"]
    expect_tensor(y_exp, msg("{x} output", x=f"{cls}(..., norm_first=True)"))
    y = expect_tensor(y, msg("{c} output without norm_first", c=cls), shape=y_exp.shape)
    if not _judge.close(y.to(F64), y_exp.to(F64), *_tol(y_exp.dtype)):
        raise CheckFailure(
            msg(
                "{cls} built without norm_first does not compute what {cls}(..., norm_first=True) computes "
                "(the same seed, so the same weights).",
                cls=cls,
            )
            + got_expected(_judge._fmt(y), _judge._fmt(y_exp))
            + hint_line(
                N_(
                    "the signature's default is norm_first=True (Pre-LN): "
                    "__init__(self, ..., dropout=0.0, norm_first=True), and each layer gets norm_first=norm_first"
                )
            )
        )


def _eval_twice(module: str, x) -> list:
    """The steps that put `module` in eval mode and call it twice on x."""
    return [
        call("_mode", ref(module, "eval")),
        let("x", x),
        call("y", ref(module), ref("x")),
        call("y_again", ref(module), ref("x")),
    ]


EVAL_HINT = N_(
    "in eval mode dropout must do nothing: use nn.Dropout (it follows module.eval()), or "
    "F.dropout(h, p, training=self.training)"
)


def _judge_eval(name, out, exp, dt, logits=False):
    """With dropout > 0 in eval mode, two calls must give the same output: the one without dropout.
    `name`'s output (its logits, with `logits`)."""
    if logits:
        what, in_eval = msg("{x} logits", x=name), msg("{x} logits in eval mode", x=name)
        changed = msg("{x} logits in eval mode changed from one call to the next.", x=name)
    else:
        what, in_eval = msg("{x} output", x=name), msg("{x} output in eval mode", x=name)
        changed = msg("{x} output in eval mode changed from one call to the next.", x=name)
    y, again = out["y"], out["y_again"]
    expect_tensor(y, what, shape=exp.shape)
    expect_tensor(again, what, shape=exp.shape)
    if not _judge.close(y, again, *_tol(dt)) or not _judge.close(y.to(F64), exp, *_tol(dt)):
        assert_close(y.to(F64), exp, in_eval, EVAL_HINT, *_tol(dt))
        raise CheckFailure(
            changed
            + got_expected(N_("two different outputs for the same x"), N_("the same output twice"))
            + hint_line(EVAL_HINT)
        )


def _block_judge(case, out):
    f = case.facts
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


# ---------------------------------------------------------------------------------------------
# Encoder (a stack of blocks, plus the final LayerNorm when Pre-LN)


def encoder_state(n_layers, d, d_ff, g, dtype, norm_first):
    state = {}
    for i in range(n_layers):
        state.update(layer_state(d, d_ff, g, dtype, prefix=f"layers.{i}."))
    if norm_first:
        state["norm.weight"] = rand(d, generator=g, mean=1.2, std=0.4).to(dtype)
        state["norm.bias"] = rand(d, generator=g, mean=-0.3, std=0.4).to(dtype)
    return state


def ref_stack(
    state, h, n_layers, x, pad, nf, final_norm=True, norm_every_block=False, blocks_nf=None, pass_pad=True
):
    """The encoder by hand in float64 (for the mistakes)."""
    blocks_nf = nf if blocks_nf is None else blocks_nf
    d = x.shape[-1]
    norm = (
        (lambda t: F.layer_norm(t, (d,), state["norm.weight"].to(F64), state["norm.bias"].to(F64), 1e-5))
        if "norm.weight" in state
        else (lambda t: t)
    )
    y = x.to(F64)
    for i in range(n_layers):
        y = ref_block(_sub(state, f"layers.{i}."), h, y, pad if pass_pad else None, blocks_nf)
        if norm_every_block:
            y = norm(y)
    return norm(y) if final_norm and not norm_every_block else y


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
    return cases


def _encoder_judge(case, out):
    f = case.facts
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
            "first make EncoderBlock pass its check; then run the blocks in order "
            "(layers[0] first), each with pad_mask, and finish with self.norm when norm_first"
        ),
        mask_hint=_ignores_mask(out, out["y"], "Encoder"),
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(msg("Encoder modified its input x in place"))


# ---------------------------------------------------------------------------------------------
# TinyTransformer (embedding + positional encoding + encoder + head)


def _model_cases(hidden):
    # (B, L, vocab, d_model, n_heads, d_ff, n_layers, max_len, norm_first, padded, dtype)
    specs = [
        (2, 6, 11, 12, 3, 20, 2, 9, True, True, torch.float32),
        (3, 5, 7, 8, 2, 16, 1, 5, False, False, torch.float32),
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
                ["y", "tokens"]
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
    return cases


def ref_model(f, pe=True, scale=1.0):
    s, tokens = f["state"], f["tokens"]
    d = s["embed.weight"].shape[1]
    x = s["embed.weight"].to(F64)[tokens] * scale  # (B, L) -> (B, L, d)
    if pe:
        x = x + ref_pe(f["max_len"], d)[: tokens.shape[1]]
    return x, _sub(s, "encoder.")


def _model_judge(case, out):
    f = case.facts
    s, pad, dt = f["state"], f["pad"], f["dt"]

    def head(y):
        return F.linear(y, s["head.weight"].to(F64), s["head.bias"].to(F64))

    x, enc_state = ref_model(f)
    exp = head(ref_torch_encoder(enc_state, f["h"], f["n"], x, pad, f["nf"]))
    if f.get("eval"):  # the positional table is float32 by contract: the tolerance of float32
        return _judge_eval("TinyTransformer", out, exp, torch.float32, logits=True)
    _judge_default("TinyTransformer", out)
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
        raise CheckFailure(
            msg("TinyTransformer logits should have the model's dtype.")
            + got_expected(g.dtype, dt)
            + hint_line(N_("cast the positional table to the embeddings' dtype"))
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
            "first make Encoder and positional_encoding pass their checks; then "
            "logits = head(encoder(embed(tokens) + PE[:L], pad_mask))"
        ),
        rtol=1e-4,
        atol=1e-4,
    )
    if not torch.equal(out["tokens"], f["tokens"]):
        raise CheckFailure(msg("TinyTransformer modified its input tokens in place"))


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("positional_encoding", _pe_cases, _pe_judge),
    Question("EncoderBlock", _block_cases, _block_judge),
    Question("Encoder", _encoder_cases, _encoder_judge, needs=("EncoderBlock",)),
    Question(
        "TinyTransformer",
        _model_cases,
        _model_judge,
        needs=("Encoder", "EncoderBlock", "positional_encoding"),
    ),
)

check = _core.lesson_check(QUESTIONS, "EncoderBlock")
