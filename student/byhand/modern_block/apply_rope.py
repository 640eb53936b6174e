"""The check of `apply_rope` (lesson 09_modern_block): its catalogued mistakes, its cases and its
judge (the reference, `ref_rope`, is in `_shared.py`: grouped-query attention's runs it too)."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, let, rand, ref
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import F64, _compare, _raised, ref_rope, reference_apply_rope

REFERENCE = reference_apply_rope  # what replaces an answer that fails (byhand._depends)


def _rope_mistakes(x, pos, theta):
    L = x.shape[-2]
    out = [
        (
            N_(
                "your rotation uses the half-split layout, pairs (i, i + d/2) (rotate_half): this lesson rotates "
                "the interleaved pairs (2i, 2i+1), x[..., 0::2] with x[..., 1::2]"
            ),
            lambda: ref_rope(x, pos, theta, layout="half"),
        ),
        (
            N_(
                "the exponent is -i/d instead of -2i/d: the frequency of pair i is theta ** (-2i / d_head), "
                "i = 0 .. d_head/2 - 1 (torch.arange(0, d, 2) / d)"
            ),
            lambda: ref_rope(x, pos, theta, exponent="i/d"),
        ),
        (
            N_(
                "the exponent has the wrong sign: the frequencies theta ** (-2i / d_head) fall from 1 to about "
                "1/theta; yours grow"
            ),
            lambda: ref_rope(x, pos, theta, exponent="positive"),
        ),
        (
            N_("your rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos)"),
            lambda: ref_rope(x, pos, theta, sign=-1.0),
        ),
    ]
    # a mistake is named only where its output differs from the right one: positions 0 .. L-1 and
    # theta 10000 give the right rotation, so an answer slightly off there (float32 angles) is not
    # "ignoring" them
    if not torch.equal(
        torch.as_tensor(pos).to(torch.arange(L).dtype).broadcast_to(x.shape[:-1]),
        torch.arange(L).expand(x.shape[:-1]),
    ):
        out.append(
            (
                N_(
                    "your apply_rope ignores its positions argument (it uses 0 .. L-1): rotate by the positions given"
                ),
                lambda: ref_rope(x, torch.arange(L), theta),
            )
        )
    if theta != 10000.0:
        out.append(
            (
                N_(
                    "your apply_rope ignores theta (it uses 10000): the frequencies are theta ** (-2i / d_head)"
                ),
                lambda: ref_rope(x, pos, 10000.0),
            )
        )
    return out


def _rope_specs(hidden):
    # (x shape, positions kind, theta, dtype); "batched": one row of positions per sequence, (B, 1, L)
    # for x (B, H, L, d) or (B, L) for x (B, L, d); "long": positions around 1e5, where angles computed
    # in float32 are off by about 1e-2. The hidden cases repeat each kind with other data and sizes.
    if not hidden:
        return [
            ((3, 7, 8), "arange", 10000.0, torch.float32),
            ((2, 3, 5, 12), "offset", 10000.0, torch.float64),
            ((4, 6, 16), "random", 500.0, torch.float32),
            ((9, 10), "random", 100.0, torch.float64),
            ((2, 4, 11, 6), "batched", 10000.0, torch.float32),
            ((3, 5, 8), "batched", 100.0, torch.float64),
            ((2, 5, 16), "long", 500000.0, torch.float32),
            ((1, 2, 2, 3, 8), "random", 10000.0, torch.float64),
        ]
    return [
        ((9, 10), "arange", 10000.0, torch.float64),
        ((2, 4, 11, 6), "batched", 10000.0, torch.float32),
        ((4, 7, 6), "batched", 500.0, torch.float64),
        ((3, 5, 32), "random", 500000.0, torch.float64),
        ((2, 6, 2), "offset", 100.0, torch.float32),
        ((1, 2, 3, 4, 14), "random", 10000.0, torch.float64),
        ((3, 2, 6, 12), "long", 500000.0, torch.float32),
        ((2, 7, 10), "long", 10000.0, torch.float64),
    ]


FLOAT32_ANGLES = N_(
    "your angles lose precision at large positions (around 1e5 they are off by about 1e-2): compute positions * "
    "theta ** (-2i / d_head) and their cos and sin in float64 (positions.to(torch.float64)), then cast cos and "
    "sin to x.dtype"
)


def _positions_label(pos, kind):
    """The positions of a RoPE case, for its label: their shape, how they were drawn, the first few."""
    shape, first = tuple(pos.shape), f"{pos.reshape(-1)[:4].tolist()}"
    if kind == "arange":
        return msg("positions {shape} (arange)", shape=shape)
    if kind == "offset":
        return msg("positions {shape} (offset, {first}...)", shape=shape, first=first)
    if kind == "batched":
        return msg("positions {shape} (batched, {first}...)", shape=shape, first=first)
    if kind == "long":
        return msg("positions {shape} (long, {first}...)", shape=shape, first=first)
    return msg("positions {shape} (random, {first}...)", shape=shape, first=first)


def _rope_cases(hidden):
    cases = []
    for i, (shape, kind, theta, dt) in enumerate(_rope_specs(hidden)):
        g = gen(9000 + 17 * i + (900 if hidden else 0))
        L = shape[-2]
        x = rand(*shape, dtype=dt, mean=0.4, std=2.5, generator=g)
        if kind == "arange":
            pos = torch.arange(L)
        elif kind == "offset":
            pos = torch.arange(L) + 37  # e.g. new tokens after a cache of 37
        elif (
            kind == "batched"
        ):  # one row per sequence: (B, 1, L) against (B, H, L, d), (B, L) against (B, L, d)
            rows = (shape[0], 1, L) if len(shape) == 4 else (shape[0], L)
            pos = torch.randint(0, 300, rows, generator=g)
        elif kind == "long":
            pos = torch.randint(90_000, 130_000, (L,), generator=g)
        else:
            pos = torch.randint(0, 2000, (L,), generator=g)
        kw = {} if theta == 10000.0 else {"theta": theta}
        cases.append(
            Case(
                msg(
                    "x {shape} {dtype}, {positions}, theta={theta}",
                    shape=tuple(shape),
                    dtype=dt,
                    positions=_positions_label(pos, kind),
                    theta=f"{theta:g}",
                ),
                [let("x", x), let("pos", pos), call("out", "apply_rope", ref("x"), ref("pos"), **kw)],
                ["out", "x", "pos"],
                facts=dict(
                    x=x,
                    pos=pos,
                    theta=theta,
                    dt=dt,
                    kind=kind,
                    raised_hint=_raised(kind, shape),
                ),
                size=x.numel(),
            )
        )
    return cases


def _float32_angles(got, x, pos, theta) -> bool:
    """An output off by about what angles rounded to float32 give (positions times frequencies in
    float32: about 1e-2 radians at positions around 1e5): the rotation is right, its angles are not
    float64."""
    if not isinstance(got, torch.Tensor) or got.shape != x.shape:
        return False
    d = x.shape[-1]
    inv = (float(theta) ** (-torch.arange(0, d, 2, dtype=F64) / d)).float()
    ang = (pos.float()[..., None] * inv).to(F64)
    a, b = x.to(F64)[..., 0::2], x.to(F64)[..., 1::2]
    rounded = torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], dim=-1).flatten(-2)
    exp = ref_rope(x, pos, theta)
    err, scale = (got.to(F64) - exp).abs().max(), (rounded - exp).abs().max()
    return bool(torch.isfinite(err)) and float(err) <= 10 * float(scale) and float(scale) > 1e-6


def _rope_judge(case, out):
    f = case.facts
    x, pos, theta, dt = f["x"], f["pos"], f["theta"], f["dt"]
    exp = ref_rope(x, pos, theta)
    _compare(
        out["out"],
        exp,
        dt,
        msg("{name} output", name="apply_rope"),
        _rope_mistakes(x, pos, theta),
        FLOAT32_ANGLES
        if _float32_angles(out["out"], x, pos, theta)
        else N_(
            "rotate each pair (x[..., 2i], x[..., 2i+1]) at position p by the angle p * theta ** (-2i / d_head): "
            "(a, b) -> (a cos - b sin, a sin + b cos)"
        ),
    )
    if not torch.equal(out["x"], x) or not torch.equal(out["pos"], pos):
        raise CheckFailure(msg("{who} modified its input {name} in place", who="apply_rope", name="x"))
