"""The check of `LlamaBlock` (lesson 09_modern_block): its reference, its catalogued mistakes, its
cases and its judge."""

from __future__ import annotations

import torch

from .._core import gen, new, rand
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import (
    F64,
    _check_cache,
    _compare,
    _module,
    _pair,
    _with_and_without_cache,
    gqa_state,
    ref_gqa,
    ref_swiglu,
    swiglu_state,
)

# ---------------------------------------------------------------------------------------------
# LlamaBlock


# the earlier answers its check runs: the reference of each when the student's fails its own check
EARLIER = ("GroupedQueryAttention", "SwiGLU")


def block_state(d, h, hkv, d_ff, g, dtype):
    s = {"attn_norm.weight": rand(d, generator=g, mean=1.0, std=0.3)}
    s.update(gqa_state(d, h, hkv, g, F64, prefix="attn."))
    s["ffn_norm.weight"] = rand(d, generator=g, mean=0.8, std=0.3)
    s.update(swiglu_state(d, d_ff, g, F64, prefix="ffn."))
    return {k: v.to(dtype) for k, v in s.items()}


def _sub(state, prefix):
    return {k[len(prefix) :]: t for k, t in state.items() if k.startswith(prefix)}


def _rms(z, w, eps, kind="rms"):
    if kind == "layer":  # mean subtracted: LayerNorm without a bias
        z = z - z.mean(-1, keepdim=True)
    return z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + eps) * w.to(F64)


def ref_block(
    s,
    x,
    h,
    hkv,
    eps=1e-6,
    theta=10000.0,
    positions=None,
    cache=None,
    order="pre",
    same_norm=False,
    norm_eps=None,
    norm="rms",
    attn_res=True,
    ffn_res=True,
):
    """The Llama block in float64 -> (y, (k, v)). order "pre" (the contract), "post" (norm after each
    residual sum) or "parallel" (y = x + attn(norm1(x)) + ffn(norm2(x))); same_norm uses attn_norm for
    both sublayers; norm_eps is the eps the norms actually use (None: eps)."""
    x = x.to(F64)
    e = eps if norm_eps is None else norm_eps
    w1 = s["attn_norm.weight"]
    w2 = w1 if same_norm else s["ffn_norm.weight"]
    kv = []

    def attn(z):
        y, c = ref_gqa(_sub(s, "attn."), z, h, hkv, theta, positions, cache)
        kv.append(c)
        return y

    def ffn(z):
        return ref_swiglu(_sub(s, "ffn."), z)

    if order == "pre":
        hh = (x if attn_res else 0) + attn(_rms(x, w1, e, norm))
        y = (hh if ffn_res else 0) + ffn(_rms(hh, w2, e, norm))
    elif order == "post":
        hh = _rms(x + attn(x), w1, e, norm)
        y = _rms(hh + ffn(hh), w2, e, norm)
    else:
        y = x + attn(_rms(x, w1, e, norm)) + ffn(_rms(x, w2, e, norm))
    return y, kv[0]


def _block_mistakes(s, x, h, hkv, eps, cache, positions=None, default_eps=False):
    def m(**kw):
        return lambda: ref_block(s, x, h, hkv, eps, positions=positions, cache=cache, **kw)[0]

    out = []
    if positions is not None:
        out.append(
            (
                N_(
                    "your block does not pass its positions on to the attention: self.attn(attn_norm(x), "
                    "positions, kv_cache)"
                ),
                lambda: ref_block(s, x, h, hkv, eps, cache=cache)[0],
            )
        )
    out += [
        (
            N_(
                "your block is Post-norm: the Llama block normalizes inside each branch, h = x + attn(attn_norm(x)); "
                "y = h + ffn(ffn_norm(h))"
            ),
            m(order="post"),
        ),
        (
            N_(
                "your block is parallel (attention and the FFN both read x): the FFN reads h = x + attn(attn_norm(x)), "
                "y = h + ffn(ffn_norm(h))"
            ),
            m(order="parallel"),
        ),
        (
            N_(
                "the FFN's input is normalized with attn_norm: each sublayer has its own RMSNorm, ffn_norm for the FFN"
            ),
            m(same_norm=True),
        ),
        (
            N_(
                "your norm subtracts the mean (that is LayerNorm): RMSNorm divides by the root mean square only, "
                "nn.RMSNorm(d_model, eps=eps)"
            ),
            m(norm="layer"),
        ),
        (
            N_("the residual connection around the attention is missing: h = x + attn(attn_norm(x))"),
            m(attn_res=False),
        ),
        (N_("the residual connection around the FFN is missing: y = h + ffn(ffn_norm(h))"), m(ffn_res=False)),
    ]
    if default_eps:
        # built with its default eps, a block whose norms ignore eps gets nn.RMSNorm's own default (the
        # dtype's machine epsilon): name that, not a wrong default
        out.append(
            (
                N_(
                    "your RMSNorms ignore the eps argument: pass it on, nn.RMSNorm(d_model, eps=eps) (nn.RMSNorm's "
                    "own default is the dtype's machine epsilon)"
                ),
                m(norm_eps=torch.finfo(torch.float64).eps),
            )
        )
        out.append(
            (
                N_(
                    "eps should default to 1e-6: def __init__(self, d_model, n_heads, n_kv_heads, d_ff, eps=1e-6), "
                    "passed on to both nn.RMSNorm(d_model, eps=eps)"
                ),
                m(norm_eps=1e-5),
            )
        )
    if eps > 1e-3:
        out.append(
            (
                N_(
                    "your RMSNorms ignore the eps argument: pass it on, nn.RMSNorm(d_model, eps=eps) (nn.RMSNorm's "
                    "own default is the dtype's machine epsilon)"
                ),
                m(norm_eps=torch.finfo(torch.float32).eps),
            )
        )
    return out


def _block_specs(hidden):
    # (B, T, d_model, n_heads, n_kv_heads, d_ff, eps (None: the default), dtype, T_past, T_new, positions
    # given (strided) or not); the hidden cases repeat each kind with other data and sizes
    if not hidden:
        return [
            (2, 5, 16, 4, 2, 24, None, torch.float32, 0, 0, False),
            (1, 6, 20, 2, 2, 36, None, torch.float64, 0, 0, False),
            (3, 4, 24, 6, 3, 40, 0.1, torch.float64, 0, 0, False),
            (2, 7, 16, 4, 2, 24, 0.1, torch.float64, 0, 0, True),
            (2, 8, 16, 4, 1, 20, 0.05, torch.float64, 5, 3, False),
            (2, 10, 24, 4, 2, 32, 0.1, torch.float32, 9, 1, False),
        ]
    return [
        (4, 7, 32, 8, 2, 48, 0.2, torch.float32, 0, 0, False),
        (2, 5, 24, 3, 1, 30, None, torch.float64, 0, 0, False),
        (3, 6, 16, 2, 2, 28, 0.1, torch.float32, 0, 0, True),
        (2, 9, 20, 2, 1, 24, 0.05, torch.float64, 6, 3, False),
        (1, 8, 16, 4, 2, 24, None, torch.float32, 7, 1, False),
    ]


def _block_cases(hidden):
    cases = []
    for i, (b, t, d, h, hkv, d_ff, eps, dt, t_past, t_new, given) in enumerate(_block_specs(hidden)):
        g = gen(9400 + 31 * i + d + (900 if hidden else 0))
        s = block_state(d, h, hkv, d_ff, g, dt)
        x = rand(b, t, d, dtype=dt, mean=0.2, std=0.5 if eps else 2.0, generator=g)
        kw = {} if eps is None else {"eps": eps}
        eps_ = 1e-6 if eps is None else eps
        head = _module(
            f"LlamaBlock(d_model={d}, n_heads={h}, n_kv_heads={hkv}, d_ff={d_ff}"
            + (f", eps={eps})" if eps is not None else ")"),
            dt,
        )
        pos = torch.arange(t) * 5 + 3 if given else None
        cases.append(
            _with_and_without_cache(
                new("blk", "LlamaBlock", d, h, hkv, d_ff, state=s, dtype=dt, **kw),
                head,
                x,
                (t_past, t_new, pos),
                lambda x_past, s=s, h=h, hkv=hkv, eps_=eps_: ref_block(s, x_past, h, hkv, eps_)[1],
                dict(s=s, h=h, hkv=hkv, eps=eps_, dt=dt, default_eps=eps is None),
            )
        )
    return cases


def _block_judge(case, out):
    f = case.facts
    s, x, h, hkv, eps, dt = f["s"], f["x"], f["h"], f["hkv"], f["eps"], f["dt"]
    cache, pos = f.get("cache"), f.get("pos")
    y, new_cache = _pair(out["out"], "LlamaBlock")
    exp, (ek, ev) = ref_block(s, x, h, hkv, eps, positions=pos, cache=cache)
    _compare(
        y,
        exp,
        dt,
        msg("{name} output {y} with a cache", name="LlamaBlock", y="y")
        if cache is not None
        else msg("{name} output {y}", name="LlamaBlock", y="y"),
        _block_mistakes(s, x, h, hkv, eps, cache, pos, f.get("default_eps", False)),
        N_(
            "first make GroupedQueryAttention and SwiGLU pass their checks; then h = x + attn(attn_norm(x)) (with the "
            "positions and the cache), y = h + ffn(ffn_norm(h)), attn_norm and ffn_norm nn.RMSNorm(d_model, eps=eps)"
        ),
    )
    _check_cache(new_cache, ek, ev, dt, "new_cache")
    if cache is None and not torch.equal(out["x"], x):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="LlamaBlock", name="x"))
