"""The check of `capacity_keep` (lesson 13_mixture_of_experts): each expert keeps its first
`capacity` assignments in token order; catalogued mistakes: the last ones kept, the largest weights
kept, capacity + 1 or capacity - 1 kept."""

from __future__ import annotations

import torch

from .._core import Case, calling, gen, graded, helper, rand
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor, inputs_unchanged
from ..i18n import N_, msg
from ._shared import F64, ref_keep


def sliced(t):
    """The same values as a non-contiguous (T, k) view, as route's `top.indices[:, :k]` is."""
    return torch.cat([t, torch.zeros_like(t)], dim=1)[:, : t.shape[1]]


def run_keep(fn, n_experts, capacity, weights, experts):
    """The answer's capacity_keep on sliced views of the inputs; the views come back too, to see
    that the answer left them unchanged."""
    w, e = sliced(weights), sliced(experts)
    return fn(w, e, n_experts, capacity), w, e


def _distinct_choices(t, k, e, g, allowed=None):
    """(T, k) long: k different experts per token, from `allowed` (default all E)."""
    pool = torch.arange(e) if allowed is None else torch.tensor(allowed)
    rows = [pool[torch.randperm(len(pool), generator=g)[:k]] for _ in range(t)]
    return torch.stack(rows)


def _specs(hidden):
    # (kind, T, k, E, capacity, dtype of the weights)
    if not hidden:
        return [
            ("hand", 8, 1, 4, 2, torch.float32),
            ("hand", 8, 1, 4, 3, torch.float64),
            ("idle", 12, 2, 5, 5, torch.float32),
            ("one", 9, 1, 3, 3, torch.float64),
            ("random", 5, 2, 4, 0, torch.float32),
            ("random", 7, 3, 5, 7, torch.float64),
        ]
    return [
        ("random", 16, 2, 6, 4, torch.float32),
        ("idle", 10, 3, 6, 4, torch.float64),
        ("one", 6, 2, 4, 4, torch.float32),
    ]


def _keep_cases(hidden):
    cases = []
    for i, (kind, t, k, e, cap, dt) in enumerate(_specs(hidden)):
        g = gen(13500 + 31 * i + (700 if hidden else 0))
        if kind == "hand":
            experts = torch.tensor([[1], [0], [1], [1], [2], [1], [3], [1]])
        elif kind == "idle":
            experts = _distinct_choices(t, k, e, g, allowed=list(range(e - 1)))
        elif kind == "one":  # every token's first choice is expert 0
            experts = torch.cat(
                [torch.zeros(t, 1, dtype=torch.long), _distinct_choices(t, k - 1, e, g, list(range(1, e)))], 1
            )
        else:
            experts = _distinct_choices(t, k, e, g)
        weights = (
            rand(t, k, dtype=dt, mean=0.5, std=0.2, generator=g).abs().sort(dim=-1, descending=True).values
        )
        label = msg(
            "experts {experts}, n_experts={e}, capacity={cap}",
            experts=str(experts.tolist()) if t * k <= 12 else str(tuple(experts.shape)),
            e=e,
            cap=cap,
        )
        note = {"idle": N_("expert {n} gets no token"), "one": N_("every token chooses expert 0 first")}.get(
            kind
        )
        if note:
            label = msg("{label}, {note}", label=label, note=msg(note, n=e - 1))
        inputs = dict(weights=weights, experts=experts)
        steps = calling("r", helper("moe.run_keep"), inputs, graded("capacity_keep"), e, cap)
        facts = dict(weights=weights, experts=experts, e=e, cap=cap)
        cases.append(Case(label, steps, ["r"], facts=facts, size=t * k))
    return cases


def _keep_judge(case, out):
    f = case.facts
    w, ex, e, cap = f["weights"], f["experts"], f["e"], f["cap"]
    exp = ref_keep(w, ex, e, cap)
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 3:
        raise CheckFailure(msg("the grader could not run {who} (no results came back)", who="capacity_keep"))
    got = expect_tensor(r[0], msg("{name} output", name="capacity_keep"), shape=exp.shape)
    if got.dtype != torch.bool:
        raise CheckFailure(
            msg("capacity_keep should return a bool tensor, got {dtype}", dtype=str(got.dtype))
        )
    mistakes = [
        (
            N_(
                "your answer keeps each expert's last tokens: keep the first `capacity` in token order, drop the later ones"
            ),
            lambda: ref_keep(w, ex, e, cap, order="reversed"),
        ),
        (
            N_(
                "your answer keeps the largest weights: here the order is the tokens' (Switch, GShard), the weights do not decide"
            ),
            lambda: ref_keep(w, ex, e, cap, order="weights"),
        ),
        (
            N_(
                "your answer keeps capacity + 1 tokens per expert: keep an assignment when fewer than `capacity` came before it (<, not <=)"
            ),
            lambda: ref_keep(w, ex, e, cap, strict=False),
        ),
        (
            N_(
                "your answer keeps capacity - 1 tokens per expert: count the assignments before this one, not including it"
            ),
            lambda: ref_keep(w, ex, e, cap, count_self=True),
        ),
    ]
    generic = N_("kept[t, j] is True when fewer than `capacity` tokens before t chose expert experts[t, j]")
    assert_close(
        got,
        exp,
        msg("{name} output", name="capacity_keep"),
        diagnose(got.to(F64), [(h, lambda c=c: c().to(F64)) for h, c in mistakes]) or generic,
    )
    inputs_unchanged({"weights": r[1], "experts": r[2]}, f, ("weights", "experts"), "capacity_keep")
