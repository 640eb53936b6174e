"""The check of `attention_backward` (lesson 08_backward): the attention's reference and its
backward, the catalogued mistakes, its cases and its judge."""

from __future__ import annotations

import math

import torch

from .. import _core
from .._core import Case, call, gen, graded, hint_line, let, rand, ref
from .._judge import CheckFailure, close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import BY_HAND, _assert_grad, _autograd, _tols, _unchanged, by_hand

EARLIER = ("softmax_backward",)  # the reference when the student's fails its own check

# ---------------------------------------------------------------------------------------------
# attention_backward


def _finite_fill(dtype):
    return torch.finfo(dtype).min


def ref_attention(q, k, v, mask=None):
    """Lesson 01's attention, written so that autograd gives finite gradients on a fully masked row:
    masked scores get the most negative float (not -inf) and a row with no allowed key is zeroed."""
    scale = 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale  # (..., Lq, Lk)
    if mask is None:
        return torch.softmax(s, -1) @ v
    s = s.masked_fill(~mask, _finite_fill(s.dtype))
    p = torch.softmax(s, -1) * mask.any(-1, keepdim=True)  # dead rows -> 0
    return p @ v  # (..., Lq, Lk) x (..., Lk, d_v) -> (..., Lq, d_v)


def ref_attention_backward(d_out, q, k, v, mask=None, mistake=None):
    """(dq, dk, dv) by the hand formulas, or with one classic mistake (float64)."""
    d_out, q, k, v = d_out.double(), q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1])
    fwd_scale = {"no_scale_forward": 1.0, "no_scale_in_p": 1.0, "scale_dk": 1 / q.shape[-1]}.get(
        mistake, scale
    )
    bwd_scale = {"no_scale_forward": 1.0, "no_scale_backward": 1.0, "scale_dk": 1 / q.shape[-1]}.get(
        mistake, scale
    )
    s = q @ k.transpose(-2, -1) * fwd_scale
    m = mask
    if mistake == "mask_ignored":
        m = None
    elif mistake == "mask_inverted" and mask is not None:
        m = ~mask
    if m is not None:
        s = s.masked_fill(~m, -math.inf)
    p = torch.nan_to_num(torch.softmax(s, -1), nan=0.0)
    if mistake == "mask_nan" and m is not None:
        p = torch.softmax(s, -1)
    dv = p.transpose(-2, -1) @ d_out
    dp = d_out @ v.transpose(-2, -1)
    if mistake == "softmax_diag_only":
        ds = p * dp
    else:
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    if mistake == "dk_no_transpose":  # dS q exists only when Lq = Lk: otherwise nothing to match
        dk = ds @ q * bwd_scale if ds.shape[-1] == q.shape[-2] else None
        return ds @ k * bwd_scale, dk, dv
    return ds @ k * bwd_scale, ds.transpose(-2, -1) @ q * bwd_scale, dv


_DK_NO_TRANSPOSE = N_(
    "your dk is dS q, without the transpose: S = q k^T / sqrt(d_k) makes S[i, j] depend on key j "
    "through every query i, so dk sums over the queries, dk = dS^T q / sqrt(d_k) "
    "(shape (..., Lk, d_k); dS q only has that shape when Lq = Lk)"
)

_ATTN_MISTAKES = [
    (
        "no_scale_backward",
        N_(
            "dq and dk miss the scale: scores = q k^T / sqrt(d_k), so dq = dS k / sqrt(d_k) and "
            "dk = dS^T q / sqrt(d_k)"
        ),
    ),
    (
        "no_scale_forward",
        N_(
            "the attention weights are recomputed without the scale 1/sqrt(d_k) (and dq, dk miss it): "
            "scores = q k^T / sqrt(d_k)"
        ),
    ),
    (
        "no_scale_in_p",
        N_(
            "the attention weights are recomputed without the scale 1/sqrt(d_k), P = softmax(q k^T), though "
            "dq and dk have it: recompute P = softmax(q k^T / sqrt(d_k)), as the forward did"
        ),
    ),
    (
        "scale_dk",
        N_(
            "the scores are divided by d_k: attention divides q k^T by sqrt(d_k), so the weights and "
            "dq, dk use 1/sqrt(d_k)"
        ),
    ),
    (
        "mask_ignored",
        N_(
            "the mask is ignored: masked keys must get weight 0 in the forward recomputation, so they get "
            "no gradient (fill the scores where mask is False with -inf before the softmax)"
        ),
    ),
    (
        "mask_inverted",
        N_(
            "the mask polarity is inverted: True means 'may attend', so fill the scores where the mask is False"
        ),
    ),
    (
        "softmax_diag_only",
        N_(
            "dS = P * dP keeps only the diagonal term of the softmax Jacobian: "
            "dS = P * (dP - sum(dP * P, dim=-1, keepdim=True))"
        ),
    ),
    ("dk_no_transpose", _DK_NO_TRANSPOSE),
]

# mistakes whose hints say what all three gradients do
_WHOLE_ONLY = ("no_scale_forward", "no_scale_in_p")


def _flat(tensors):
    """The gradients as one float64 vector (a model without one of them raises: diagnose skips it)."""
    return torch.cat([t.reshape(-1).double() for t in tensors])


_NAN_HINT = N_(
    "your gradients contain NaN: a fully masked row (a query with no allowed key) has softmax of all "
    "-inf = NaN. Its weights are 0 (lesson 1), so its dS is 0: torch.nan_to_num the weights, then "
    "the row gives dq = 0 and adds nothing to dk and dv"
)


# a case's mask, by its kind (`_core.random_mask`)
_MASK_KINDS = {
    None: N_("mask={mask} (none)"),
    "random": N_("mask={mask} (random)"),
    "causal": N_("mask={mask} (causal)"),
    "dead_row": N_("mask={mask} (dead_row)"),
    "broadcast": N_("mask={mask} (broadcast)"),
}


def _attn_cases(hidden):
    # (leading dims, Lq, Lk, d_k, d_v, mask kind, dtype)
    specs = [
        ((), 4, 4, 6, 3, None, torch.float64),  # the smallest, square: dS q has dk's shape only when Lq = Lk
        ((2,), 3, 5, 8, 6, None, torch.float32),
        ((2, 3), 5, 4, 16, 7, "random", torch.float64),
        ((3,), 6, 6, 12, 5, "causal", torch.float32),
        ((2, 2), 4, 7, 9, 3, "dead_row", torch.float64),
    ]
    if hidden:
        specs = [
            ((3, 2), 7, 9, 32, 10, "broadcast", torch.float32),
            ((4,), 9, 9, 24, 11, "causal", torch.float64),
            ((2, 3), 6, 8, 20, 13, "dead_row", torch.float32),
            ((2, 2, 2), 5, 6, 10, 4, "dead_row", torch.float64),
            ((5,), 8, 11, 64, 6, None, torch.float64),
        ]
    cases = []
    for i, (lead, lq, lk, dk, dv, mk, dt) in enumerate(specs):
        g = gen(8300 + 41 * i + (500 if hidden else 0))
        q = rand(*lead, lq, dk, dtype=dt, mean=0.5, std=1.5, generator=g)
        k = rand(*lead, lk, dk, dtype=dt, mean=-0.3, std=1.5, generator=g)
        v = rand(*lead, lk, dv, dtype=dt, mean=1.0, std=2.0, generator=g)
        d_out = rand(*lead, lq, dv, dtype=dt, mean=0.3, std=1.0, generator=g)
        mask = _core.random_mask(mk, lead, lq, lk, g)
        if mk == "broadcast":
            mask[2, :] = False  # and a query with no allowed key
        steps = [let("d_out", d_out), let("q", q), let("k", k), let("v", v)]
        args = [graded("attention_backward"), ref("d_out"), ref("q"), ref("k"), ref("v")]
        if mask is None:
            steps.append(call("grads", BY_HAND, *args))
        else:
            steps += [let("mask", mask), call("grads", BY_HAND, *args, mask=ref("mask"))]
        label = msg(
            "d_out {d_out}, q {q}, k {k}, v {v}, {dtype}, {mask}",
            d_out=tuple(d_out.shape),
            q=tuple(q.shape),
            k=tuple(k.shape),
            v=tuple(v.shape),
            dtype=dt,
            mask=msg(_MASK_KINDS[mk], mask="none" if mask is None else tuple(mask.shape)),
        )
        cases.append(
            Case(
                label,
                steps,
                ["grads", "d_out", "q", "k", "v"],
                facts=dict(q=q, k=k, v=v, d_out=d_out, mask=mask),
                size=q.numel() + k.numel(),
            )
        )
    return cases


def _attn_judge(case, out):
    f = case.facts
    q, k, v, d_out, mask = f["q"], f["k"], f["v"], f["d_out"], f["mask"]
    grads = by_hand(out["grads"], "attention_backward")
    if not isinstance(grads, (tuple, list)) or len(grads) != 3:
        raise CheckFailure(
            msg(
                "{who} should return three tensors ({names}), got {got}",
                who="attention_backward",
                names="dq, dk, dv",
                got=f"{grads!r:.80}",
            )
        )
    exp = _autograd(lambda q_, k_, v_: ref_attention(q_, k_, v_, mask), [q, k, v], d_out)
    hints = dict(_ATTN_MISTAKES)
    models = {key: ref_attention_backward(d_out, q, k, v, mask, key) for key in hints}
    whole = []  # the mistake that gives all three gradients at once, found on the first failure

    def whole_hint():
        if not whole:
            try:
                got_all = [
                    expect_tensor(grads[i], n, shape=exp[i].shape) for i, n in enumerate(("dq", "dk", "dv"))
                ]
            except CheckFailure:
                got_all = None
            whole.append(
                diagnose(_flat(got_all), [(hints[key], lambda key=key: _flat(models[key])) for key in hints])
                if got_all is not None
                else ""
            )
        return whole[0]

    for i, name in sorted(enumerate(("dq", "dk", "dv")), key=lambda t: -t[0]):  # dv first: it needs no dS
        got = expect_tensor(grads[i], name, shape=exp[i].shape)
        what = msg("{name} from {who}", name=name, who="attention_backward")
        if torch.isnan(got).any():
            raise CheckFailure(msg("{what} contains NaN.", what=what) + hint_line(_NAN_HINT))
        # one gradient alone cannot tell the mistakes that share it apart (the weights without the scale
        # give the same dv whether dq and dk have it or not): those are named only by all three
        hint = ""
        if not close(got, exp[i].to(got.dtype), *_tols(exp[i], q.dtype)):
            hint = whole_hint() or diagnose(
                got, [(hints[key], lambda key=key: models[key][i]) for key in hints if key not in _WHOLE_ONLY]
            )
        _assert_grad(
            got,
            exp[i],
            what,
            hint
            or msg(
                "recompute P = softmax(q k^T / sqrt(d_k), masked); dv = P^T d_out; dP = d_out v^T; "
                "dS = P * (dP - sum(dP * P, -1)); dq = dS k / sqrt(d_k); dk = dS^T q / sqrt(d_k)"
            ),
            q.dtype,
        )
    _unchanged(out, f, ("d_out", "q", "k", "v"), "attention_backward")
