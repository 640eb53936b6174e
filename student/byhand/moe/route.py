"""The check of `route` (lesson 13_mixture_of_experts): its cases, its catalogued mistakes (no
renormalisation, renormalising when normalize=False, the softmax after the top-k, ties toward the
higher index, the experts listed by index, the softmax over the tokens) and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, got_expected, hint_line, let, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor, inputs_unchanged
from ..i18n import N_, msg
from ._shared import F64, compare, integer_inputs, real_inputs, ref_route

SIGNATURE = "route(x, w_gate, k, normalize=True) -> (weights, experts)"


def reference_route(x, w_gate, k, normalize=True):
    """The lesson's route, in the input's dtype and on its device: what runs in place of a student's
    route that fails its own check, while moe_forward's cases run (byhand._depends)."""
    probs = torch.softmax(x @ w_gate, dim=-1)
    experts = torch.sort(probs, dim=-1, descending=True, stable=True).indices[..., :k]
    weights = probs.gather(-1, experts)
    if normalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts


REFERENCE = reference_route  # what replaces an answer that fails (byhand._depends)


def _specs(hidden):
    # (kind, T, d, E, k, normalize (None: not passed), dtype)
    if not hidden:
        return [
            ("hand", 4, 4, 4, 2, True, F64),
            ("int", 9, 5, 6, 2, True, torch.float32),
            ("int", 7, 4, 5, 3, False, F64),
            ("real", 11, 6, 8, 1, False, torch.float32),
            ("real", 10, 7, 4, 4, True, F64),
            ("real", 6, 3, 5, 2, None, torch.float32),
            ("int", 5, 2, 64, 3, True, torch.float32),  # E = 64: torch.sort without stable=True reorders ties
        ]
    return [
        ("int", 13, 3, 7, 2, False, torch.float32),
        ("int", 12, 6, 4, 1, True, F64),
        ("real", 17, 9, 6, 3, False, F64),
        ("real", 5, 8, 9, 2, True, torch.float32),
        ("int", 4, 3, 80, 2, False, F64),
    ]


def _inputs(kind, t, d, e, g, dt):
    if kind == "hand":  # the worked example: x = I, logits log of small integers
        table = [[4, 2, 1, 1], [1, 1, 1, 1], [1, 3, 3, 1], [1, 1, 2, 4]]
        return torch.eye(4, dtype=dt), torch.tensor(table, dtype=dt).log()
    return (integer_inputs if kind == "int" else real_inputs)(t, d, e, g, dt)


def _route_cases(hidden):
    cases = []
    for i, (kind, t, d, e, k, normalize, dt) in enumerate(_specs(hidden)):
        g = gen(13100 + 17 * i + (700 if hidden else 0))
        x, w = _inputs(kind, t, d, e, g, dt)
        kwargs = {} if normalize is None else {"normalize": normalize}
        steps = [let("x", x), let("w_gate", w), call("r", "route", ref("x"), ref("w_gate"), k, **kwargs)]
        label = msg(
            "x {x} {dtype}, w_gate {w}, k={k}, {normalize}",
            x=tuple(x.shape),
            dtype=str(dt)[6:],
            w=tuple(w.shape),
            k=k,
            normalize=N_("normalize not given (default True)")
            if normalize is None
            else f"normalize={normalize}",
        )
        if kind == "int":
            label = msg("{label} (integer logits: ties)", label=label)
        elif kind == "hand":
            label = msg("{label} (the worked example)", label=label)
        facts = dict(x=x, w_gate=w, k=k, normalize=True if normalize is None else normalize, dt=dt)
        cases.append(Case(label, steps, ["r", "x", "w_gate"], facts=facts, size=t * e))
    return cases


def _pair(r):
    if not isinstance(r, (tuple, list)) or len(r) != 2:
        raise CheckFailure(
            msg("route should return a pair (weights, experts), got {got}", got=f"{r!r:.80}")
            + hint_line(msg("the signature is {signature}", signature=SIGNATURE))
        )
    return r


def _expert_mistakes(x, w, k, normalize):
    return [
        (
            N_(
                "equal probabilities are broken toward the higher expert index: sort with "
                "torch.sort(probs, dim=-1, descending=True, stable=True), which keeps equal values in index order"
            ),
            lambda: ref_route(x, w, k, normalize, ties="high")[1],
        ),
        (
            N_("your experts are listed by index: list each token's k experts most probable first"),
            lambda: ref_route(x, w, k, normalize, by_index=True)[1],
        ),
        (
            N_(
                "the softmax is over the tokens (dim 0): each token's probabilities are over the E experts, dim=-1"
            ),
            lambda: ref_route(x, w, k, normalize, dim=0)[1],
        ),
    ]


def _weight_mistakes(x, w, k, normalize):
    return [
        (
            N_(
                "your weights are not renormalised: with normalize=True divide the k probabilities by their sum, "
                "weights / weights.sum(-1, keepdim=True)"
            ),
            lambda: ref_route(x, w, k, normalize, renorm=False)[0],
        ),
        (
            N_(
                "your weights are renormalised although normalize=False: then they are the softmax probabilities "
                "themselves (Switch Transformer, DeepSeek's unnormalised variant)"
            ),
            lambda: ref_route(x, w, k, normalize, renorm=True)[0],
        ),
        (
            N_(
                "your softmax is over the k chosen logits (after the top-k): that renormalises them; the softmax "
                "goes over all E experts first, then the top-k picks"
            ),
            lambda: ref_route(x, w, k, normalize, after_topk=True)[0],
        ),
        (
            N_(
                "the softmax is over the tokens (dim 0): each token's probabilities are over the E experts, dim=-1"
            ),
            lambda: ref_route(x, w, k, normalize, dim=0)[0],
        ),
    ]


def _same_up_to_ties(got, exp, x, w):
    """The answer's experts carry, slot by slot, the same probabilities as the expected ones (and
    are valid, distinct indices): they differ only in the order of equal probabilities."""
    e = w.shape[-1]
    if got.min() < 0 or got.max() >= e or any(len(set(r)) != len(r) for r in got.tolist()):
        return False
    probs = torch.softmax(x.to(F64) @ w.to(F64), dim=-1)
    return torch.equal(probs.gather(-1, got), probs.gather(-1, exp))


def _route_judge(case, out):
    f = case.facts
    x, w, k, normalize, dt = f["x"], f["w_gate"], f["k"], f["normalize"], f["dt"]
    weights, experts = _pair(out["r"])
    inputs_unchanged(out, f, ("x", "w_gate"), "route")  # first: an x changed in place moves the logits
    exp_w, exp_e = ref_route(x, w, k, normalize)
    experts = expect_tensor(experts, msg("{name} of route", name="experts"), shape=exp_e.shape)
    if experts.dtype != torch.int64:
        swapped = isinstance(weights, torch.Tensor) and weights.dtype == torch.int64
        raise CheckFailure(
            msg("experts should be a long tensor (torch.int64) of expert indices.")
            + got_expected(experts.dtype, torch.int64)
            + hint_line(
                msg("the pair is in the other order: return (weights, experts), the weights first")
                if swapped
                else msg("the indices torch.sort or torch.topk return are long already")
            )
        )
    generic = msg(
        "experts[t] are the indices of token t's k most probable experts, most probable first, ties toward the "
        "lower index"
    )
    if not torch.equal(experts, exp_e):
        hint = diagnose(experts.to(F64), _expert_mistakes(x, w, k, normalize))
        if not hint and _same_up_to_ties(experts, exp_e, x, w):
            hint = N_(
                "your experts are right up to ties: among equal probabilities the order is yours (torch.topk "
                "promises none); sort with torch.sort(probs, dim=-1, descending=True, stable=True), which keeps "
                "equal values in index order, the lower index first"
            )
        assert_close(experts, exp_e, msg("{name} of route", name="experts"), hint or generic)
    generic_w = msg(
        "weights are the softmax probabilities (over the E experts) of the chosen experts, divided by their sum "
        "over the k when normalize"
    )
    compare(
        weights,
        exp_w,
        dt,
        msg("{name} of route", name="weights"),
        _weight_mistakes(x, w, k, normalize),
        generic_w,
    )
