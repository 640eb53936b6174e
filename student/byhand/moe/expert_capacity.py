"""The check of `expert_capacity` (lesson 13_mixture_of_experts): ceil(capacity_factor * k * T / E),
with its catalogued mistakes (floor or round instead of ceil, k left out)."""

from __future__ import annotations

from .._core import Case, call, got_expected, hint_line
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import ref_capacity


def _specs(hidden):
    # (n_tokens, n_experts, k, capacity_factor): factors exact in binary, so the product is exact
    if not hidden:
        return [
            (8, 4, 1, 1.0),
            (8, 4, 1, 1.25),
            (10, 3, 1, 1.0),
            (10, 4, 2, 1.0),
            (9, 4, 2, 0.5),
            (7, 4, 1, 1.25),
            (6, 2, 2, 1.25),  # C = 8 > T: the formula has no min(C, T)
        ]
    return [(12, 5, 2, 2.0), (30, 8, 2, 1.25), (6, 4, 3, 0.75), (5, 8, 1, 1.0), (5, 2, 2, 2.0)]


def _capacity_cases(hidden):
    cases = []
    for t, e, k, cf in _specs(hidden):
        label = msg("n_tokens={t}, n_experts={e}, k={k}, capacity_factor={cf}", t=t, e=e, k=k, cf=cf)
        steps = [call("c", "expert_capacity", t, e, k, cf)]
        cases.append(Case(label, steps, ["c"], facts=dict(t=t, e=e, k=k, cf=cf), size=1))
    return cases


def _capacity_judge(case, out):
    f = case.facts
    got = out["c"]
    exp = ref_capacity(f["t"], f["e"], f["k"], f["cf"])
    if isinstance(got, bool) or not isinstance(got, int):
        raise CheckFailure(
            msg("expert_capacity should return an int.")
            + got_expected(f"{got!r:.40}", exp)
            + hint_line(N_("math.ceil returns an int; a tensor or a float is not a number of slots"))
        )
    if got == exp:
        return
    value = f"{f['cf']} * {f['k']} * {f['t']} / {f['e']} = {f['cf'] * f['k'] * f['t'] / f['e']:g}"
    down = N_(
        "your capacity is rounded down (math.floor, int() or round() give this here): it is the ceiling, "
        "math.ceil, so the slots cover the average"
    )
    hint = down if got == ref_capacity(f["t"], f["e"], f["k"], f["cf"], rounding="floor") else ""
    if not hint and got == ref_capacity(f["t"], f["e"], f["k"], f["cf"], with_k=False):
        hint = N_(
            "k is missing: T tokens with k choices each make k * T assignments to share among E experts"
        )
    raise CheckFailure(
        msg("expert_capacity is not what it should be.")
        + got_expected(got, msg("{n} = ceil({value})", n=exp, value=value))
        + hint_line(hint or N_("capacity = ceil(capacity_factor * k * n_tokens / n_experts)"))
    )
