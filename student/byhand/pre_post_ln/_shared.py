"""Lesson 04_pre_post_ln: what its exercises share: the float64 references of the stack (in the
judge's process), the case builder and the tolerances."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .._core import Case, call, gen, let, new, rand, ref
from ..i18n import msg

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


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype != torch.float64 else dict(rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# The reference answers, as the answer cells define them: put in place of a student's answer that
# fails its own check while a later question's cases run (byhand._depends)


class ReferenceResidualStack(torch.nn.Module):
    def __init__(self, depth, d_model, pre_ln=True):
        super().__init__()
        self.pre_ln = pre_ln
        self.norms = torch.nn.ModuleList([torch.nn.LayerNorm(d_model) for _ in range(depth)])
        self.linears = torch.nn.ModuleList([torch.nn.Linear(d_model, d_model) for _ in range(depth)])
        self.head = torch.nn.Linear(d_model, d_model)

    def forward(self, x):
        h = x
        for norm, linear in zip(self.norms, self.linears):
            h = h + linear(norm(h)) if self.pre_ln else norm(h + linear(h))
        return self.head(h)
