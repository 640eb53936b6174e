"""FlashAttention (the autograd.Function): the helper `run_function` (run where the answer runs:
forward, backward, what forward kept and what the observer saw), its cases and its judge."""

from __future__ import annotations

import torch

from .. import _core, _judge
from .._core import Case, call, gen, got_expected, graded, helper, hint_line, let, rand, ref
from .._judge import CheckFailure
from ..i18n import msg
from ._shared import (
    _default_causal_hint,
    _facts,
    _inputs,
    _observer_class,
    _tols,
    judge_flops_seen,
    judge_memory,
    ref_forward,
)
from .flash_attention_backward import _judge_grads

# an integration question: the student's answers are kept (byhand._depends), as the lesson
# says before the exercise: the exercise joins the two passes ("Join the two passes")
BUILDS_ON = ("flash_attention_forward", "flash_attention_backward")


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
