"""The check of `load_balancing_loss` (lesson 13_mixture_of_experts): Switch Transformer's
E * sum_i f_i P_i, its value and its gradient in router_probs (`run_balance`, where the answer
runs); catalogued mistakes: f from the probabilities, counts not divided, divided by T instead of
T * k, E left out, no gradient."""

from __future__ import annotations

import torch

from .._core import Case, calling, gen, got_expected, graded, helper, hint_line, rand
from .._judge import OUT_OF_PLACE, CheckFailure, assert_close, inputs_unchanged
from ..i18n import N_, msg
from ._shared import F64, balance_grad, compare, ref_balance
from .capacity_keep import sliced


def run_balance(fn, n_experts, router_probs, experts):
    """The answer's loss, its gradient in router_probs (None when it has none), and the experts and
    router_probs it was given (to see that it left them unchanged: router_probs is a copy, so an
    in-place change shows only in the copy the answer got)."""
    p = router_probs.detach().clone().requires_grad_(True)
    e = sliced(experts)  # a non-contiguous view, as route's top.indices[:, :k] is
    loss = fn(p, e, n_experts)
    grad = None
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        (grad,) = torch.autograd.grad(loss.sum(), p, allow_unused=True)
    return loss, grad, e, p.detach()


def _specs(hidden):
    # (kind, T, E, k, dtype)
    if not hidden:
        return [
            ("routed", 20, 6, 2, torch.float32),
            ("routed", 15, 4, 1, torch.float64),
            ("balanced", 16, 8, 2, torch.float64),
            ("collapsed", 12, 5, 1, torch.float32),
            ("idle", 18, 7, 3, torch.float64),
        ]
    return [
        ("routed", 23, 9, 2, torch.float32),
        ("idle", 11, 5, 2, torch.float32),
        ("routed", 9, 3, 3, torch.float64),
    ]


def _balance_cases(hidden):
    cases = []
    for i, (kind, t, e, k, dt) in enumerate(_specs(hidden)):
        g = gen(13700 + 37 * i + (700 if hidden else 0))
        logits = rand(t, e, dtype=F64, mean=0.2, std=1.8, generator=g)
        if kind == "idle":
            logits[:, -1] -= 30.0  # the last expert is never chosen
        probs = torch.softmax(logits, -1)
        experts = torch.sort(probs, dim=-1, descending=True, stable=True).indices[:, :k]
        if kind == "balanced":
            experts = (torch.arange(t * k) % e).reshape(t, k)
        elif kind == "collapsed":
            experts = torch.zeros(t, k, dtype=torch.long)
        probs = probs.to(dt)
        steps = calling(
            "r",
            helper("moe.run_balance"),
            dict(router_probs=probs, experts=experts),
            graded("load_balancing_loss"),
            e,
        )
        label = msg(
            "router_probs {p} {dtype}, experts {x}, n_experts={e}", p=(t, e), dtype=str(dt)[6:], x=(t, k), e=e
        )
        note = {
            "balanced": N_("every expert gets the same count"),
            "collapsed": N_("every token to expert 0"),
            "idle": N_("one expert gets no token"),
        }.get(kind)
        if note:
            label = msg("{label}, {note}", label=label, note=note)
        facts = dict(router_probs=probs, experts=experts, e=e, dt=dt)
        cases.append(Case(label, steps, ["r", "router_probs", "experts"], facts=facts, size=t * e))
    return cases


def _balance_judge(case, out):
    f = case.facts
    p, ex, e, dt = f["router_probs"], f["experts"], f["e"], f["dt"]
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 4:
        raise CheckFailure(
            msg("the grader could not run {who} (no results came back)", who="load_balancing_loss")
        )
    loss, grad, given, given_probs = r
    mistakes = [
        (
            N_(
                "your f_i are the mean probabilities: f_i is the fraction of the T * k assignments that go to expert i, counted from experts (torch.bincount)"
            ),
            lambda: ref_balance(p, ex, e, f_from="probs"),
        ),
        (
            N_("your f_i are counts: divide them by the number of assignments, T * k, so that they sum to 1"),
            lambda: ref_balance(p, ex, e, f_from="counts_raw"),
        ),
        (
            N_(
                "your f_i are divided by T: there are T * k assignments (k per token), so f sums to 1 over the experts"
            ),
            lambda: ref_balance(p, ex, e, per="T"),
        ),
        (
            N_("the factor E (n_experts) is missing: E * sum_i f_i P_i is 1 for a uniform routing"),
            lambda: ref_balance(p, ex, e, factor=False),
        ),
    ]
    what = msg("{name} output", name="load_balancing_loss")
    compare(
        loss,
        ref_balance(p, ex, e),
        dt,
        what,
        mistakes,
        N_("E * sum_i f_i * P_i, f from the counts of experts, P the mean of router_probs over the tokens"),
    )
    if grad is None:
        raise CheckFailure(
            msg("load_balancing_loss has no gradient in router_probs.")
            + got_expected(msg("no gradient"), msg("d loss / d router_probs = E * f_i / T"))
            + hint_line(
                N_(
                    "compute P from router_probs with torch ops (no .item(), .detach() or numpy): the loss trains the router through P"
                )
            )
        )
    assert_close(
        grad.to(F64),
        balance_grad(p, ex, e),
        msg("the gradient of {name}", name="load_balancing_loss"),
        N_("the gradient flows through P only: f comes from counts, which have none"),
        rtol=1e-4 if dt != F64 else 1e-7,
        atol=1e-6,
    )
    inputs_unchanged({"experts": given}, f, ("experts",), "load_balancing_loss")
    if not torch.equal(given_probs, f["router_probs"]):  # exactly: a clamp_(min=1e-9) is below any tolerance
        raise CheckFailure(
            msg(
                "{who} modified its input {name} in place: {advice}",
                who="load_balancing_loss",
                name="router_probs",
                advice=OUT_OF_PLACE,
            )
        )
