"""Checks for lesson 01_attention: attention, masks, heads.

Each graded name has cases (small first; hidden ones add seeds, dtypes and shapes) and a judge that
compares with torch's own ops and, on a mismatch, recognises the classic mistakes of
docs/mistakes.md by recomputing them ("your output equals softmax over the queries ...").
"""

from __future__ import annotations

import math

import torch

from . import _core, _judge
from ._core import Case, Question, call, gen, got_expected, hint_line, let, new, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "01_attention"

# ---------------------------------------------------------------------------------------------
# References (float64, computed in the judge's process)


def ref_weights(q, k, mask=None, scale=None, softmax_dim=-1, masked_value=-math.inf):
    q, k = q.double(), k.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale  # (..., Lq, Lk)
    if mask is not None:
        scores = scores.masked_fill(~mask, masked_value)
    w = torch.softmax(scores, dim=softmax_dim)
    return torch.nan_to_num(w, nan=0.0)  # fully masked row -> 0


def ref_sdpa(q, k, v, mask=None, **mistake):
    w = ref_weights(q, k, mask, **mistake)
    return w @ v.double(), w


def ref_causal_mask(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def ref_split_heads(x, h):
    b, seq, d = x.shape
    return x.view(b, seq, h, d // h).transpose(1, 2)  # (B, L, H, dh) -> (B, H, L, dh)


def ref_merge_heads(x):
    b, h, seq, dh = x.shape
    return x.transpose(1, 2).reshape(b, seq, h * dh)


# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention


def _mask_words(kind, shape: str):
    """A case label's mask: its shape (or None) and, in words, what kind of mask it is."""
    if kind == "random":
        return msg("{shape} (random)", shape=shape)
    if kind == "causal":
        return msg("{shape} (causal)", shape=shape)
    if kind == "dead_row":
        return msg("{shape} (dead_row)", shape=shape)
    if kind == "broadcast":
        return msg("{shape} (broadcast)", shape=shape)
    assert kind is None, kind
    return msg("{shape} (none)", shape=shape)


def _sdpa_cases(hidden):
    # (batch dims, Lq, Lk, d_k, d_v, mask kind, dtype)
    shapes = [
        ((2,), 3, 5, 8, 6, None, torch.float32),
        ((2, 3), 5, 4, 16, 7, "random", torch.float32),
        ((3,), 6, 6, 12, 5, "causal", torch.float64),
        ((2, 2), 4, 7, 9, 3, "dead_row", torch.float32),
    ]
    seeds = [0]
    if hidden:
        shapes = [
            ((3, 2), 7, 9, 32, 10, "broadcast", torch.float64),
            ((4,), 9, 9, 24, 11, "causal", torch.float32),
            ((2, 3), 6, 8, 20, 13, "dead_row", torch.float64),
            ((5,), 8, 11, 64, 6, None, torch.float32),
        ]
        seeds = [1, 2]
    cases = []
    for s in seeds:
        for bd, lq, lk, dk, dv, mk, dt in shapes:
            g = gen(1000 * s + lq * 31 + lk)
            q = rand(*bd, lq, dk, dtype=dt, mean=0.5, std=2.0, generator=g)
            k = rand(*bd, lk, dk, dtype=dt, mean=-0.3, std=1.5, generator=g)
            v = rand(*bd, lk, dv, dtype=dt, mean=1.0, std=3.0, generator=g)
            mask = _core.random_mask(mk, bd, lq, lk, g)
            steps = [let("q", q), let("k", k), let("v", v)]
            if mask is None:
                steps.append(call("out", "scaled_dot_product_attention", ref("q"), ref("k"), ref("v")))
            else:
                steps += [
                    let("mask", mask),
                    call(
                        "out", "scaled_dot_product_attention", ref("q"), ref("k"), ref("v"), mask=ref("mask")
                    ),
                ]
            label = msg(
                "q {q}, k {k}, v {v}, {dtype}, mask={mask}, seed {seed}",
                q=str(tuple(q.shape)),
                k=str(tuple(k.shape)),
                v=str(tuple(v.shape)),
                dtype=str(dt),
                mask=_mask_words(mk, "None" if mask is None else str(tuple(mask.shape))),
                seed=str(s),
            )
            cases.append(
                Case(
                    label,
                    steps,
                    ["out", "q", "k", "v"] + (["mask"] if mask is not None else []),
                    facts=dict(q=q, k=k, v=v, mask=mask),
                    size=q.numel() + k.numel(),
                )
            )
    return cases


_FINITE_FILL = N_(
    "a row with no allowed key got uniform weights 1/Lk instead of 0: filling masked scores with a large "
    "finite number (-1e9, torch.finfo.min) leaves softmax(-1e9, ..., -1e9) = 1/Lk, because -1e9 is "
    "finite. Fill with float('-inf') and turn the NaN rows into 0 (torch.nan_to_num), or zero the "
    "weights of rows where mask.any(-1) is False"
)


def _sdpa_mistakes(q, k, mask):
    """(hint, weights) of the classic mistakes, one at a time and two at once."""
    d = q.shape[-1]
    singles = [
        (N_("the scores are not scaled: divide q @ k^T by sqrt(d_k)"), dict(scale=1.0)),
        (N_("the scores are divided by d_k: divide by sqrt(d_k), the std of q.k"), dict(scale=1.0 / d)),
        (
            N_("your weights sum to 1 over the queries (dim -2), not the keys: check the softmax dim"),
            dict(softmax_dim=-2),
        ),
    ]
    if mask is not None:
        singles += [
            (
                N_(
                    "the mask polarity is inverted: True means 'may attend', so fill the scores where the "
                    "mask is False with -inf"
                ),
                dict(mask=~mask),
            ),
            (N_("the mask is ignored: fill the scores where mask is False with -inf"), dict(mask=None)),
            (
                N_(
                    "masked scores are set to 0 instead of -inf: exp(0) = 1 still gives masked keys weight; "
                    "use float('-inf')"
                ),
                dict(masked_value=0.0),
            ),
        ]
        if not bool(mask.any(-1).all()):  # a fully masked row tells a finite fill from -inf
            singles.append((_FINITE_FILL, dict(masked_value=-1e9)))

    def kwargs(**kw):
        return {"mask": mask, **kw}

    return _judge.with_pairs(singles, lambda **kw: ref_weights(q, k, **kwargs(**kw)))


def _sdpa_judge(case, out):
    f = case.facts
    q, k, v, mask = f["q"], f["k"], f["v"], f["mask"]
    res = out["out"]
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        raise CheckFailure(
            msg(
                "scaled_dot_product_attention should return a pair (output, weights), got {got}",
                got=type(res).__name__,
            )
        )
    output, weights = res
    exp_out, exp_w = ref_sdpa(q, k, v, mask)
    expect_tensor(weights, N_("weights"), shape=exp_w.shape)
    expect_tensor(output, N_("output"), shape=exp_out.shape)
    if weights.dtype != q.dtype or output.dtype != q.dtype:
        raise CheckFailure(
            msg("output and weights should keep the input dtype.")
            + got_expected(f"{output.dtype}, {weights.dtype}", str(q.dtype))
        )
    if torch.isnan(weights).any() or torch.isnan(output).any():
        raise CheckFailure(
            msg(
                "your result contains NaN. A query row whose keys are all masked gives "
                "softmax(-inf, ..., -inf) = NaN."
            )
            + hint_line(
                N_(
                    "a fully masked row must give weights 0 and output 0: e.g. torch.nan_to_num the weights, "
                    "or zero the rows with mask.any(-1) == False"
                )
            )
        )
    hint = diagnose(weights, _sdpa_mistakes(q, k, mask))
    assert_close(weights, exp_w.to(weights.dtype), N_("weights"), hint)
    assert_close(
        output,
        exp_out.to(output.dtype),
        N_("output"),
        N_("weights are right but output is not: it should be weights @ v"),
    )
    for name in ("q", "k", "v", "mask"):
        if name in out and not _judge.close(out[name], f[name]):
            # the way an input is usually changed in place: scaled (q /= s), or a mask inverted
            fix = (
                msg("{a}, not {b}", a="~mask", b="mask.logical_not_()")
                if name == "mask"
                else msg("{a}, not {b} or {c}", a=f"{name} / s", b=f"{name}.div_(s)", c=f"{name} /= s")
            )
            raise CheckFailure(
                msg(
                    "scaled_dot_product_attention modified its input {name} in place: use out-of-place ops ({fix})",
                    name=name,
                    fix=fix,
                )
            )


# ---------------------------------------------------------------------------------------------
# causal_mask, padding_mask


def _causal_cases(hidden):
    ns = [1, 4, 7] if not hidden else [2, 13, 33]
    return [Case(f"seq_len={n}", [call("m", "causal_mask", n)], ["m"], facts=dict(n=n), size=n) for n in ns]


def _causal_judge(case, out):
    n = case.facts["n"]
    m = expect_tensor(out["m"], "causal_mask(seq_len)", shape=(n, n), dtype=torch.bool)
    exp = ref_causal_mask(n)
    hint = diagnose(
        m.float(),
        [
            (
                N_("True above the diagonal means 'may attend to the future': use torch.tril, not triu"),
                lambda: torch.triu(torch.ones(n, n)),
            ),
            (
                N_(
                    "True strictly above the diagonal is the inverse of the causal mask: token i may attend "
                    "to 0..i (torch.tril)"
                ),
                lambda: torch.triu(torch.ones(n, n), diagonal=1),
            ),
            (
                N_("the diagonal is missing: a token may attend to itself (tril with diagonal=0)"),
                lambda: torch.tril(torch.ones(n, n), diagonal=-1),
            ),
        ],
    )
    assert_close(m, exp, "causal_mask", hint)


def _padding_cases(hidden):
    specs = [([3, 1, 4], 5), ([2, 2], 2)] if not hidden else [([7, 1, 5, 9, 3], 9), ([4], 6)]
    cases = []
    for lengths, max_len in specs:
        lt = torch.tensor(lengths, dtype=torch.long)
        cases.append(
            Case(
                msg("lengths={lengths}, max_len={max_len}", lengths=str(lengths), max_len=str(max_len)),
                [let("lengths", lt), call("m", "padding_mask", ref("lengths"), max_len)],
                ["m", "lengths"],
                facts=dict(lengths=lt, max_len=max_len),
                size=len(lengths) * max_len,
            )
        )
    return cases


def _padding_judge(case, out):
    lengths, max_len = case.facts["lengths"], case.facts["max_len"]
    exp = torch.arange(max_len)[None, :] < lengths[:, None]
    m = expect_tensor(out["m"], "padding_mask(lengths, max_len)", shape=exp.shape, dtype=torch.bool)
    hint = diagnose(
        m.float(),
        [
            (
                N_("the polarity is inverted: True marks real tokens (position < length)"),
                lambda: (~exp).float(),
            ),
            (
                N_("off by one: position p is real when p < length (not <=)"),
                lambda: (torch.arange(max_len)[None, :] <= lengths[:, None]).float(),
            ),
        ],
    )
    assert_close(m, exp, "padding_mask", hint)


# ---------------------------------------------------------------------------------------------
# split_heads, merge_heads


def _split_cases(hidden):
    specs = [(2, 3, 8, 2), (3, 5, 12, 4)] if not hidden else [(4, 7, 30, 5), (1, 9, 16, 8), (2, 6, 21, 3)]
    cases = []
    for b, seq, d, h in specs:
        x = rand(b, seq, d, generator=gen(b * 100 + seq * 10 + d), mean=1.0, std=2.0)
        cases.append(
            Case(
                msg("x {shape}, n_heads={n_heads}", shape=str(tuple(x.shape)), n_heads=str(h)),
                [let("x", x), call("s", "split_heads", ref("x"), h), call("m", "merge_heads", ref("s"))],
                ["s", "x"],
                facts=dict(x=x, h=h),
                size=x.numel(),
            )
        )
    return cases


def _split_judge(case, out):
    x, h = case.facts["x"], case.facts["h"]
    exp = ref_split_heads(x, h)
    s = expect_tensor(out["s"], "split_heads(x, n_heads)", shape=exp.shape)
    b, seq, d = x.shape
    hint = diagnose(
        s,
        [
            (
                N_(
                    "you reshaped (B, L, d) straight to (B, H, L, d_head): that mixes tokens "
                    "into heads. View as (B, L, H, d_head), then transpose(1, 2)"
                ),
                lambda: x.reshape(b, h, seq, d // h),
            ),
            (
                N_(
                    "head h should hold features h*d_head:(h+1)*d_head; yours interleaves them "
                    "(view as (B, L, H, d_head), not (B, L, d_head, H))"
                ),
                lambda: x.view(b, seq, d // h, h).permute(0, 3, 1, 2),
            ),
        ],
    )
    assert_close(s, exp, "split_heads", hint)
    if not _judge.close(out["x"], x):
        raise CheckFailure(msg("split_heads modified its input in place"))


def _merge_cases(hidden):
    specs = [(2, 2, 3, 4), (3, 4, 5, 3)] if not hidden else [(4, 5, 7, 6), (2, 3, 9, 7)]
    cases = []
    for b, h, seq, dh in specs:
        x = rand(b, h, seq, dh, generator=gen(b * 1000 + h * 100 + seq), mean=-1.0, std=0.5)
        cases.append(
            Case(
                f"x {tuple(x.shape)}",
                [let("x", x), call("m", "merge_heads", ref("x"))],
                ["m"],
                facts=dict(x=x),
                size=x.numel(),
            )
        )
    return cases


def _merge_judge(case, out):
    x = case.facts["x"]
    b, h, seq, dh = x.shape
    exp = ref_merge_heads(x)
    m = expect_tensor(out["m"], "merge_heads(x)", shape=exp.shape)
    hint = diagnose(
        m,
        [
            (
                N_(
                    "you reshaped (B, H, L, d_head) straight to (B, L, d_model): transpose(1, 2) "
                    "first, so merge_heads undoes split_heads"
                ),
                lambda: x.reshape(b, seq, h * dh),
            )
        ],
    )
    assert_close(m, exp, "merge_heads", hint)


# ---------------------------------------------------------------------------------------------
# MultiHeadAttention


def _mha_state(d, bias, g):
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = rand(d, d, generator=g, std=1 / math.sqrt(d) * 1.5)
        if bias:
            state[f"{name}.bias"] = rand(d, generator=g, mean=0.2, std=0.5)
    return state


def ref_mha(state, h, query, key, value, mask=None, scale_dim=None, head_aligned=False):
    """nn.MultiheadAttention(batch_first) with the same weights, in float64. Mistake models:
    `scale_dim` (scores scaled by 1/sqrt(scale_dim)), `head_aligned` (a (B, Lq, Lk) mask given no
    head dim, so it broadcasts against (B, H, Lq, Lk) as (1, B, Lq, Lk): one mask per head)."""
    d = query.shape[-1]
    bias = "w_q.bias" in state
    mha = torch.nn.MultiheadAttention(d, h, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([state[f"w_{n}.weight"] for n in "qkv"]))
        mha.out_proj.weight.copy_(state["w_o.weight"])
        if bias:
            mha.in_proj_bias.copy_(torch.cat([state[f"w_{n}.bias"] for n in "qkv"]))
            mha.out_proj.bias.copy_(state["w_o.bias"])
    if scale_dim is not None or head_aligned:
        return _manual_mha(state, h, query, key, value, mask, scale_dim or d // h, head_aligned)
    attn_mask = None
    if mask is not None:
        attn_mask = ~mask  # torch: True = masked out
        if attn_mask.dim() == 3:
            attn_mask = attn_mask.repeat_interleave(h, dim=0)  # (B*H, Lq, Lk)
    with torch.no_grad():
        y, _ = mha(query.double(), key.double(), value.double(), attn_mask=attn_mask, need_weights=False)
    return y


def _manual_mha(state, h, query, key, value, mask, scale_dim, head_aligned=False):
    def lin(x, n):
        return x.double() @ state[f"{n}.weight"].double().T + (
            state[f"{n}.bias"].double() if f"{n}.bias" in state else 0
        )

    q, k, v = (ref_split_heads(lin(t, n), h) for t, n in ((query, "w_q"), (key, "w_k"), (value, "w_v")))
    m = None if mask is None else (mask if mask.dim() == 2 or head_aligned else mask[:, None])
    o, _ = ref_sdpa(q, k, v, m, scale=1 / math.sqrt(scale_dim))
    return lin(ref_merge_heads(o), "w_o")


def _mha_cases(hidden):
    # (B, Lq, Lk, d_model, n_heads, bias, mask kind, dtype)
    specs = [
        (2, 5, 5, 12, 3, True, None, torch.float32),
        (3, 4, 6, 16, 4, False, "2d", torch.float64),
        (2, 6, 6, 8, 2, True, "causal", torch.float32),
        (2, 3, 5, 8, 2, True, "3d", torch.float64),  # one mask per sequence, as the hidden cases send
    ]
    if hidden:
        specs = [
            (4, 7, 9, 24, 4, True, "3d", torch.float64),
            (3, 8, 8, 30, 5, True, "causal", torch.float32),
            (2, 3, 10, 32, 8, False, None, torch.float64),
        ]
    cases = []
    for i, (b, lq, lk, d, h, bias, mk, dt) in enumerate(specs):
        g = gen(7000 + 97 * i + 13 * d + (500 if hidden else 0))
        state = {k: v.to(dt) for k, v in _mha_state(d, bias, g).items()}
        query = rand(b, lq, d, dtype=dt, mean=0.5, std=2.0, generator=g)
        key = (
            query
            if lq == lk and mk == "causal"
            else rand(b, lk, d, dtype=dt, mean=-0.5, std=1.5, generator=g)
        )
        value = key if key is query else rand(b, lk, d, dtype=dt, mean=1.0, std=1.0, generator=g)
        mask = None
        if mk == "causal":
            mask = ref_causal_mask(lq)
        elif mk == "2d":
            mask = torch.rand(lq, lk, generator=g) > 0.3
            mask[:, 0] = True
        elif mk == "3d":
            mask = torch.rand(b, lq, lk, generator=g) > 0.3
            mask[..., 0] = True
        steps = [
            new("mha", "MultiHeadAttention", d, h, bias=bias, state=state, dtype=dt),
            let("query", query),
            let("key", key),
            let("value", value),
        ]
        args = [ref("query"), ref("key"), ref("value")]
        outputs = ["y"]
        if i == 0:  # the signature's default: MultiHeadAttention(d_model, n_heads) has biases
            steps.append(new("fresh", "MultiHeadAttention", d, h))
            outputs += ["fresh.w_q.bias", "fresh.w_o.bias"]
        if mask is not None:
            steps += [
                let("mask", mask),
                call("y", ref("mha"), *args, mask=ref("mask")),
                call("y_nomask", ref("mha"), *args),  # a probe: does the mask change anything?
            ]
            outputs.append("y_nomask")
        else:
            steps.append(call("y", ref("mha"), *args))
        label = msg(
            "{module}, query {query}, key {key}, {dtype}, mask={mask}",
            module=f"MultiHeadAttention(d_model={d}, n_heads={h}, bias={bias})",
            query=str(tuple(query.shape)),
            key=str(tuple(key.shape)),
            dtype=str(dt),
            mask=N_("causal") if mk == "causal" else str(mk),
        )
        cases.append(
            Case(
                label,
                steps,
                outputs,
                facts=dict(state=state, h=h, query=query, key=key, value=value, mask=mask),
                size=b * lq * lk * d,
            )
        )
    return cases


MHA_OUTPUT = msg("{name} output", name="MultiHeadAttention")


def _mha_judge(case, out):
    f = case.facts
    d = f["query"].shape[-1]
    for name in ("fresh.w_q.bias", "fresh.w_o.bias"):
        if name in out and not (isinstance(out[name], torch.Tensor) and tuple(out[name].shape) == (d,)):
            raise CheckFailure(
                msg("MultiHeadAttention(d_model, n_heads), called without bias, has no biases.")
                + got_expected(
                    f"{name[len('fresh.') :]} = {out[name]!r:.40}", msg("a bias of shape ({d},)", d=str(d))
                )
                + hint_line(
                    N_(
                        "the signature's default is bias=True: __init__(self, d_model, n_heads, bias=True), "
                        "and each nn.Linear gets bias=bias"
                    )
                )
            )
    exp = ref_mha(f["state"], f["h"], f["query"], f["key"], f["value"], f["mask"])
    y = expect_tensor(out["y"], MHA_OUTPUT, shape=exp.shape)
    hint = diagnose(
        y,
        [
            (
                N_(
                    "the scores are scaled by sqrt(d_model); each head has d_head = d_model / n_heads "
                    "dims, so scale by sqrt(d_head)"
                ),
                lambda: ref_mha(f["state"], f["h"], f["query"], f["key"], f["value"], f["mask"], scale_dim=d),
            ),
            (
                N_(
                    "a (B, Lq, Lk) mask was given no head dim, so it lines up with the heads instead of the "
                    "sequences (sequence b's mask went to head b): mask[:, None] makes it (B, 1, Lq, Lk), one "
                    "mask per sequence shared by its heads"
                ),
                lambda: ref_mha(
                    f["state"], f["h"], f["query"], f["key"], f["value"], f["mask"], head_aligned=True
                ),
            ),
        ],
    )
    if not hint and f["mask"] is not None and not _judge.close(y.double(), exp, rtol=1e-4, atol=1e-4):
        y0 = out.get("y_nomask")
        exp0 = ref_mha(f["state"], f["h"], f["query"], f["key"], f["value"], None)
        if isinstance(y0, torch.Tensor) and y0.shape == y.shape and torch.equal(y0, y):
            if not _judge.close(exp0, exp, rtol=1e-4, atol=1e-4):
                hint = N_(
                    "your MultiHeadAttention ignores its mask argument: its output is the same with the mask "
                    "and without it. Pass mask on to scaled_dot_product_attention (unsqueeze a (B, Lq, Lk) mask "
                    "to (B, 1, Lq, Lk) so it is shared by all heads)"
                )
    assert_close(
        y.double(),
        exp,
        MHA_OUTPUT,
        hint
        or N_(
            "compare step by step: project with w_q/w_k/w_v, split_heads, attention per head, "
            "merge_heads, then w_o"
        ),
        rtol=1e-4 if y.dtype == torch.float32 else 1e-7,
        atol=1e-4 if y.dtype == torch.float32 else 1e-9,
    )


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("scaled_dot_product_attention", _sdpa_cases, _sdpa_judge),
    Question("causal_mask", _causal_cases, _causal_judge),
    Question("padding_mask", _padding_cases, _padding_judge),
    Question("split_heads", _split_cases, _split_judge),
    Question("merge_heads", _merge_cases, _merge_judge),
    Question(
        "MultiHeadAttention",
        _mha_cases,
        _mha_judge,
        needs=("scaled_dot_product_attention", "split_heads", "merge_heads"),
    ),
)

check = _core.lesson_check(QUESTIONS, "causal_mask")
