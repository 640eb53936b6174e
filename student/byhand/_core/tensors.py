"""Tensor helpers the lessons' checks share: random inputs (`rand`, `gen`, `random_mask`) and what an
autograd.Function keeps for backward, recorded where the answer runs (`apply_recording`,
`backward_error`; backward.run_function and flash_attention.run_function report it as plain rows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# ---------------------------------------------------------------------------------------------
# What an autograd.Function keeps for backward: recorded by the helpers that run in the student's
# kernel (backward.run_function, flash_attention.run_function), which report it as plain rows


def _tensors_in(value, depth=0):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors_in(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v, depth + 1)


def apply_recording(apply: Callable, *args) -> tuple:
    """Call `apply(*args)` and collect what it keeps for backward: (its result, the result's
    grad_fn, [(how, tensor)]) with how "saved" (by save_for_backward), "inner" (saved by an op
    inside forward, i.e. a graph built there) or "ctx" (an attribute of ctx)."""
    packed: list = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = apply(*args)
    node = getattr(out, "grad_fn", None)
    try:  # what save_for_backward holds; whatever was packed before it, ops inside forward saved
        n_saved = len(node.saved_tensors)
    except Exception:  # noqa: BLE001 - not a custom Function's node, or nothing saved
        n_saved = 0
    kept = [("saved" if i >= len(packed) - n_saved else "inner", t) for i, t in enumerate(packed)]
    for value in list(getattr(node, "__dict__", {}).values()):
        kept += [("ctx", t) for t in _tensors_in(value)]
    return out, node, kept


def backward_error(out: Any, grad: torch.Tensor) -> str | None:
    """`out.backward(grad)`; what went wrong as text (a fact to judge), None when it ran. A stub's
    NotImplementedError goes on up: the exercise is not done."""
    try:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"apply returned {type(out).__name__}, not a tensor")
        out.backward(grad)
    except NotImplementedError:
        raise
    except Exception as exc:  # the answer's backward failed: a fact to judge, not a crash
        return f"{type(exc).__name__}: {exc}"[:500]
    return None


def rand(*shape, dtype=torch.float32, mean=0.0, std=1.0, generator=None) -> torch.Tensor:
    """Random test input with a non-zero mean and a std far from 1 when asked."""
    return (torch.randn(*shape, dtype=torch.float64, generator=generator) * std + mean).to(dtype)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_mask(kind: str | None, lead: tuple, lq: int, lk: int, generator: torch.Generator):
    """An attention mask (True = may attend) of `kind`: None (no mask), "causal" (Lq, Lk),
    "random" (..., Lq, Lk) with key 0 always allowed, "dead_row" the same with query 1 allowed no
    key, "broadcast" (Lq, Lk) shared by the leading dims, key 0 always allowed."""
    if kind == "causal":
        return torch.tril(torch.ones(lq, lk, dtype=torch.bool))
    if kind in ("random", "dead_row"):
        mask = torch.rand(*lead, lq, lk, generator=generator) > 0.4
        mask[..., 0] = True
        if kind == "dead_row":
            mask[..., 1, :] = False  # a query with no allowed key
        return mask
    if kind == "broadcast":
        mask = torch.rand(lq, lk, generator=generator) > 0.3
        mask[:, 0] = True
        return mask
    return None
