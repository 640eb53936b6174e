"""What lesson 10's exercises share: the observer (`observe`, run where the answer runs: the largest
new storage and the matmul FLOPs of a graded call), lesson 01's attention as the float64 reference,
the memory and FLOP budgets and their judges, the tolerances, the inputs and the case labels."""

from __future__ import annotations

import math

import torch

from .. import _judge
from .._core import calling, gen, got_expected, graded, helper, hint_line, rand
from .._judge import CheckFailure
from ..i18n import N_, msg

# ---------------------------------------------------------------------------------------------
# The observer: runs where the student's code lives, returns plain numbers only


def _matmul_flops(name, args, out) -> int:
    """FLOPs of one aten matmul, counted as torch.utils.flop_counter does (2 per multiply-add); 0 for
    other ops."""
    try:
        if name in ("mm", "bmm"):
            return 2 * out.numel() * args[0].shape[-1]
        if name in ("addmm", "baddbmm"):
            return 2 * out.numel() * args[1].shape[-1]
        if name in ("dot", "vdot", "mv"):
            return 2 * args[0].numel()
        if name.startswith("scaled_dot_product"):  # a fused attention kernel called on a block
            q, k, v = args[:3]
            rows = q.numel() // q.shape[-1]
            return 2 * rows * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    except (AttributeError, IndexError, TypeError):
        return 0
    return 0


def _observer_class():
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class AllocationObserver(TorchDispatchMode):
        """Records, for every aten op, the storages its outputs live on (the largest one is kept) and
        the FLOPs of its matmuls."""

        def __init__(self):
            super().__init__()
            self.largest = [0, [], "", ""]  # elements, shape, op, dtype
            self.ops = 0
            self.flops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = str(getattr(func, "overloadpacket", func).__name__).lstrip("_")
            self.ops += 1
            leaves = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            if leaves:
                self.flops += _matmul_flops(name, args, leaves[0])
            for t in leaves:
                try:
                    n = t.untyped_storage().nbytes() // max(1, t.element_size())
                except Exception:  # noqa: BLE001 - a tensor without a storage holds no memory here
                    continue
                if n > self.largest[0]:
                    self.largest = [int(n), [int(s) for s in t.shape], name[:40], str(t.dtype)[6:]]
            return out

    return AllocationObserver


def observe(fn, *args, **kwargs):
    """Call a graded function under the observer. Returns (its result, [largest elements, shape, op,
    dtype], matmul FLOPs, ops seen): plain numbers the judge checks against its own budgets."""
    observer = _observer_class()()
    with observer:
        result = fn(*args, **kwargs)
    return result, observer.largest, int(observer.flops), observer.ops


# ---------------------------------------------------------------------------------------------
# References (float64, in the judge's process)


def causal_mask(lq, lk):
    return torch.ones(lq, lk, dtype=torch.bool).tril()


def ref_forward(q, k, v, is_causal=False):
    """(o, lse) of lesson 01's attention with scale 1/sqrt(d), float64."""
    q, k, v = q.double(), k.double(), v.double()
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Lq, Lk)
    if is_causal:
        s = s.masked_fill(~causal_mask(s.shape[-2], s.shape[-1]), -math.inf)
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ v, lse


# ---------------------------------------------------------------------------------------------
# Budgets: what an answer may allocate and compute


def budget(facts) -> int:
    """Elements one new tensor may hold: a block of scores, or an L x d tensor (plus one block of
    padding), per batch-and-head."""
    per_head = max(
        facts["bq"] * facts["bk"],
        (facts["lq"] + facts["bq"]) * facts["dmax"],
        (facts["lk"] + facts["bk"]) * facts["dmax"],
    )
    return facts["heads"] * per_head


def _what_it_is(shape, dtype, facts) -> str:
    """The hint naming the largest tensor an answer created (its shape is on the got line)."""
    lq, lk = facts["lq"], facts["lk"]
    last = tuple(shape[-2:]) if len(shape) >= 2 else ()
    if last == (lq, lk) and dtype == "bool":
        return msg(
            "your answer builds the whole (Lq, Lk) causal mask: build each diagonal block's mask from the "
            "positions (key index > query index) inside the loop"
        )
    if last in ((lq, lk), (lk, lq)):
        return msg(
            "your answer builds the whole score (or probability) matrix, (Lq, Lk) per batch-and-head: compute "
            "q_i k_j^T one (block_q, block_k) block at a time, never q @ k^T for all queries and keys"
        )
    if lk in last or lq in last:
        return msg(
            "your answer builds a row of blocks that grows with L (block x L scores per head): loop over the key "
            "blocks too, keeping only the running max, normaliser and output per query"
        )
    return msg(
        "your answer builds a tensor larger than a (block_q, block_k) block of scores or an (L, d) tensor "
        "per batch-and-head"
    )


def judge_memory(facts, seen, who):
    """Fail an answer whose largest new tensor exceeds the budget; name the tensor."""
    largest, flops, ops = seen
    if not isinstance(largest, (list, tuple)) or len(largest) != 4:
        raise CheckFailure(
            msg("the grader could not observe {who} (no allocation report came back)", who=who)
        )
    n, shape, op, dtype = largest
    limit = budget(facts)
    if int(n) > limit:
        raise CheckFailure(
            msg(
                "{who} holds a tensor that grows with L: the memory of attention without the L x L matrix "
                "is what this exercise is about.",
                who=who,
            )
            + got_expected(
                msg(
                    "a new tensor of {n} elements, shape {shape}, {dtype}, made by {op}",
                    n=int(n),
                    shape=tuple(shape),
                    dtype=dtype,
                    op=f"aten.{op}",
                ),
                msg(
                    "at most {n} elements per tensor (one (block_q, block_k) block of scores or an "
                    "(L, d) tensor, per batch-and-head)",
                    n=limit,
                ),
            )
            + hint_line(_what_it_is(shape, dtype, facts))
        )


def judge_flops_seen(facts, flops, need, who):
    """The observer must see the matmuls the output needs, or it did not see the computation."""
    if not isinstance(flops, int) or flops < 0.5 * need:
        raise CheckFailure(
            msg("{who}: the grader did not see the matrix multiplications that compute attention.", who=who)
            + got_expected(
                msg("{n} matmul FLOPs through torch", n=flops),
                msg("at least {n} (half of the {need} the output needs)", n=int(0.5 * need), need=need),
            )
            + hint_line(
                msg(
                    "compute the blocks with torch matmuls (q_blk @ k_blk.transpose(-2, -1), p @ v_blk) on the "
                    "tensors passed in, not with numpy, Python loops over numbers, or elementwise products summed"
                )
            )
        )


# ---------------------------------------------------------------------------------------------
# Cases

_TOLS = {torch.float32: (2e-4, 2e-5), torch.float64: (1e-7, 1e-9)}


def _tols(expected, dtype):
    rtol, atol = _TOLS[dtype]
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    return rtol, atol * scale


def _inputs(lead, lq, lk, d, dv, dtype, g, large=False):
    """q, k, v; `large`: scores of about +-1000 in float64 (+-150 in float32), where exp overflows
    without the running max: the keys all point one way, the first half of the queries with them
    (large positive scores), the second half against them (every score large and negative)."""
    if not large:
        q = rand(*lead, lq, d, dtype=dtype, mean=0.4, std=1.5, generator=g)
        k = rand(*lead, lk, d, dtype=dtype, mean=-0.3, std=1.5, generator=g)
    else:
        target = 1000.0 if dtype == torch.float64 else 150.0  # exp overflows past 709 (float64), 88 (float32)
        size = math.sqrt(target / math.sqrt(d))  # q.k / sqrt(d) is about size^2 sqrt(d)
        sign = torch.ones(lq, 1, dtype=torch.float64)
        sign[lq // 2 :] = -1.0
        q = (rand(*lead, lq, d, dtype=torch.float64, mean=size, std=0.5, generator=g) * sign).to(dtype)
        k = rand(*lead, lk, d, dtype=dtype, mean=size, std=0.5, generator=g)
    v = rand(*lead, lk, dv, dtype=dtype, mean=1.0, std=2.0, generator=g)
    return q, k, v


def _facts(q, k, v, is_causal, bq, bk, **more):
    sizes = dict(
        lq=q.shape[-2], lk=k.shape[-2], dmax=max(q.shape[-1], v.shape[-1]), heads=math.prod(q.shape[:-2])
    )
    return dict(q=q, k=k, v=v, is_causal=is_causal, bq=bq, bk=bk, **sizes, **more)


def _label(q, k, v, is_causal, bq, bk, dtype, kind=""):
    blocks = (
        N_("default blocks (64, 64)")
        if bq is None
        else msg("block_q={block_q}, block_k={block_k}", block_q=bq, block_k=bk)
    )
    causal = N_("is_causal not given (default)") if kind == "default" else f"is_causal={is_causal}"
    label = msg(
        "q {q}, k {k}, v {v}, {causal}, {blocks}, {dtype}",
        q=tuple(q.shape),
        k=tuple(k.shape),
        v=tuple(v.shape),
        causal=causal,
        blocks=blocks,
        dtype=str(dtype)[6:],
    )
    if kind != "large":
        return label
    return msg(
        "{label}, large scores (|s| up to about {n})", label=label, n=1000 if dtype == torch.float64 else 150
    )


def _observed(name: str, inputs: dict, **kwargs) -> list:
    """Steps that bind `inputs` and call the graded `name` on them, in that order, under the
    observer (what it allocates, the FLOPs it spends): the result comes back as "r"."""
    return calling("r", helper("flash_attention.observe"), inputs, graded(name), **kwargs)


def _drawn(specs: list, seed: int, step: int, hidden: bool):
    """Each spec (leading dims, Lq, Lk, d, d_v, is_causal, block_q, block_k, dtype, kind) with its
    generator and the q, k, v drawn from it."""
    for i, spec in enumerate(specs):
        g = gen(seed + step * i + (500 if hidden else 0))
        lead, lq, lk, d, dv, _, _, _, dt, kind = spec
        yield spec, g, _inputs(lead, lq, lk, d, dv, dt, g, large=kind == "large")


def _options(causal, bq, bk, kind) -> dict:
    """The keyword arguments of a case: none for "default" (is_causal and the blocks as the
    signature states them)."""
    if kind == "default":
        return {}
    return {"is_causal": causal} | ({} if bq is None else {"block_q": bq, "block_k": bk})


def _pair(r, who, names):
    if not isinstance(r, (tuple, list)) or len(r) != 4:
        raise CheckFailure(msg("the grader could not run {who} (no results came back)", who=who))
    result, largest, flops, ops = r
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        got = type(result).__name__
        if isinstance(result, (tuple, list)):
            got = msg("{type} of {n}", type=got, n=len(result))
        raise CheckFailure(
            msg("{who} should return {n} tensors ({names}).", who=who, n=len(names), names=", ".join(names))
            + got_expected(got, msg("a tuple ({names})", names=", ".join(names)))
        )
    return result, (largest, flops, ops)


def _unchanged(out, facts, names, who):
    _judge.inputs_unchanged(out, facts, names, who)


def _default_causal_hint(o, facts, rtol, atol, who="flash_attention_forward") -> str:
    """With is_causal not given, an output equal to the causal one: the default is True."""
    if facts.get("kind") != "default" or facts["lq"] != facts["lk"]:
        return ""
    causal, _ = ref_forward(facts["q"], facts["k"], facts["v"], True)
    if not _judge.close(o, causal.to(o.dtype), rtol, atol):
        return ""
    return msg("is_causal should default to False: {signature}", signature=SIGNATURES[who])


SIGNATURES = {
    "FlashAttention.forward": "def forward(ctx, q, k, v, is_causal=False)",
    "flash_attention_forward": "def flash_attention_forward(q, k, v, is_causal=False, block_q=64, block_k=64)",
    "flash_attention_backward": "def flash_attention_backward(q, k, v, o, lse, do, is_causal=False, block_q=64, "
    "block_k=64)",
}


def judge_default_blocks(facts, seen, who):
    """Called without block sizes, the answer must use 64 x 64 blocks: one block of scores per
    batch-and-head at least is what the observer sees (smaller blocks never make one that large)."""
    if facts.get("kind") != "default" or not isinstance(seen[0], (list, tuple)) or len(seen[0]) != 4:
        return
    n, shape = int(seen[0][0]), tuple(seen[0][1])
    block = facts["heads"] * min(64, facts["lq"]) * min(64, facts["lk"])
    if n < block:
        raise CheckFailure(
            msg("{who}, called without block_q and block_k, works in blocks smaller than 64 x 64.", who=who)
            + got_expected(
                msg("the largest tensor it made has {n} elements, shape {shape}", n=n, shape=shape),
                msg("a (64, 64) block of scores per batch-and-head, {n} elements", n=block),
            )
            + hint_line(
                msg(
                    "block_q and block_k should default to 64: {signature}",
                    signature=SIGNATURES.get(who, who),
                )
            )
        )


# ---------------------------------------------------------------------------------------------
# Causal skipping: FLOPs

SKIP_LIMIT = 0.75  # block skipping does (n + 1) / (2 n) of the dense FLOPs: 0.5625 at n = 8 blocks


def _flops_of_dense(flops, dense):
    """The matmul FLOPs an answer spent, with their share of the dense count (a got line)."""
    return msg("{n} matmul FLOPs ({ratio} of the dense count)", n=flops, ratio=f"{flops / dense:.2f}")
