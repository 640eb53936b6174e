"""The check of `GPT` (lesson 07_decoder): its cases, its catalogued mistakes and its judge (the
reference, `ref_gpt`, is in `_shared.py`: generate's check runs it too)."""

from __future__ import annotations

import torch

from .. import _judge
from .._core import Case, call, gen, got_expected, hint_line, let, new, rand, ref
from .._judge import CheckFailure, expect_tensor
from ..i18n import N_, msg
from ._shared import CACHED, F64, ReferenceGPT, _check_cache, _compare_y, _pair, _tol, gpt_state, ref_gpt

REFERENCE = ReferenceGPT  # what replaces an answer that fails (byhand._depends)
EARLIER = ("CausalSelfAttention",)  # its blocks' attention: the reference when the student's fails


def _gpt_specs(hidden):
    # (B, T, vocab, d_model, n_heads, n_layers, max_len, dtype, T_past, T_new)
    if not hidden:
        return [
            (2, 6, 11, 12, 3, 2, 9, torch.float32, 0, 0),
            (3, 5, 7, 8, 2, 1, 7, torch.float64, 0, 0),
            (2, 8, 11, 12, 3, 2, 10, torch.float64, 7, 1),
        ]
    return [
        (4, 9, 13, 16, 4, 2, 12, torch.float64, 0, 0),
        (2, 10, 10, 20, 5, 3, 16, torch.float32, 6, 4),
        (3, 12, 9, 16, 2, 2, 12, torch.float32, 11, 1),
    ]


def _gpt_cases(hidden):
    cases = []
    for i, (b, t, v, d, h, n, max_len, dt, t_past, t_new) in enumerate(_gpt_specs(hidden)):
        g = gen(7300 + 41 * i + 5 * d + (900 if hidden else 0))
        s = gpt_state(v, d, n, max_len, g, dt)
        idx = torch.randint(0, v, (b, t), generator=g)
        model = f"GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len})"
        steps = [new("model", "GPT", v, d, h, n, max_len, state=s, dtype=dt)]
        if t_past == 0:
            steps += [let("idx", idx), call("full", ref("model"), ref("idx"))]
            cases.append(
                Case(
                    msg(
                        "{model} ({dtype}), idx {shape}, no cache",
                        model=model,
                        dtype=dt,
                        shape=tuple(idx.shape),
                    ),
                    steps,
                    ["full", "idx"],
                    facts=dict(s=s, idx=idx, h=h, dt=dt),
                    size=b * t * d * n,
                )
            )
        else:
            _, cache = ref_gpt(s, idx[:, :t_past], h)
            cache = [(k.to(dt), vv.to(dt)) for k, vv in cache]
            idx_new = idx[:, t_past : t_past + t_new]
            steps += [let("idx_new", idx_new), let("cache", cache)]
            steps.append(call("inc", ref("model"), ref("idx_new"), kv_cache=ref("cache")))
            cases.append(
                Case(
                    msg(
                        "{model} ({dtype}), idx {shape} (positions {first}..{last}) with kv_cache = one (k, v) "
                        "per block for the first T_past={t_past} positions",
                        model=model,
                        dtype=dt,
                        shape=tuple(idx_new.shape),
                        first=t_past,
                        last=t_past + t_new - 1,
                        t_past=t_past,
                    ),
                    steps,
                    ["inc", "cache"],  # the given cache too: the caller's, left as it was
                    facts=dict(s=s, idx_new=idx_new, cache=cache, h=h, dt=dt),
                    size=CACHED + b * t * d * n,
                )
            )
    # the tied weights: load two different matrices; a tied model keeps one of them in both places.
    # Once as built, once after model.to(torch.float64): two Parameters that share one tensor (a tie
    # made through .data) look tied until a conversion gives each its own copy
    g = gen(7390 + (900 if hidden else 0))
    v, d, h, n, max_len = (9, 8, 2, 1, 6) if not hidden else (12, 16, 4, 2, 10)
    s = gpt_state(v, d, n, max_len, g, torch.float32)
    s["head.weight"] = rand(v, d, generator=g, mean=-0.2, std=0.7).float()
    s64 = {k: t.to(F64) for k, t in s.items()}
    cases.append(
        Case(
            msg(
                "{model} loaded with different matrices for {a} and {b}, as built and after {to}",
                model=f"GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len})",
                a="tok_emb.weight",
                b="head.weight",
                to="model.to(torch.float64)",
            ),
            [
                new("model", "GPT", v, d, h, n, max_len, state=s, shared_ok=True),
                new("model64", "GPT", v, d, h, n, max_len, state=s64, dtype=F64, shared_ok=True),
            ],
            ["model.tok_emb.weight", "model.head.weight", "model64.tok_emb.weight", "model64.head.weight"],
            facts=dict(tie=True, s=s),
            size=1,
        )
    )
    return cases


def _gpt_mistakes(s, idx, h, cache=None):
    m = [
        (
            N_(
                "the final LayerNorm ln_f is missing: a Pre-LN stack normalizes its residual stream once, "
                "after the last block, before the output layer"
            ),
            lambda: ref_gpt(s, idx, h, cache, final_norm=False)[0],
        ),
        (
            N_("the position embeddings are missing: x = tok_emb(idx) + pos_emb(positions)"),
            lambda: ref_gpt(s, idx, h, cache, pos=False)[0],
        ),
        (
            N_("your blocks are Post-LN: the GPT block is Pre-LN, x = x + attn(ln1(x)); x = x + mlp(ln2(x))"),
            lambda: ref_gpt(s, idx, h, cache, pre_ln=False)[0],
        ),
        (
            N_("the MLP uses ReLU: GPT's uses GELU, mlp = Linear(d, 4d) -> GELU -> Linear(4d, d)"),
            lambda: ref_gpt(s, idx, h, cache, act="relu")[0],
        ),
    ]
    if cache is not None:
        m.insert(
            0,
            (
                N_(
                    "with a cache, your positions restart at 0: the new tokens are at positions T_past.."
                    "T_past + T - 1 (T_past = kv_cache[0][0].shape[2]), both for pos_emb and for the causal mask"
                ),
                lambda: ref_gpt(s, idx, h, cache, offset=False)[0],
            ),
        )
        m.insert(
            1,
            (
                N_(
                    "with a cache, the position embeddings restart at 0: the new tokens are at positions T_past.."
                    "T_past + T - 1, with T_past = kv_cache[0][0].shape[2]"
                ),
                lambda: _pos_restart_only(s, idx, h, cache),
            ),
        )
        # a T_past read from another dim of the cache: n_heads, d_head or B; named only where that
        # dim's size is no other's, so the dim it names is the one the answer read
        shape, t_past = cache[0][0].shape, cache[0][0].shape[2]
        sizes = [shape[dim] for dim in range(4)]
        m[2:2] = [
            (
                msg(
                    "your T_past is read from dim {dim} of the cache (kv_cache[0][0].shape[{dim}] = "
                    "{got}): the cache is (B, n_heads, T, d_head), its time axis is dim 2, T_past = "
                    "kv_cache[0][0].shape[2] = {t_past}",
                    dim=dim,
                    got=shape[dim],
                    t_past=t_past,
                ),
                lambda start=shape[dim]: _pos_restart_only(s, idx, h, cache, start),
            )
            for dim in (1, 3, 0)
            if sizes.count(shape[dim]) == 1 and shape[dim] + idx.shape[1] <= s["pos_emb.weight"].shape[0]
        ]
    return m


def _pos_restart_only(s, idx, h, cache, start=0):
    """Positions of pos_emb from `start` (restarted at 0, or a T_past read from another dim of the
    cache), while the attention itself handles the cache right."""
    t_past, t = cache[0][0].shape[2], idx.shape[1]
    shifted = dict(s)
    pe = s["pos_emb.weight"].clone()
    pe[t_past : t_past + t] = s["pos_emb.weight"][start : start + t]
    shifted["pos_emb.weight"] = pe
    return ref_gpt(shifted, idx, h, cache)[0]


def _reference_gpt(logits, dt, s, idx, h, cache=None):
    """The reference GPT's (logits, cache): with the exact GELU (nn.GELU()), or with GPT-2's tanh
    approximation (nn.GELU(approximate="tanh")) when the answer's logits match that one."""
    exact = ref_gpt(s, idx, h, cache)
    if isinstance(logits, torch.Tensor) and logits.shape == exact[0].shape and logits.is_floating_point():
        tanh = ref_gpt(s, idx, h, cache, act="gelu_tanh")
        if not _judge.close(logits.to(F64), exact[0], *_tol(dt)) and _judge.close(
            logits.to(F64), tanh[0], *_tol(dt)
        ):
            return tanh
    return exact


# no "first make CausalSelfAttention pass": while these cases run, a CausalSelfAttention that fails
# its own check is the reference one (EARLIER), so what differs is the GPT's own
GPT_GENERIC = N_(
    "compare step by step: x = tok_emb(idx) + pos_emb(positions), each block x = x + attn(ln1(x)); "
    "x = x + mlp(ln2(x)), then ln_f, then head"
)
GPT_GENERIC_CACHE = N_(
    "compare step by step: x = tok_emb(idx) + pos_emb(positions), each block x = x + attn(ln1(x)); "
    "x = x + mlp(ln2(x)), then ln_f, then head; with a cache, give block i its kv_cache[i], and start the "
    "positions at T_past = kv_cache[0][0].shape[2]"
)


def _tied(out, model, s):
    """Did `model` (as built, or converted to float64) keep one matrix in both places after loading
    two different ones into tok_emb.weight and head.weight?"""
    e, w = out[f"{model}.tok_emb.weight"], out[f"{model}.head.weight"]
    expect_tensor(e, "model.tok_emb.weight", shape=s["tok_emb.weight"].shape)
    expect_tensor(w, "model.head.weight", shape=s["head.weight"].shape)
    return torch.equal(e, w)


def _tie_judge(f, out):
    if not _tied(out, "model", f["s"]):
        raise CheckFailure(
            msg(
                "the output weight is not tied to the token embedding: after loading two different "
                "matrices, your model.head.weight and model.tok_emb.weight differ, so they are two "
                "separate matrices."
            )
            + hint_line(N_("make them one parameter: self.head.weight = self.tok_emb.weight"))
        )
    if not _tied(out, "model64", f["s"]):
        raise CheckFailure(
            msg(
                "the output weight is not the token embedding's own parameter: your model.head.weight "
                "and model.tok_emb.weight are one matrix as built, two after {to}.",
                to="model.to(torch.float64)",
            )
            + got_expected(
                N_("two parameters: loading two different matrices after the conversion keeps both"),
                N_("one parameter: the matrix loaded last, in both places"),
            )
            + hint_line(
                N_(
                    "you tied the tensors (.data), not the parameters: two nn.Parameter objects that "
                    "share one tensor are counted twice by model.parameters(), and .to(torch.float64) or "
                    ".cuda() gives each its own copy. Share the nn.Parameter itself: self.head.weight = "
                    "self.tok_emb.weight"
                )
            )
        )


def _gpt_judge(case, out):
    f = case.facts
    if f.get("tie"):
        _tie_judge(f, out)
        return
    s, h, dt = f["s"], f["h"], f["dt"]
    if "idx" in f:
        idx = f["idx"]
        logits, cache = _pair(out["full"], "GPT(idx)")
        exp, exp_cache = _reference_gpt(logits, dt, s, idx, h)
        _compare_y(
            logits, exp, dt, msg("{module} logits", module="GPT"), _gpt_mistakes(s, idx, h), GPT_GENERIC
        )
        if not isinstance(cache, (list, tuple)) or len(cache) != len(exp_cache):
            raise CheckFailure(
                msg("GPT's new_cache should be a list with one (k, v) per block.")
                + got_expected(f"{cache!r:.80}", msg("a list of {n} pairs", n=len(exp_cache)))
            )
        for i, (c, (ek, ev)) in enumerate(zip(cache, exp_cache)):
            _check_cache(c, ek, ev, dt, msg("new_cache[{i}] (block {i})", i=i))
        if not torch.equal(out["idx"], idx):
            raise CheckFailure(msg("{who} modified its input {name} in place", who="GPT", name="idx"))
    else:
        idx_new, past = f["idx_new"], f["cache"]
        logits, cache = _pair(out["inc"], "GPT(idx, kv_cache)")
        exp, exp_cache = _reference_gpt(logits, dt, s, idx_new, h, past)
        _compare_y(
            logits,
            exp,
            dt,
            msg("{module} logits with a cache", module="GPT"),
            _gpt_mistakes(s, idx_new, h, past),
            GPT_GENERIC_CACHE,
        )
        if not isinstance(cache, (list, tuple)) or len(cache) != len(exp_cache):
            raise CheckFailure(msg("GPT's new_cache should be a list with one (k, v) per block"))
        for i, (c, (ek, ev)) in enumerate(zip(cache, exp_cache)):
            _check_cache(c, ek, ev, dt, msg("new_cache[{i}] (block {i})", i=i))
        _cache_unchanged(out.get("cache"), past)


def _cache_unchanged(got, given):
    """The caller's kv_cache list after the call: the same pairs, none replaced, none added."""

    def same(c, pair):
        return (
            isinstance(c, (list, tuple))
            and len(c) == 2
            and all(isinstance(t, torch.Tensor) and _judge.close(t, e) for t, e in zip(c, pair))
        )

    if isinstance(got, (list, tuple)) and len(got) == len(given) and all(map(same, got, given)):
        return
    if not isinstance(got, (list, tuple)) or len(got) != len(given):
        now = msg(
            "kv_cache is {what} after the call",
            what=f"{got!r:.80}"
            if not isinstance(got, (list, tuple))
            else msg("a list of {n} entries", n=len(got)),
        )
    else:
        i = next(i for i, (c, pair) in enumerate(zip(got, given)) if not same(c, pair))
        c = got[i]
        shapes = (
            "("
            + ", ".join(str(tuple(t.shape)) if isinstance(t, torch.Tensor) else f"{t!r:.40}" for t in c)
            + ")"
            if isinstance(c, (list, tuple))
            else f"{c!r:.80}"
        )
        now = msg("kv_cache[{i}] replaced by the call: now {shapes}", i=i, shapes=shapes)
    k = given[0][0]
    raise CheckFailure(
        msg("GPT modified the kv_cache list it was given.")
        + got_expected(
            now,
            msg(
                "the caller's list as it was: {n} pairs (k, v) of shape {shape}",
                n=len(given),
                shape=tuple(k.shape),
            ),
        )
        + hint_line(
            N_(
                "leave kv_cache as it is and return a new list: new_cache = [], then new_cache.append(c) for "
                "each block; kv_cache[i] = c changes the caller's cache under it"
            )
        )
    )
