"""clip_grad_norm_: the helper `clip` (clips the gradients of fresh parameters where the answer runs),
the model of its classic mistakes, their hints, its cases and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, graded, helper, let, rand, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_scalar_tensor
from ..i18n import N_, msg
from ._shared import F64

# ---------------------------------------------------------------------------------------------
# clip_grad_norm_


def clip(fn, grads, max_norm, as_generator=False):
    """Fresh parameters with these gradients (None: no gradient), clipped by `fn`; returns (what
    fn returned, the gradients after)."""
    params = []
    for grad in grads:
        p = torch.zeros(
            grad.shape if grad is not None else (2,),
            dtype=grad.dtype if grad is not None else F64,
            device=grad.device if grad is not None else None,
        )
        p.requires_grad_(True)
        p.grad = None if grad is None else grad.clone()
        params.append(p)
    norm = fn((p for p in params) if as_generator else params, max_norm)
    if isinstance(norm, torch.Tensor):
        norm = norm.detach()
    return norm, [p.grad for p in params]


_CLIP_HINTS = {
    "per_param": N_(
        "each gradient is clipped by its own norm: the norm is global, sqrt of the sum of every gradient's "
        "squared entries, and every gradient is scaled by the same max_norm / (norm + 1e-6)"
    ),
    "always": N_(
        "the gradients are scaled even when the norm is below max_norm: clip only when norm > max_norm "
        "(scale by min(1, max_norm / (norm + 1e-6)))"
    ),
    "sum_of_norms": N_(
        "the global norm is the sum of the per-parameter norms: it is the L2 norm of all entries "
        "together, sqrt(sum of each norm squared)"
    ),
    "generator": N_(
        "parameters may be a generator (model.parameters()): it can be read only once, so turn it "
        "into a list first (params = [p for p in parameters if p.grad is not None])"
    ),
    "norm_after": N_("the norm returned is the one after clipping: return the total norm before scaling"),
    "no_eps": N_(
        "the 1e-6 is missing: scale by max_norm / (norm + 1e-6), as torch does (it matters when the "
        "norm itself is tiny)"
    ),
}


def _clip_model(grads, max_norm, mistake=None):
    gs = [g.double() for g in grads if g is not None]
    norms = torch.stack([g.norm() for g in gs])
    total = norms.sum() if mistake == "sum_of_norms" else norms.norm()
    out = [None if g is None else g.double().clone() for g in grads]
    if mistake == "generator":
        return total, out
    for i, g in enumerate(out):
        if g is None:
            continue
        if mistake == "per_param":
            coef = min(1.0, max_norm / (float(g.norm()) + 1e-6))
        elif mistake == "no_eps":
            coef = min(1.0, max_norm / float(total))
        elif mistake == "always":
            coef = max_norm / (float(total) + 1e-6)
        else:
            coef = min(1.0, max_norm / (float(total) + 1e-6))
        out[i] = g * coef
    if mistake == "norm_after":
        total = torch.stack([g.norm() for g in out if g is not None]).norm()
    return total, out


def _clip_cases(hidden):
    # (shapes (None: no gradient), dtype, grad std, max_norm, as a generator)
    specs = [
        ([(3, 4), (5,), None, (2, 2, 3)], torch.float32, 1.0, 1.0, False),
        ([(6,), (2, 3)], F64, 0.1, 5.0, False),  # below max_norm: unchanged
        ([(4, 4), None, (7,), (1,)], F64, 3.0, 2.0, True),
        ([(5,), (2, 3)], F64, 1e-5, 1e-6, False),  # a tiny norm: the 1e-6 counts
    ]
    if hidden:
        specs = [
            ([(8, 3), (3,), (5, 2), None], torch.float32, 2.0, 0.5, False),
            ([(10,), (2, 2)], F64, 0.01, 1.0, False),
            ([(3, 3, 3), (1,), None, (9,)], F64, 1.0, 3.0, True),
            ([(4,), (3, 2), (2,)], F64, 2e-5, 3e-6, True),
        ]
    cases = []
    for i, (shapes, dt, std, max_norm, as_gen) in enumerate(specs):
        g = gen(12300 + 23 * i + (500 if hidden else 0))
        grads = [
            None if s is None else rand(*s, dtype=dt, mean=0.3 * std, std=std, generator=g) for s in shapes
        ]
        what = ", ".join("None" if s is None else str(s) for s in shapes)
        label = msg(
            "{call}, p.grad {shapes} {dtype} (std {std})",
            call=f"clip_grad_norm_({'model.parameters()' if as_gen else 'list(model.parameters())'}, max_norm={max_norm})",
            shapes=what,
            dtype=str(dt)[6:],
            std=str(std),
        )
        steps = [
            let("grads", grads),
            call(
                "r",
                helper("training.clip"),
                graded("clip_grad_norm_"),
                ref("grads"),
                max_norm,
                as_generator=as_gen,
            ),
        ]
        cases.append(
            Case(label, steps, ["r"], facts=dict(grads=grads, max_norm=max_norm, as_gen=as_gen), size=i)
        )
    return cases


def _clip_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise CheckFailure(msg("the grader could not run clip_grad_norm_ (no results came back)"))
    norm, got_grads = r
    grads, max_norm = f["grads"], f["max_norm"]
    params = []
    for grad in grads:
        p = torch.zeros(
            grad.shape if grad is not None else (2,), dtype=grad.dtype if grad is not None else F64
        )
        p.grad = None if grad is None else grad.clone()
        params.append(p)
    exp_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    exp_grads = [p.grad for p in params]
    got = [g for g in got_grads if isinstance(g, torch.Tensor)]
    if len(got) != len([g for g in exp_grads if g is not None]):
        raise CheckFailure(
            msg("clip_grad_norm_ gave a gradient to a parameter that had none: skip p.grad is None")
        )
    flat = torch.cat([g.reshape(-1).double() for g in got])
    exp_flat = torch.cat([g.reshape(-1).double() for g in exp_grads if g is not None])
    atol = 1e-7 * min(1.0, float(exp_flat.abs().max()))  # tiny gradients: the tolerance shrinks with them
    models = {}

    def model(k):
        if k not in models:
            models[k] = _clip_model(grads, max_norm, k)
        return models[k]

    hint = diagnose(
        flat,
        [
            (h, lambda k=k: torch.cat([g.reshape(-1) for g in model(k)[1] if g is not None]))
            for k, h in _CLIP_HINTS.items()
        ],
        rtol=1e-5,
        atol=atol,
    )
    assert_close(
        flat,
        exp_flat.to(flat.dtype),
        msg("the gradients after clip_grad_norm_ (all of them, flattened)"),
        hint
        or msg(
            "every gradient times min(1, max_norm / (norm + 1e-6)), norm the L2 norm of all gradients together"
        ),
        rtol=1e-5,
        atol=atol,
    )
    # the type before the value: the exercise returns the norm as a tensor of shape ()
    norm = expect_scalar_tensor(norm, msg("the norm clip_grad_norm_ returned"))
    hint = diagnose(
        norm.reshape(()).double(),
        [(h, lambda k=k: model(k)[0]) for k, h in _CLIP_HINTS.items() if k in ("norm_after", "sum_of_norms")],
        rtol=1e-5,
        atol=1e-7,
    )
    assert_close(
        norm.reshape(()).double(),
        exp_norm.double(),
        msg("the norm clip_grad_norm_ returned"),
        hint or msg("return the global L2 norm of the gradients, before clipping"),
        rtol=1e-5,
        atol=1e-7,
    )
