"""The check of `SwiGLU` (lesson 09_modern_block): its catalogued mistakes, its cases and its judge
(the reference, `ref_swiglu`, is in `_shared.py`: the block's runs it too)."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, let, new, rand, ref
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import ReferenceSwiGLU, _compare, _module, _raised, ref_swiglu, swiglu_state

REFERENCE = ReferenceSwiGLU  # what replaces an answer that fails (byhand._depends)


def _swiglu_mistakes(s, x):
    return [
        (
            N_(
                "w1 and w3 are swapped: the SiLU goes on w1(x), and w3(x) is the linear branch it multiplies: "
                "w2(silu(w1(x)) * w3(x))"
            ),
            lambda: ref_swiglu(s, x, swap=True),
        ),
        (
            N_("your gate is sigmoid(w1(x)) (that is GLU): SwiGLU's is silu(z) = z * sigmoid(z) (F.silu)"),
            lambda: ref_swiglu(s, x, gate="sigmoid"),
        ),
        (
            N_("your gate is relu(w1(x)) (that is ReGLU): SwiGLU's is silu(w1(x)) (F.silu)"),
            lambda: ref_swiglu(s, x, gate="relu"),
        ),
        (
            N_("your gate is gelu(w1(x)) (that is GEGLU): SwiGLU's is silu(w1(x)) (F.silu)"),
            lambda: ref_swiglu(s, x, gate="gelu"),
        ),
        (
            N_("the gate's other branch w3(x) is missing: w2(silu(w1(x)) * w3(x))"),
            lambda: ref_swiglu(s, x, no_gate=True),
        ),
        (
            N_("the SiLU is applied to the product: silu(w1(x)) * w3(x), the SiLU on w1(x) only"),
            lambda: ref_swiglu(s, x, outer=True),
        ),
        (
            N_("the SiLU is applied to both branches: only w1(x) goes through it, w3(x) stays linear"),
            lambda: ref_swiglu(s, x, both=True),
        ),
    ]


def _swiglu_specs(hidden):
    # (x shape, d_ff, dtype)
    if not hidden:
        return [
            ((2, 5, 12), 20, torch.float32),
            ((3, 4, 8), 24, torch.float64),
            ((7, 16), 44, torch.float64),
            ((2, 3, 6, 10), 26, torch.float32),
        ]
    return [
        ((5, 12), 30, torch.float64),
        ((2, 2, 3, 8), 20, torch.float32),
        ((4, 9, 24), 64, torch.float32),
        ((3, 6, 14), 36, torch.float64),
    ]


def _swiglu_cases(hidden):
    cases = []
    for i, (shape, d_ff, dt) in enumerate(_swiglu_specs(hidden)):
        g = gen(9100 + 19 * i + (900 if hidden else 0))
        d = shape[-1]
        s = swiglu_state(d, d_ff, g, dt)
        x = rand(*shape, dtype=dt, mean=0.3, std=2.0, generator=g)
        steps = [
            new("ffn", "SwiGLU", d, d_ff, state=s, dtype=dt),
            let("x", x),
            call("out", ref("ffn"), ref("x")),
        ]
        label = msg(
            "{module}, x {shape}", module=_module(f"SwiGLU(d_model={d}, d_ff={d_ff})", dt), shape=tuple(shape)
        )
        facts = dict(s=s, x=x, dt=dt, raised_hint=_raised("", shape))
        cases.append(Case(label, steps, ["out", "x"], facts=facts, size=x.numel() * d_ff))
    return cases


def _swiglu_judge(case, out):
    s, x, dt = case.facts["s"], case.facts["x"], case.facts["dt"]
    _compare(
        out["out"],
        ref_swiglu(s, x),
        dt,
        msg("{name} output", name="SwiGLU"),
        _swiglu_mistakes(s, x),
        N_("forward(x) = w2(silu(w1(x)) * w3(x)), with the module's own w1, w2, w3"),
    )
    if not torch.equal(out["x"], x):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="SwiGLU", name="x"))
