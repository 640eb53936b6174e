"""Checks for lesson 04_pre_post_ln: a residual stack with Pre-LN or Post-LN, and its per-block
gradient norms.

The grader picks every weight (a random state dict with non-trivial LayerNorm affines), builds the
student's `ResidualStack` with it in the kernel, and recomputes the expected numbers here with a
float64 reference of the same stack. A mismatch is matched against the classic wrong wirings
(Pre-LN and Post-LN swapped, residual missing, head missing) and the classic wrong tensors for
`block_grad_norms` (bias grads, reversed order, LayerNorm grads, squared norms, a sum loss).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import _core, _judge
from ._core import Case, Question, call, gen, got_expected, hint_line, let, new, rand, ref
from ._judge import CheckFailure, assert_close, diagnose, expect_tensor
from .i18n import N_, msg

LESSON = "04_pre_post_ln"

# ---------------------------------------------------------------------------------------------
# References (float64, in the judge's process)


def random_state(depth: int, d: int, g: torch.Generator, dtype=torch.float32) -> dict:
    """A state dict for ResidualStack(depth, d): LayerNorm affines far from (1, 0), small linears."""
    state = {}
    for i in range(depth):
        state[f"norms.{i}.weight"] = rand(d, generator=g, mean=1.0, std=0.4)
        state[f"norms.{i}.bias"] = rand(d, generator=g, mean=0.1, std=0.3)
    for i in range(depth):
        state[f"linears.{i}.weight"] = rand(d, d, generator=g, std=1.3 / math.sqrt(d))
        state[f"linears.{i}.bias"] = rand(d, generator=g, mean=0.2, std=0.4)
    state["head.weight"] = rand(d, d, generator=g, std=1.0 / math.sqrt(d))
    state["head.bias"] = rand(d, generator=g, mean=-0.3, std=0.5)
    return {k: v.to(dtype) for k, v in state.items()}


def ref_forward(
    state: dict, depth: int, x: torch.Tensor, pre_ln: bool, wiring: str = "right"
) -> torch.Tensor:
    """The stack's output in float64 (differentiable w.r.t. tensors in `state`). `wiring` models a
    mistake: "no_residual", "no_head", "shared" (block 0's weights in every block)."""
    d = x.shape[-1]
    h = x.double()
    state = {k: v.double() for k, v in state.items()}  # a no-op (same tensor) for float64 leaves
    for i in range(depth):
        j = 0 if wiring == "shared" else i

        def ln(t):
            return F.layer_norm(t, (d,), state[f"norms.{j}.weight"], state[f"norms.{j}.bias"], 1e-5)

        def lin(t):
            return F.linear(t, state[f"linears.{j}.weight"], state[f"linears.{j}.bias"])

        if wiring == "no_residual":
            h = lin(ln(h)) if pre_ln else ln(lin(h))
        else:
            h = h + lin(ln(h)) if pre_ln else ln(h + lin(h))
    if wiring == "no_head":
        return h
    return F.linear(h, state["head.weight"], state["head.bias"])


def ref_grads(state: dict, depth: int, x: torch.Tensor, pre_ln: bool, loss: str = "mean") -> dict:
    """Gradients of stack(x).pow(2).mean() (or a mistaken loss) w.r.t. every parameter, float64."""
    params = {k: v.detach().double().requires_grad_(True) for k, v in state.items()}
    y = ref_forward(params, depth, x, pre_ln)
    value = {"mean": lambda: y.pow(2).mean(), "sum": lambda: y.pow(2).sum(), "no_square": lambda: y.mean()}[
        loss
    ]()
    value.backward()
    return {k: p.grad for k, p in params.items()}


def ref_block_grad_norms(state, depth, x, pre_ln, loss="mean", param="linears", kind="weight"):
    grads = ref_grads(state, depth, x, pre_ln, loss)
    return torch.stack([grads[f"{param}.{i}.{kind}"].norm() for i in range(depth)])


# ---------------------------------------------------------------------------------------------
# ResidualStack

# (depth, d_model, pre_ln, batch dims, dtype)
_STACK_VISIBLE = [
    (3, 10, None, (4,), torch.float64),  # pre_ln left out: the signature's default, Pre-LN
    (3, 10, False, (4,), torch.float64),
    (5, 16, True, (2, 3), torch.float32),
    (5, 16, False, (2, 3), torch.float32),
]
_STACK_HIDDEN = [
    (7, 24, True, (3, 5), torch.float64),
    (7, 24, False, (3, 5), torch.float64),
    (12, 20, True, (6,), torch.float32),
    (12, 20, False, (6,), torch.float32),
    (2, 33, False, (2, 2, 3), torch.float64),
]


def _stack_case(depth, d, pre_ln, batch, dtype, seed, what):
    g = gen(seed)
    state = random_state(depth, d, g, dtype)
    x = rand(*batch, d, dtype=dtype, mean=0.5, std=2.0, generator=g)
    kw = {} if pre_ln is None else {"pre_ln": pre_ln}
    steps = [new("stack", "ResidualStack", depth, d, state=state, dtype=dtype, **kw), let("x", x)]
    if what == "forward":
        steps.append(call("y", ref("stack"), ref("x")))
        outputs = ["y", "x"]
        if pre_ln is None:  # the same stack with pre_ln=True: its own mistakes are named first
            steps += [
                new("stack_explicit", "ResidualStack", depth, d, pre_ln=True, state=state, dtype=dtype),
                call("y_explicit", ref("stack_explicit"), ref("x")),
            ]
            outputs.append("y_explicit")
    else:
        steps += [call("g", "block_grad_norms", ref("stack"), ref("x")), call("y", ref("stack"), ref("x"))]
        outputs = ["g", "y", "x"]
    label = msg(
        "{module} with a random state dict, x {shape} {dtype}",
        module=f"ResidualStack(depth={depth}, d_model={d}"
        + ("" if pre_ln is None else f", pre_ln={pre_ln}")
        + ")",
        shape=str(tuple(x.shape)),
        dtype=str(dtype),
    )
    return Case(
        label,
        steps,
        outputs,
        facts=dict(
            state=state, depth=depth, x=x, pre_ln=True if pre_ln is None else pre_ln, default=pre_ln is None
        ),
        size=depth * d * x.numel(),
    )


def _stack_cases(hidden):
    specs = _STACK_HIDDEN if hidden else _STACK_VISIBLE
    return [
        _stack_case(*spec, seed=4000 + 17 * i + (900 if hidden else 0), what="forward")
        for i, spec in enumerate(specs)
    ]


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype != torch.float64 else dict(rtol=1e-7, atol=1e-9)


def y_double(out, name="y"):
    """The stack's output `name` in float64 (empty when it is not a tensor)."""
    y = out.get(name)
    return y.double() if isinstance(y, torch.Tensor) else torch.empty(0)


STACK_OUTPUT = msg("{name} output", name="ResidualStack")


def _stack_judge(case, out):
    f = case.facts
    state, depth, x, pre_ln = f["state"], f["depth"], f["x"], f["pre_ln"]
    exp = ref_forward(state, depth, x, pre_ln)
    if f.get("default"):  # built without pre_ln, and the same stack built with pre_ln=True
        if not _judge.close(y_double(out, "y_explicit"), exp, **_tol(x.dtype)):
            out = {**out, "y": out.get("y_explicit")}  # the stack's own mistakes are named first
        elif not _judge.close(y_double(out), exp, **_tol(x.dtype)):
            post = _judge.close(y_double(out), ref_forward(state, depth, x, False), **_tol(x.dtype))
            raise CheckFailure(
                msg(
                    "ResidualStack(depth, d_model), built without pre_ln, does not compute what "
                    "ResidualStack(depth, d_model, pre_ln=True) computes."
                )
                + got_expected(
                    "Post-LN" if post else _judge._fmt(y_double(out)), "Pre-LN" if post else _judge._fmt(exp)
                )
                + hint_line(
                    N_("the signature's default is pre_ln=True: __init__(self, depth, d_model, pre_ln=True)")
                )
            )
    y = expect_tensor(out["y"], STACK_OUTPUT, shape=exp.shape)
    _judge.expect_dtype(y, x.dtype, STACK_OUTPUT)
    want, other = ("Pre-LN", "Post-LN") if pre_ln else ("Post-LN", "Pre-LN")
    hint = diagnose(
        y,
        [
            (
                msg(
                    "Pre-LN and Post-LN are swapped: pre_ln={pre_ln} asks for {want}, yours computes {other}. "
                    "Pre-LN is h + linears[i](norms[i](h)) (the norm inside the branch); Post-LN is "
                    "norms[i](h + linears[i](h)) (the norm after the sum)",
                    pre_ln=str(pre_ln),
                    want=want,
                    other=other,
                ),
                lambda: ref_forward(state, depth, x, not pre_ln),
            ),
            (
                N_(
                    "the residual path is missing: each block adds its branch to h (h + ...), it does not replace h"
                ),
                lambda: ref_forward(state, depth, x, pre_ln, "no_residual"),
            ),
            (
                N_("the head is missing: forward(x) = head(h_depth)"),
                lambda: ref_forward(state, depth, x, pre_ln, "no_head"),
            ),
            (
                N_("every block uses norms[0] and linears[0]: block i must use norms[i] and linears[i]"),
                lambda: ref_forward(state, depth, x, pre_ln, "shared"),
            ),
        ],
    )
    assert_close(
        y.double(),
        exp,
        STACK_OUTPUT,
        hint
        or msg(
            "block i is {block}, for i = 0..depth-1, then head(h)",
            block="h + linears[i](norms[i](h))" if pre_ln else "norms[i](h + linears[i](h))",
        ),
        **_tol(x.dtype),
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(
            msg("ResidualStack modified its input x in place: use out-of-place ops (h = h + ...)")
        )


# ---------------------------------------------------------------------------------------------
# block_grad_norms

_GRAD_VISIBLE = [
    (4, 12, True, (5,), torch.float64),
    (4, 12, False, (5,), torch.float64),
    (6, 16, True, (3, 4), torch.float32),
    (6, 16, False, (3, 4), torch.float32),
]
_GRAD_HIDDEN = [
    (9, 20, True, (7,), torch.float64),
    (9, 20, False, (7,), torch.float64),
    (12, 24, True, (2, 6), torch.float32),
    (12, 24, False, (2, 6), torch.float32),
]


def _grad_cases(hidden):
    specs = _GRAD_HIDDEN if hidden else _GRAD_VISIBLE
    return [
        _stack_case(*spec, seed=5000 + 23 * i + (900 if hidden else 0), what="grads")
        for i, spec in enumerate(specs)
    ]


def _grad_judge(case, out):
    f = case.facts
    state, depth, x, pre_ln = f["state"], f["depth"], f["x"], f["pre_ln"]
    exp = ref_block_grad_norms(state, depth, x, pre_ln)
    got = out["g"]
    if isinstance(got, (list, tuple)) and all(isinstance(v, (float, torch.Tensor)) for v in got):
        raise CheckFailure(
            msg(
                "block_grad_norms should return one tensor of shape ({depth},), got a {type} of {n} values",
                depth=str(depth),
                type=type(got).__name__,
                n=str(len(got)),
            )
            + hint_line(N_("torch.stack the norms"))
        )
    got = expect_tensor(got, "block_grad_norms(stack, x)")
    if tuple(got.shape) == (depth + 1,):
        raise CheckFailure(
            msg(
                "block_grad_norms returned {n} norms, expected {depth} (one per block).",
                n=str(depth + 1),
                depth=str(depth),
            )
            + hint_line(N_("only linears[i].weight for i in range(depth): the head is not a block"))
        )
    expect_tensor(got, "block_grad_norms(stack, x)", shape=(depth,))
    fwd = ref_forward(state, depth, x, pre_ln)
    stack_ok = isinstance(out["y"], torch.Tensor) and _judge.close(out["y"].double(), fwd, **_tol(x.dtype))
    hint = diagnose(
        got.double(),
        [
            (
                N_("these are the norms of linears[i].bias.grad: take linears[i].weight.grad"),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, kind="bias"),
            ),
            (
                N_(
                    "the norms are in reverse order: entry i is block i (linears[i]), from the input to the output"
                ),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln).flip(0),
            ),
            (
                N_(
                    "these are the gradients of the LayerNorms (norms[i].weight.grad): take linears[i].weight.grad"
                ),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, param="norms"),
            ),
            (
                N_(
                    "these are squared norms: the Frobenius norm is the square root of the sum of squares "
                    "(tensor.norm())"
                ),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln) ** 2,
            ),
            (
                N_("the loss is stack(x).pow(2).sum(): use .mean()"),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, loss="sum"),
            ),
            (
                N_("the loss is stack(x).mean(): square first, stack(x).pow(2).mean()"),
                lambda: ref_block_grad_norms(state, depth, x, pre_ln, loss="no_square"),
            ),
            (
                N_("these are the norms of the weights themselves, not of their gradients (.weight.grad)"),
                lambda: torch.stack([state[f"linears.{i}.weight"].double().norm() for i in range(depth)]),
            ),
            (
                N_(
                    "the gradients were accumulated twice (two backward passes?): one forward and one backward"
                ),
                lambda: 2 * ref_block_grad_norms(state, depth, x, pre_ln),
            ),
        ],
    )
    if not hint and not stack_ok:
        hint = N_(
            "your ResidualStack's forward is not right (see its own self-check): block_grad_norms "
            "runs your stack, so fix ResidualStack first"
        )
    assert_close(
        got.double(),
        exp,
        "block_grad_norms(stack, x)",
        hint
        or N_(
            "one forward and backward of stack(x).pow(2).mean(), then "
            "[stack.linears[i].weight.grad.norm() for i in range(depth)], stacked"
        ),
        rtol=1e-3 if x.dtype != torch.float64 else 1e-6,
        atol=1e-6 if x.dtype != torch.float64 else 1e-10,
    )
    if not _judge.close(out["x"], x):
        raise CheckFailure(msg("block_grad_norms modified its input x in place"))


# ---------------------------------------------------------------------------------------------

QUESTIONS = _core.by_name(
    Question("ResidualStack", _stack_cases, _stack_judge),
    Question("block_grad_norms", _grad_cases, _grad_judge, needs=("ResidualStack",)),
)

check = _core.lesson_check(QUESTIONS, "ResidualStack")
