"""Checks for lesson 10_flash_attention: attention that never holds the L x L matrix.

The numbers are judged as everywhere else: the grader's float64 references (lesson 01's attention,
`torch.logsumexp` of the scaled scores, autograd through that attention) on inputs it generated, and
on a mismatch the classic mistakes of the online softmax recomputed on the same inputs with the
same block sizes ("the running max is not used to rescale the accumulated output").

What the answer *does* is observed where the answer runs. The graded call goes through a helper,
`observe`, that runs it under a `TorchDispatchMode` (every aten op's output: the size of its
storage, its shape, dtype and the op that made it), which also counts the matmul FLOPs the way
`torch.utils.flop_counter.FlopCounterMode` does (2 per multiply-add: one observer, one pass;
tests/test_flash_observer.py checks that the two counts agree). Only plain numbers come back: the output tensors, the largest new storage (elements, shape, dtype, op), the matmul
FLOPs. The judge then decides from those numbers
with its own budgets: no tensor above `max(block_q * block_k, (L + block) * d)` elements per
batch-and-head, at least the matmul FLOPs the output needs (so the work was seen at all), and with
`is_causal` well under the dense count.

What this cannot prove: the facts are counted in the student's kernel, so code that works around
the observer (computes in numpy and pads with dummy torch matmuls, pops the dispatch mode, or
patches this module inside its kernel) can report small numbers. It cannot fake the outputs, which
the judge compares with its own references; the memory and FLOP verdicts are honest for answers
written with torch ops, which is what the lesson asks for.
"""

from __future__ import annotations

import math

import torch

from . import _core, _judge
from ._core import Case, Question, call, calling, gen, got_expected, graded, helper, hint_line, let, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "10_flash_attention"
HELPERS = ("observe", "run_function")

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


def run_function(cls, q, k, v, is_causal, do):
    """Apply `cls` (an autograd.Function) to fresh leaves, backward with `do`, report raw facts:
    (o, dq, dk, dv, kept, backward_error, seen). `kept`: one row per tensor kept for backward,
    [how ("saved", "inner": saved by an op inside forward, "ctx": an attribute of ctx), numel of its
    storage, shape, part of an autograd graph (0/1)]. `seen`: what the observer saw, [[largest,
    matmul FLOPs] of the forward, [largest, matmul FLOPs, tensors saved for an autograd graph] of
    the backward]."""
    apply = getattr(cls, "apply", cls)
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    leaves = {t.untyped_storage().data_ptr() for t in (q, k, v)}
    forward = _observer_class()()
    with forward:
        # is_causal None: applied as apply(q, k, v), forward's default for is_causal
        args = (q, k, v) if is_causal is None else (q, k, v, is_causal)
        o, node, saved = _core.apply_recording(apply, *args)
    kept = []
    for how, t in saved:
        inner = t.grad_fn is not None and t.grad_fn is not node
        leaf = t.requires_grad and t.is_leaf and t.untyped_storage().data_ptr() not in leaves
        n = t.untyped_storage().nbytes() // max(1, t.element_size())
        kept.append([how, int(n), [int(s) for s in t.shape], int(inner or leaf)])
    backward, graph = _observer_class()(), []
    # an op that saves a tensor while backward runs builds an autograd graph there (enable_grad inside it)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: (graph.append(1), t)[1], lambda t: t), backward:
        error = _core.backward_error(o, do)
    seen = [[forward.largest, int(forward.flops)], [backward.largest, int(backward.flops), len(graph)]]
    return o.detach() if isinstance(o, torch.Tensor) else o, q.grad, k.grad, v.grad, kept, error, seen


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


def blocked_forward(q, k, v, is_causal, bq, bk, mistake=None):
    """The online softmax, block by block, float64; `mistake` makes one classic mistake."""
    q, k, v = q.double(), k.double(), v.double()
    lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = {"no_scale": 1.0, "scale_twice": 1 / d}.get(mistake, 1 / math.sqrt(d))
    lead = q.shape[:-2]
    o = torch.zeros(*lead, lq, v.shape[-1], dtype=torch.float64)
    lse = torch.zeros(*lead, lq, dtype=torch.float64)
    q_end = lq - lq % bq if mistake == "ragged_queries" and lq % bq else lq
    k_end = lk - lk % bk if mistake == "ragged_keys" and lk % bk else lk
    for i0 in range(0, q_end, bq):
        i1 = min(i0 + bq, lq)
        m = torch.full((*lead, i1 - i0), -math.inf, dtype=torch.float64)
        l_ = torch.zeros((*lead, i1 - i0), dtype=torch.float64)
        acc = torch.zeros((*lead, i1 - i0, v.shape[-1]), dtype=torch.float64)
        for j0 in range(0, k_end, bk):
            j1 = min(j0 + bk, lk)
            if is_causal and j0 > i1 - 1:
                continue
            if is_causal and mistake == "skip_after_i0" and j0 > i0:
                continue
            if is_causal and mistake == "skip_from_last" and j0 >= i1 - 1:
                continue
            diagonal = is_causal and j1 - 1 > i0
            if mistake == "diag_skipped" and diagonal:
                continue
            s = q[..., i0:i1, :] @ k[..., j0:j1, :].transpose(-2, -1) * scale
            if diagonal and mistake != "diag_unmasked":
                rows = torch.arange(i0, i1)[:, None]
                cols = torch.arange(j0, j1)[None, :]
                allowed = cols < rows if mistake == "diag_strict" else cols <= rows
                s = s.masked_fill(~allowed, -math.inf)
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            alpha = torch.nan_to_num(alpha, nan=0.0)
            p = torch.nan_to_num(p, nan=0.0)
            if mistake == "l_twice":
                l_ = l_ * alpha * alpha + p.sum(-1)
            else:
                l_ = l_ * alpha + p.sum(-1)
            if mistake == "no_rescale_o":
                acc = acc + p @ v[..., j0:j1, :]
            else:
                acc = acc * alpha[..., None] + p @ v[..., j0:j1, :]
            m = m_new
        o[..., i0:i1, :] = acc / l_[..., None]
        lse[..., i0:i1] = torch.log(l_) if mistake == "lse_no_max" else m + torch.log(l_)
    return o, lse


_FWD_MISTAKES = [
    (
        "no_rescale_o",
        N_(
            "the running max is not used to rescale the accumulated output: when a block raises the max "
            "from m to m_new, multiply the output accumulated so far by exp(m - m_new), as the normaliser l is"
        ),
    ),
    (
        "l_twice",
        N_(
            "the normaliser l is rescaled twice: l_new = exp(m - m_new) * l + rowsum(p), one factor exp(m - m_new)"
        ),
    ),
    (
        "lse_no_max",
        N_("lse is returned without the max: the running sum l holds exp(s - m), so lse = m + log(l)"),
    ),
    (
        "diag_skipped",
        N_(
            "the causal diagonal block is skipped: the blocks that cross the diagonal hold the keys 0..i that "
            "query i sees (its own key included); process them with the entries above the diagonal masked"
        ),
    ),
    (
        "diag_strict",
        N_(
            "the causal diagonal block is fully masked on its diagonal: query i sees key i too, mask key > query, not key >= query"
        ),
    ),
    (
        "diag_unmasked",
        N_(
            "the causal diagonal block is not masked: a block that crosses the diagonal holds keys after the "
            "query; mask the entries with key position > query position inside it"
        ),
    ),
    ("no_scale", N_("the scores miss the scale 1/sqrt(d): s = q k^T / sqrt(d)")),
    ("scale_twice", N_("the scale is applied twice (scores divided by d): s = q k^T / sqrt(d), once")),
    (
        "skip_after_i0",
        N_(
            "a key block that crosses the diagonal is skipped: the key loop stops at the query block's first query "
            "i0, but its queries run to i1 - 1 and see keys up to i1 - 1; loop j0 over range(0, i1, block_k) "
            "(with block_k != block_q a key block can start inside the query block)"
        ),
    ),
    (
        "skip_from_last",
        N_(
            "a key block that crosses the diagonal is skipped: the key block that starts at the query block's "
            "last query i1 - 1 holds its own key; loop j0 over range(0, i1, block_k), not range(0, i1 - 1, block_k)"
        ),
    ),
    (
        "ragged_keys",
        N_(
            "the last key block is dropped when block_k does not divide Lk: the last block is shorter, "
            "k[..., j0:j0 + block_k, :] is fine with j0 running over range(0, Lk, block_k)"
        ),
    ),
    (
        "ragged_queries",
        N_(
            "the last query block is dropped when block_q does not divide Lq: loop i0 over "
            "range(0, Lq, block_q); the last block is shorter"
        ),
    ),
]


def ref_backward(q, k, v, do, is_causal=False):
    """Autograd through lesson 01's attention, float64."""
    xs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    o, _ = ref_forward(*xs, is_causal)
    return torch.autograd.grad(o, xs, do.double())


def blocked_backward(q, k, v, do, is_causal, bq, bk, mistake=None):
    """FlashAttention-2's backward, float64, with one classic mistake (a model for the hints)."""
    q, k, v, do = q.double(), k.double(), v.double(), do.double()
    d = q.shape[-1]
    scale = 1 / math.sqrt(d)
    o, lse = ref_forward(q, k, v, is_causal)
    lq, lk = q.shape[-2], k.shape[-2]
    big_d = (do * o).sum(-1)  # (..., Lq)
    if mistake == "d_from_o":
        big_d = o.sum(-1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for j0 in range(0, lk, bk):
        j1 = min(j0 + bk, lk)
        for i0 in range(0, lq, bq):
            i1 = min(i0 + bq, lq)
            if is_causal and j0 > i1 - 1:
                continue
            if is_causal and mistake == "skip_partial_q" and i0 < j0:
                continue
            s = q[..., i0:i1, :] @ k[..., j0:j1, :].transpose(-2, -1) * scale
            if is_causal and mistake != "causal_unmasked":
                allowed = torch.arange(j0, j1)[None, :] <= torch.arange(i0, i1)[:, None]
                s = s.masked_fill(~allowed, -math.inf)
            if mistake == "local_softmax":
                p = torch.softmax(s, -1)
            else:
                p = torch.exp(s - lse[..., i0:i1, None])
            dv[..., j0:j1, :] += p.transpose(-2, -1) @ do[..., i0:i1, :]
            dp = do[..., i0:i1, :] @ v[..., j0:j1, :].transpose(-2, -1)
            dd = big_d[..., i0:i1, None]
            if mistake == "d_from_dp_block":
                dd = (p * dp).sum(-1, keepdim=True)
            ds = p * dp if mistake == "no_d" else p * (dp - dd)
            s_bwd = 1.0 if mistake == "no_scale_bwd" else scale
            dq[..., i0:i1, :] += ds @ k[..., j0:j1, :] * s_bwd
            dk[..., j0:j1, :] += ds.transpose(-2, -1) @ q[..., i0:i1, :] * s_bwd
    return dq, dk, dv


_BWD_MISTAKES = [
    (
        "d_from_dp_block",
        N_(
            "D is computed from dp inside each block (rowsum(p * dp) over one key block only): the softmax "
            "term needs the sum over the whole row, which is D = rowsum(do * o), computed once before the loop"
        ),
    ),
    ("no_d", N_("dS = P * dP misses the softmax term: dS = P * (dP - D) with D = rowsum(do * o)")),
    ("d_from_o", N_("D is rowsum(o): it is rowsum(do * o), the upstream gradient times the output")),
    (
        "local_softmax",
        N_(
            "the probabilities are rebuilt with a softmax inside each block: each block holds only part of "
            "the row; rebuild them from the saved log-sum-exp, P = exp(S - lse)"
        ),
    ),
    ("no_scale_bwd", N_("dq and dk miss the scale: dq = dS k / sqrt(d), dk = dS^T q / sqrt(d)")),
    (
        "skip_partial_q",
        N_(
            "the backward pass skips a query block that sees the key block: the query block that holds query j0 "
            "may start before j0 (block_q != block_k); start the query loop at (j0 // block_q) * block_q"
        ),
    ),
    (
        "causal_unmasked",
        N_(
            "the causal mask is missing in the backward pass: the diagonal blocks must mask key > query "
            "when P is rebuilt, as the forward did"
        ),
    ),
]


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


# (leading dims, Lq, Lk, d, d_v, is_causal, block_q, block_k (None: the defaults), dtype, kind); kind
# "large": scores large enough that exp overflows without the running max; "default": is_causal and
# the block sizes not given. The hidden cases repeat each kind with other data and sizes.
_FWD_SPECS = [
    ((2,), 8, 12, 4, 3, False, 4, 4, torch.float64, ""),
    ((), 9, 11, 4, 3, False, 4, 3, torch.float64, ""),  # no leading dims: q (Lq, d)
    ((2, 1, 2), 6, 6, 4, 4, True, 3, 2, torch.float32, ""),
    ((2, 3), 10, 10, 4, 5, True, 4, 4, torch.float32, ""),
    ((3,), 7, 13, 5, 6, False, 3, 4, torch.float32, ""),  # ragged: neither block divides
    ((2,), 13, 13, 6, 4, True, 4, 3, torch.float64, ""),  # causal, ragged, block_k < block_q
    ((2,), 14, 14, 5, 3, True, 3, 5, torch.float32, ""),  # causal, ragged, block_k > block_q
    ((2,), 12, 10, 16, 4, False, 4, 3, torch.float64, "large"),
    ((2,), 11, 11, 8, 4, True, 4, 3, torch.float32, "large"),
    ((2, 2), 100, 100, 8, 8, False, 16, 16, torch.float32, ""),  # large enough to see the L x L matrix
    ((2,), 100, 100, 8, 8, False, None, None, torch.float32, "default"),
]
_FWD_HIDDEN = [
    ((2, 2), 11, 11, 6, 4, True, 4, 3, torch.float64, ""),
    ((), 12, 7, 5, 4, False, 5, 3, torch.float32, ""),
    ((1, 2, 2), 7, 7, 4, 3, True, 2, 3, torch.float64, ""),
    ((4,), 9, 17, 8, 7, False, 8, 5, torch.float64, ""),
    ((3,), 17, 17, 4, 5, True, 5, 7, torch.float32, ""),
    ((2, 3), 10, 13, 16, 5, False, 3, 5, torch.float64, "large"),
    ((3,), 13, 13, 8, 6, True, 5, 4, torch.float64, "large"),
    ((2,), 96, 96, 8, 8, True, 16, 16, torch.float64, ""),
    ((1, 2), 130, 90, 8, 8, False, 32, 16, torch.float32, ""),
    ((3,), 120, 120, 6, 6, False, None, None, torch.float64, "default"),
]


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


def _fwd_cases(hidden):
    cases = []
    for (_, _, _, _, _, causal, bq, bk, dt, kind), _, (q, k, v) in _drawn(
        _FWD_HIDDEN if hidden else _FWD_SPECS, 10100, 37, hidden
    ):
        steps = _observed("flash_attention_forward", dict(q=q, k=k, v=v), **_options(causal, bq, bk, kind))
        facts = _facts(q, k, v, causal, bq or 64, bk or 64, kind=kind)
        label = _label(q, k, v, causal, bq, bk, dt, kind)
        cases.append(Case(label, steps, ["r", "q", "k", "v"], facts=facts, size=q.numel() + k.numel()))
    return cases


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


def _ragged_rows_hint(got, exp, facts, rtol, atol):
    """Rows wrong only in the last (shorter) query block: that block was dropped."""
    lq, bq = facts["lq"], facts["bq"]
    if lq % bq == 0 or got.shape != exp.shape:
        return ""
    g, e = got.double(), exp.double()
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol).reshape(*g.shape[:-2], lq, -1).all(-1)
    bad_rows = bad.reshape(-1, lq).any(0)
    start = lq - lq % bq
    if bool(bad_rows[start:].all()) and not bool(bad_rows[:start].any()):
        return dict(_FWD_MISTAKES)["ragged_queries"]
    return ""


NO_MAX = N_(
    "exp(S) overflows on large scores: subtract the running max before exponentiating, m_new = max(m, "
    "rowmax(S)), p = exp(S - m_new), and rescale l and the output by exp(m - m_new)"
)
MAX_FROM_ZERO = N_(
    "on the rows whose scores are all large and negative every exp(S - m) underflows to 0 and l = 0: the "
    "running max starts at 0 instead of -inf; start it at -inf (torch.full(..., -math.inf))"
)


def _overflow_hint(got, facts) -> str:
    """NaN or inf where the answer should be finite (scores of about +-1000): the running max is
    missing (every row is hit) or starts at 0 (exactly the rows whose scores are all negative)."""
    if facts.get("kind") != "large":
        return ""
    bad = ~torch.isfinite(got.double())
    if got.dim() == facts["q"].dim():
        bad = bad.any(-1)  # o (..., Lq, d_v): a row per query; lse (..., Lq) already is
    if not bool(bad.any()):
        return ""
    q, k = facts["q"].double(), facts["k"].double()
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if facts["is_causal"]:
        s = s.masked_fill(~causal_mask(s.shape[-2], s.shape[-1]), -math.inf)
    negative = s.amax(-1) < 0  # (..., Lq)
    if bad.shape != negative.shape:
        return ""
    if bool(bad.all()):  # every exp overflows or underflows: no max at all
        return NO_MAX
    return MAX_FROM_ZERO if torch.equal(bad, negative) else ""


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


def _fwd_judge(case, out):
    f = case.facts
    q, k, v, causal, bq, bk = f["q"], f["k"], f["v"], f["is_causal"], f["bq"], f["bk"]
    who = "flash_attention_forward"
    (o, lse), seen = _pair(out["r"], who, ("o", "lse"))
    o_exp, lse_exp = ref_forward(q, k, v, causal)
    o = expect_tensor(o, "o", shape=o_exp.shape)
    lse = expect_tensor(lse, "lse", shape=lse_exp.shape)
    _judge.expect_dtype(o, q.dtype, "o")
    hints = dict(_FWD_MISTAKES)
    models = {}

    def model(key):
        if key not in models:
            models[key] = blocked_forward(q, k, v, causal, bq, bk, key)
        return models[key]

    rtol, atol = _tols(o_exp, q.dtype)
    hint = _default_causal_hint(o, f, rtol, atol) or _ragged_rows_hint(o, o_exp, f, rtol, atol)
    hint = hint or diagnose(o, [(hints[key], lambda key=key: model(key)[0]) for key in hints])
    hint = hint or _overflow_hint(o, f)
    expected = msg("o = softmax(q k^T / sqrt(d)) v, computed with the running max m and normaliser l")
    assert_close(o, o_exp.to(o.dtype), msg("o (the attention output)"), hint or expected, rtol, atol)
    hint = diagnose(lse, [(hints[key], lambda key=key: model(key)[1]) for key in hints])
    hint = hint or _overflow_hint(lse, f)
    what = msg("lse (the log-sum-exp of each row of scaled scores)")
    expected = msg("lse = m + log(l), the running max plus the log of the normaliser, per query")
    assert_close(lse, lse_exp.to(lse.dtype), what, hint or expected, *_tols(lse_exp, q.dtype))
    _unchanged(out, f, ("q", "k", "v"), who)
    judge_default_blocks(f, seen, who)
    judge_memory(f, seen, who)
    need = 2 * f["heads"] * f["lq"] * f["lk"] * (q.shape[-1] + v.shape[-1])
    judge_flops_seen(f, seen[1], need // 2 if causal else need, who)


# ---------------------------------------------------------------------------------------------
# Causal skipping: FLOPs

SKIP_LIMIT = 0.75  # block skipping does (n + 1) / (2 n) of the dense FLOPs: 0.5625 at n = 8 blocks


def _flops_of_dense(flops, dense):
    """The matmul FLOPs an answer spent, with their share of the dense count (a got line)."""
    return msg("{n} matmul FLOPs ({ratio} of the dense count)", n=flops, ratio=f"{flops / dense:.2f}")


def _skip_cases(hidden):
    # (leading dims, L, d, block_q, block_k, dtype)
    specs = [
        ((2,), 128, 8, 16, 16, torch.float32),
        ((2,), 96, 6, 12, 8, torch.float32),
        ((1,), 100, 8, 10, 20, torch.float64),
    ]
    if hidden:
        specs = [((2, 2), 96, 6, 12, 8, torch.float64), ((3,), 120, 8, 8, 24, torch.float32)]
    cases = []
    for i, (lead, L, d, bq, bk, dt) in enumerate(specs):
        g = gen(10300 + 41 * i + (500 if hidden else 0))
        q, k, v = _inputs(lead, L, L, d, d, dt, g)
        steps = _observed(
            "flash_attention_forward", dict(q=q, k=k, v=v), is_causal=True, block_q=bq, block_k=bk
        )
        cases.append(
            Case(
                _label(q, k, v, True, bq, bk, dt),
                steps,
                ["r"],
                facts=_facts(q, k, v, True, bq, bk),
                size=q.numel(),
            )
        )
    return cases


def _skip_judge(case, out):
    f = case.facts
    q, k, v = f["q"], f["k"], f["v"]
    who = "flash_attention_forward(..., is_causal=True)"
    (o, _lse), (largest, flops, ops) = _pair(out["r"], who, ("o", "lse"))
    o_exp, _ = ref_forward(q, k, v, True)
    rtol, atol = _tols(o_exp, q.dtype)
    assert_close(
        expect_tensor(o, "o", shape=o_exp.shape),
        o_exp.to(q.dtype),
        msg("o with is_causal=True"),
        msg("the causal output is wrong: fix flash_attention_forward's causal case first"),
        rtol=rtol,
        atol=atol,
    )
    dense = 4 * f["heads"] * f["lq"] * f["lk"] * q.shape[-1]
    judge_flops_seen(f, flops, dense // 2, who)
    if flops > SKIP_LIMIT * dense:
        raise CheckFailure(
            msg("{who} computes the blocks above the diagonal.", who=who)
            + got_expected(
                _flops_of_dense(flops, dense),
                msg(
                    "at most {n} ({ratio} of the dense {dense}); skipping "
                    "the blocks wholly above the diagonal leaves about half",
                    n=int(SKIP_LIMIT * dense),
                    ratio=SKIP_LIMIT,
                    dense=dense,
                ),
            )
            + hint_line(
                msg(
                    "the answer masks the blocks above the diagonal instead of skipping them: for query block "
                    "[i0, i1), stop the key loop at key i1 - 1 (range(0, i1, block_k)), and mask only the blocks "
                    "that cross the diagonal"
                )
            )
        )


# ---------------------------------------------------------------------------------------------
# flash_attention_backward

_BWD_SPECS = [
    ((2,), 8, 12, 4, 3, False, 4, 4, torch.float64, ""),
    ((), 9, 11, 4, 3, False, 4, 3, torch.float64, ""),  # no leading dims
    ((2, 1, 2), 6, 6, 4, 4, True, 3, 2, torch.float32, ""),
    ((2, 3), 10, 10, 4, 5, True, 4, 4, torch.float32, ""),
    ((3,), 7, 13, 5, 6, False, 3, 4, torch.float64, ""),
    ((2,), 13, 13, 6, 4, True, 4, 3, torch.float64, ""),  # causal, ragged, block_k < block_q
    ((2,), 14, 14, 5, 3, True, 3, 5, torch.float32, ""),  # causal, ragged, block_k > block_q
    ((2,), 12, 10, 16, 4, False, 4, 3, torch.float64, "large"),
    ((2,), 64, 64, 8, 8, True, 8, 8, torch.float32, ""),  # 8 blocks a side: skipping is measured
    ((2,), 100, 100, 8, 8, False, 16, 16, torch.float32, ""),
    ((2,), 90, 90, 8, 8, False, None, None, torch.float32, "default"),
]
_BWD_HIDDEN = [
    ((2, 2), 11, 11, 6, 4, True, 4, 3, torch.float64, ""),
    ((), 12, 7, 5, 4, False, 5, 3, torch.float32, ""),
    ((1, 2, 2), 7, 7, 4, 3, True, 2, 3, torch.float64, ""),
    ((4,), 9, 17, 8, 7, False, 8, 5, torch.float32, ""),
    ((3,), 17, 17, 4, 5, True, 5, 7, torch.float64, ""),
    ((2, 2), 13, 13, 16, 5, True, 3, 4, torch.float64, "large"),
    ((2,), 96, 96, 8, 8, True, 16, 16, torch.float64, ""),
    ((1, 2), 130, 90, 8, 8, False, 32, 16, torch.float32, ""),
    ((3,), 120, 120, 6, 6, False, None, None, torch.float64, "default"),
]


def _bwd_cases(hidden):
    cases = []
    for (lead, lq, _, _, dv, causal, bq, bk, dt, kind), g, (q, k, v) in _drawn(
        _BWD_HIDDEN if hidden else _BWD_SPECS, 10500, 43, hidden
    ):
        do = rand(*lead, lq, dv, dtype=dt, mean=0.3, std=1.0, generator=g)
        o, lse = ref_forward(q, k, v, causal)
        o, lse = o.to(dt), lse.to(dt)
        inputs = dict(q=q, k=k, v=v, o=o, lse=lse, do=do)
        steps = _observed("flash_attention_backward", inputs, **_options(causal, bq, bk, kind))
        cases.append(
            Case(
                msg(
                    "{label}, o and lse of the forward, do {shape} (mean 0.3)",
                    label=_label(q, k, v, causal, bq, bk, dt, kind),
                    shape=tuple(do.shape),
                ),
                steps,
                ["r", "q", "k", "v", "o", "lse", "do"],
                facts=_facts(q, k, v, causal, bq or 64, bk or 64, do=do, o=o, lse=lse, kind=kind),
                size=q.numel() + k.numel(),
            )
        )
    return cases


def _bwd_default_causal_hint(got, i, f, rtol, atol) -> str:
    if f.get("kind") != "default" or f["lq"] != f["lk"]:
        return ""
    causal = ref_backward(f["q"], f["k"], f["v"], f["do"], True)[i]
    if not _judge.close(got, causal.to(got.dtype), rtol, atol):
        return ""
    return msg(
        "is_causal should default to False: {signature}", signature=SIGNATURES["flash_attention_backward"]
    )


def _bwd_overflow_hint(got, f) -> str:
    if f.get("kind") != "large" or bool(torch.isfinite(got.double()).all()):
        return ""
    return msg(
        "a gradient has NaN or inf on large scores: exp(S) overflows; rebuild P = exp(S - lse) in one "
        "exponential, never exp(S) / exp(lse)"
    )


def _judge_grads(grads, f, who, models=None):
    q, k, v, do, causal = f["q"], f["k"], f["v"], f["do"], f["is_causal"]
    exp = ref_backward(q, k, v, do, causal)
    hints = dict(_BWD_MISTAKES)
    cache = {}

    def model(key):
        if key not in cache:
            cache[key] = blocked_backward(q, k, v, do, causal, f["bq"], f["bk"], key)
        return cache[key]

    for i, name in sorted(enumerate(("dq", "dk", "dv")), key=lambda t: -t[0]):  # dv first: it needs no dS
        what = msg("{name} from {who}", name=name, who=who)
        got = expect_tensor(grads[i], what, shape=exp[i].shape)
        _judge.expect_dtype(got, q.dtype, what)
        rtol, atol = _tols(exp[i], q.dtype)
        hint = _bwd_default_causal_hint(got, i, f, rtol, atol)
        hint = hint or diagnose(got, [(hints[key], lambda key=key: model(key)[i]) for key in hints])
        hint = hint or _bwd_overflow_hint(got, f)
        assert_close(
            got,
            exp[i].to(q.dtype),
            what,
            hint
            or msg(
                "per block: P = exp(S - lse); dv += P^T do; dP = do v^T; dS = P * (dP - D) with "
                "D = rowsum(do * o); dq += dS k / sqrt(d); dk += dS^T q / sqrt(d)"
            ),
            rtol=rtol,
            atol=atol,
        )


def _bwd_judge(case, out):
    f = case.facts
    who = "flash_attention_backward"
    grads, seen = _pair(out["r"], who, ("dq", "dk", "dv"))
    _judge_grads(grads, f, who)
    _unchanged(out, f, ("q", "k", "v", "o", "lse", "do"), who)
    judge_default_blocks(f, seen, who)
    judge_memory(f, seen, who)
    q, v = f["q"], f["v"]
    dense = 2 * f["heads"] * f["lq"] * f["lk"] * (3 * q.shape[-1] + 2 * v.shape[-1])
    judge_flops_seen(f, seen[1], dense // 2 if f["is_causal"] else dense, who)
    if f["is_causal"] and f["lq"] >= 4 * f["bq"] and seen[1] > SKIP_LIMIT * dense:
        raise CheckFailure(
            msg("{who} computes the blocks above the diagonal.", who=who)
            + got_expected(
                _flops_of_dense(seen[1], dense),
                msg(
                    "at most {n} ({ratio} of the dense {dense})",
                    n=int(SKIP_LIMIT * dense),
                    ratio=SKIP_LIMIT,
                    dense=dense,
                ),
            )
            + hint_line(
                msg(
                    "the backward pass masks the blocks above the diagonal instead of skipping them: "
                    "for key block [j0, j1), start the query loop at the block that holds query j0"
                )
            )
        )


# ---------------------------------------------------------------------------------------------
# FlashAttention (autograd.Function)


def _fn_cases(hidden):
    # (leading dims, Lq, Lk, d, d_v, is_causal (None: not given, forward's default), dtype)
    specs = [
        ((2,), 9, 9, 4, 4, True, torch.float64),
        ((2,), 10, 10, 4, 3, None, torch.float64),
        ((2, 2), 64, 80, 8, 8, False, torch.float32),
    ]
    if hidden:
        specs = [
            ((3,), 70, 70, 8, 6, True, torch.float64),
            ((3,), 8, 8, 5, 4, None, torch.float32),
            ((2,), 12, 7, 5, 3, False, torch.float32),
        ]
    cases = []
    for i, (lead, lq, lk, d, dv, causal, dt) in enumerate(specs):
        g = gen(10700 + 47 * i + (500 if hidden else 0))
        q, k, v = _inputs(lead, lq, lk, d, dv, dt, g)
        do = rand(*lead, lq, dv, dtype=dt, mean=0.3, std=1.0, generator=g)
        steps = [let("q", q), let("k", k), let("v", v), let("do", do)]
        run = helper("flash_attention.run_function")
        steps.append(call("r", run, graded("FlashAttention"), *map(ref, "qkv"), causal, ref("do")))
        shapes = dict(q=tuple(q.shape), k=tuple(k.shape), v=tuple(v.shape), dtype=str(dt)[6:])
        if causal is None:
            label = msg(
                "{call} with q {q}, k {k}, v {v}, is_causal not given (default), then backward with a random do, "
                "{dtype}",
                call="FlashAttention.apply(q, k, v)",
                **shapes,
            )
        else:
            label = msg(
                "{call} with q {q}, k {k}, v {v}, then backward with a random do, {dtype}",
                call=f"FlashAttention.apply(q, k, v, {causal})",
                **shapes,
            )
        cases.append(
            Case(
                label,
                steps,
                ["r"],
                facts=_facts(q, k, v, bool(causal), 64, 64, do=do, kind="default" if causal is None else ""),
                size=q.numel() + k.numel(),
            )
        )
    return cases


def _fn_judge(case, out):
    f = case.facts
    q, k, v, causal = f["q"], f["k"], f["v"], f["is_causal"]
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 7:
        raise CheckFailure(msg("the grader could not apply FlashAttention (no results came back)"))
    o, dq, dk, dv, kept, error, seen = r
    rows = [
        x
        for x in (kept if isinstance(kept, (list, tuple)) else [])
        if isinstance(x, (list, tuple)) and len(x) == 4
    ]
    if error is not None:
        if "number of gradients" in str(error):
            hint = msg(
                "backward must return one gradient per input of forward: (dq, dk, dv, None), None for is_causal"
            )
        elif not rows:
            hint = msg(
                "your forward saves nothing its backward needs: ctx.save_for_backward(q, k, v, o, lse) and "
                "ctx.is_causal = is_causal, read back with ctx.saved_tensors"
            )
        else:
            hint = msg("check what forward saves and what backward reads back (q, k, v, o, lse)")
        raise CheckFailure(
            msg("the backward pass of FlashAttention raised {error}", error=str(error)) + hint_line(hint)
        )
    o_exp, _ = ref_forward(q, k, v, causal)
    expected = msg("forward should return the o of flash_attention_forward(q, k, v, is_causal)")
    if isinstance(o, torch.Tensor) and o.shape == o_exp.shape:
        expected = (
            _default_causal_hint(o, f, *_tols(o_exp, q.dtype), who="FlashAttention.forward") or expected
        )
    grads = (("q", dq), ("k", dk), ("v", dv))
    _judge.function_judged(
        "FlashAttention.apply(q, k, v, is_causal)", o, o_exp, expected, _tols(o_exp, q.dtype), grads
    )
    _judge_grads((dq, dk, dv), f, msg("FlashAttention's backward"))
    if any(x[3] for x in rows) or any(x[0] == "inner" for x in rows):
        raise CheckFailure(
            msg(
                "FlashAttention saves an autograd graph: its forward built one (tensors saved by ops inside "
                "forward, or kept with a grad_fn), so every intermediate of the forward stays in memory."
            )
            + hint_line(
                msg(
                    "do not turn autograd back on inside forward; save q, k, v, o, lse and let backward "
                    "call flash_attention_backward"
                )
            )
        )
    full = f["heads"] * f["lq"] * f["lk"]
    big = [x for x in rows if x[1] >= full]
    if big:
        shape = tuple(big[0][2])
        raise CheckFailure(
            msg("FlashAttention keeps a tensor of size Lq x Lk for its backward.")
            + got_expected(
                msg("a kept tensor of {n} elements, shape {shape}", n=big[0][1], shape=shape),
                msg("nothing of {n} elements or more (q, k, v, o and lse are each O(L))", n=full),
            )
            + hint_line(
                msg(
                    "it saves the attention probabilities (or the scores): save lse instead and rebuild "
                    "each block of P = exp(S - lse) in backward"
                )
            )
        )
    if not rows:
        raise CheckFailure(
            msg("FlashAttention's backward got the right gradients, yet its forward kept no tensor for it.")
            + hint_line(
                msg(
                    "backward must take q, k, v, o, lse from ctx (ctx.save_for_backward / ctx.saved_tensors), "
                    "not from a global or a closure"
                )
            )
        )
    _judge_function_work(f, seen)


def _judge_function_work(f, seen):
    """What the Function's forward and backward made and computed, as the observer saw it: no
    autograd graph built inside backward, no tensor over the budget in either pass, the matmuls
    seen, and the default 64 x 64 blocks."""
    ok = isinstance(seen, (list, tuple)) and len(seen) == 2
    fwd, bwd = seen if ok else (None, None)
    if not (
        isinstance(fwd, (list, tuple)) and len(fwd) == 2 and isinstance(bwd, (list, tuple)) and len(bwd) == 3
    ):
        raise CheckFailure(
            msg("the grader could not observe {who} (no allocation report came back)", who="FlashAttention")
        )
    if not isinstance(bwd[2], int) or bwd[2] > 0:
        raise CheckFailure(
            msg(
                "FlashAttention.backward builds an autograd graph: it runs autograd (torch.enable_grad, "
                "torch.autograd.grad or .backward) inside backward, through an attention that keeps every "
                "intermediate."
            )
            + got_expected(
                msg("{n} tensors saved for an autograd graph while backward ran", n=bwd[2]), msg("none")
            )
            + hint_line(
                msg(
                    "backward computes the gradients itself, with no autograd inside it: "
                    "flash_attention_backward(q, k, v, o, lse, do, ctx.is_causal) on the saved tensors"
                )
            )
        )
    q, v, causal = f["q"], f["v"], f["is_causal"]
    judge_memory(f, [bwd[0], bwd[1], 0], "FlashAttention.backward")
    judge_memory(f, [fwd[0], fwd[1], 0], "FlashAttention.forward")
    dense = 2 * f["heads"] * f["lq"] * f["lk"]
    judge_flops_seen(
        f, fwd[1], dense * (q.shape[-1] + v.shape[-1]) // (2 if causal else 1), "FlashAttention.forward"
    )
    need = dense * (3 * q.shape[-1] + 2 * v.shape[-1]) // (2 if causal else 1)
    judge_flops_seen(f, bwd[1], need, "FlashAttention.backward")
    block = f["heads"] * min(64, f["lq"]) * min(64, f["lk"])
    for name, (largest, _flops, *_) in (("forward", fwd), ("backward", bwd)):
        if isinstance(largest, (list, tuple)) and len(largest) == 4 and int(largest[0]) < block:
            raise CheckFailure(
                msg("{who} works in blocks smaller than 64 x 64.", who=f"FlashAttention.{name}")
                + got_expected(
                    msg(
                        "the largest tensor it made has {n} elements, shape {shape}",
                        n=int(largest[0]),
                        shape=tuple(largest[1]),
                    ),
                    msg("a (64, 64) block of scores per batch-and-head, {n} elements", n=block),
                )
                + hint_line(
                    msg(
                        "use the default block sizes: flash_attention_forward(q, k, v, is_causal) and "
                        "flash_attention_backward(q, k, v, o, lse, do, is_causal), without block_q and block_k"
                    )
                )
            )


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("flash_attention_forward", _fwd_cases, _fwd_judge),
    Question("causal_skipping", _skip_cases, _skip_judge, needs=("flash_attention_forward",)),
    Question("flash_attention_backward", _bwd_cases, _bwd_judge),
    Question(
        "FlashAttention",
        _fn_cases,
        _fn_judge,
        needs=("flash_attention_forward", "flash_attention_backward"),
    ),
)

check = _core.lesson_check(QUESTIONS, "flash_attention_forward", devices=False)
