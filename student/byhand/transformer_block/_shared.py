"""Lesson 06_transformer_block: what its exercises share: the float64 references (the
positional encoding, torch's encoder, the functional block and stack), the case builders and labels,
and the judges' common parts."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import _core, _judge, i18n
from .._core import call, got_expected, hint_line, let, new, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg

F64 = torch.float64

# ---------------------------------------------------------------------------------------------
# Helpers run where the answer lives (`HELPERS` in __init__.py): only plain values travel back


def kind_of(value) -> str:
    """What `value` is, as its type's dotted name ("torch.Tensor" for any tensor): the wire turns a
    numpy array into a tensor, so the judge could not tell one from the other."""
    if isinstance(value, torch.Tensor):
        return "torch.Tensor"
    kind = type(value)
    return (
        f"{kind.__module__}.{kind.__qualname__}"[:80]
        if kind.__module__ != "builtins"
        else kind.__qualname__[:80]
    )


def state_keys(module) -> list:
    """The state_dict keys of `module`, each with its tensor's shape (a table kept in it shows)."""
    if not isinstance(module, nn.Module):
        return []
    return [[str(k)[:80], [int(n) for n in v.shape]] for k, v in list(module.state_dict().items())[:200]]


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
    """Run a torch reference module in float64 on its slow (reference) path: training mode (with
    dropout 0 unless a case asks for more) and autograd on, so no fused fast path is taken."""
    module.train()
    with torch.enable_grad():
        return module(*args, **kwargs).detach()


def ref_torch_encoder(state, h, n_layers, x, pad, norm_first, dropout=0.0):
    """nn.TransformerEncoder (with a final LayerNorm when Pre-LN) with the same weights (float64),
    in training mode: with `dropout` > 0 it draws from the global RNG."""
    d, d_ff = x.shape[-1], state["layers.0.linear1.weight"].shape[0]
    with torch.random.fork_rng(devices=[]):
        layer = nn.TransformerEncoderLayer(
            d, h, d_ff, dropout=dropout, batch_first=True, norm_first=norm_first, dtype=F64
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
    dropout=0.0,
    drops=("attn", "out", "relu"),
):
    """A functional block in float64, used to recompute the classic mistakes. With the defaults it
    equals nn.TransformerEncoderLayer. With `dropout` > 0 it is in training mode and drops at the
    places `drops` names: "attn" (the attention weights), "out" (each sublayer's output), "relu"
    (after the ReLU), or mistaken ones: "in" (each sublayer's input), "stream" (the block's output);
    "unscaled": the sublayers' drops keep the kept values unscaled (no 1/(1-p))."""
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

    def drop(t, where):
        if dropout == 0 or where not in drops:
            return t
        if "unscaled" in drops:
            return t * (torch.rand_like(t) >= dropout)
        return F.dropout(t, dropout, training=True)

    def ln1(t):
        return F.layer_norm(t, (d,), s["norm1.weight"], s["norm1.bias"], 1e-5)

    def ln2(t):
        return F.layer_norm(t, (d,), s["norm2.weight"], s["norm2.bias"], 1e-5)

    def sa(t):
        t = drop(t, "in")
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
            dropout if "attn" in drops else 0.0,
            s["self_attn.out_proj.weight"],
            s["self_attn.out_proj.bias"],
            training=dropout > 0,
            key_padding_mask=kpm,
            need_weights=False,
        )
        return drop(y if seq_first else y.transpose(0, 1), "out")  # (L, B, d) -> (B, L, d)

    def ff(t):
        a = F.linear(drop(t, "in"), s["linear1.weight"], s["linear1.bias"])
        a = drop({"relu": F.relu, "gelu": F.gelu, "none": lambda z: z}[act](a), "relu")
        return drop(F.linear(a, s["linear2.weight"], s["linear2.bias"]), "out")

    keep_a, keep_f = (1.0 if res_attn else 0.0), (1.0 if res_ff else 0.0)
    if norm_first:
        x = keep_a * x + sa(ln1(x))
        return drop(keep_f * x + ff(ln2(x)), "stream")
    if post_norm_sublayer:  # x + LN(f(x)): the norm on the wrong side of the sum
        x = keep_a * x + ln1(sa(x))
        return keep_f * x + ln2(ff(x))
    x = ln1(keep_a * x + sa(x))
    return drop(ln2(keep_f * x + ff(x)), "stream")


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


# ---------------------------------------------------------------------------------------------
# The reference answers, as the answer cells define them: put in place of a student's answer that
# fails its own check while a later question's cases run (byhand._depends)


def reference_positional_encoding(max_len, d_model):
    return ref_pe(max_len, d_model).float()


class ReferenceEncoderBlock(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer (batch_first), with the lesson's pad_mask (True = a real token)."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout, batch_first=True, norm_first=norm_first)

    def forward(self, x, pad_mask=None):
        return super().forward(x, src_key_padding_mask=None if pad_mask is None else ~pad_mask)


class ReferenceEncoder(nn.Module):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.layers = nn.ModuleList(
            [ReferenceEncoderBlock(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)]
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x, pad_mask=None):
        for layer in self.layers:
            x = layer(x, pad_mask)
        return x if self.norm is None else self.norm(x)
