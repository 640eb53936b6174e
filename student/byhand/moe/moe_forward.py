"""The check of `moe_forward` (lesson 13_mixture_of_experts): the numbers against the per-token loop,
and the dispatch by what it does where the answer runs (`run_moe`: the rows each expert is called
on, the largest tensor the call creates): every expert run on every token, one call per token, or a
tokens x experts x d_model tensor fails with a hint saying so."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._core import Case, calling, gen, got_expected, graded, helper, hint_line
from .._judge import CheckFailure, inputs_unchanged
from ..flash_attention import observe
from ..i18n import N_, msg
from ._shared import F64, compare, expert_state, real_inputs, ref_moe, ref_route

EARLIER = ("route",)  # the reference when the student's fails its own check: one mistake, one question

# ---------------------------------------------------------------------------------------------
# Where the answer runs: experts that count their rows, and the observer (lesson 10's, imported from
# its package, `from ..flash_attention import`, the form grade.py follows to the files of this
# lesson's checks version)


class CountingExpert(torch.nn.Module):
    """silu(x @ w_in + b_in) @ w_out, (n, d) -> (n, d); records the rows of every call."""

    def __init__(self, w_in, b_in, w_out, rows):
        super().__init__()
        self.w_in = torch.nn.Parameter(w_in.clone(), requires_grad=False)
        self.b_in = torch.nn.Parameter(b_in.clone(), requires_grad=False)
        self.w_out = torch.nn.Parameter(w_out.clone(), requires_grad=False)
        self.rows = rows

    def forward(self, x):
        self.rows.append(int(x.shape[0]) if x.dim() > 1 else 1)
        return F.silu(x @ self.w_in + self.b_in) @ self.w_out  # (n, d) x (d, h) -> (n, h) -> (n, d)


def run_moe(fn, k, x, w_gate, states, **kwargs):
    """Call the answer's moe_forward with counting experts under the observer. Returns (y, the rows
    of each call per expert, [largest elements, shape, op, dtype])."""
    rows = [[] for _ in states]
    experts = [CountingExpert(*s, rows=r) for s, r in zip(states, rows)]
    with torch.no_grad():
        y, largest, _, _ = observe(fn, x, w_gate, experts, k, **kwargs)
    return y, rows, largest


# ---------------------------------------------------------------------------------------------
# Cases


def _specs(hidden):
    # (T, d, E, k, normalize (None: not passed), the last expert gets no token (True) or one ("one"),
    # dtype); the experts' hidden width is d + 1
    if not hidden:
        return [
            (24, 8, 6, 2, True, "one", torch.float32),
            (30, 6, 5, 2, False, False, F64),
            (20, 7, 4, 3, True, True, F64),
            (40, 8, 8, 2, None, False, torch.float32),
        ]
    return [
        (33, 9, 7, 2, False, True, torch.float32),
        (25, 5, 6, 3, True, False, F64),
    ]


def budget(t, d, e, k, h):
    """Elements one new tensor may hold: what grouped dispatch needs (the assignments' rows, the
    router's T x E, one-hots of the assignments, the experts' weights stacked)."""
    return max(t * k * max(e, h), t * max(d, e), e * d * h)


def _moe_cases(hidden):
    cases = []
    for i, (t, d, e, k, normalize, idle, dt) in enumerate(_specs(hidden)):
        g = gen(13300 + 29 * i + (700 if hidden else 0))
        h = d + 1
        assert t * e * d > budget(t, d, e, k, h), "a (T, E, d) tensor must be over the budget"
        x, w = real_inputs(t, d, e, g, dt)
        if idle:  # the last expert gets no token: positive x, a very negative column
            x = x.abs() + 0.1
            w[:, -1] = -10.0
        if idle == "one":  # ... but token 0, turned negative, prefers it above all
            x[0] = -x[0]
        states = expert_state(d, h, e, g, dt)
        kwargs = {} if normalize is None else {"normalize": normalize}
        inputs = dict(x=x, w_gate=w, states=states)
        steps = calling("r", helper("moe.run_moe"), inputs, graded("moe_forward"), k, **kwargs)
        counts = torch.bincount(ref_route(x, w, k, True)[1].reshape(-1), minlength=e)
        label = msg(
            "x {x} {dtype}, E={e} experts (n, {d}) -> (n, {d}), k={k}, {normalize}",
            x=(t, d),
            dtype=str(dt)[6:],
            e=e,
            d=d,
            k=k,
            normalize=N_("normalize not given (default True)")
            if normalize is None
            else f"normalize={normalize}",
        )
        if idle == "one":
            label = msg("{label}, expert {n} gets one token", label=label, n=e - 1)
        elif idle:
            label = msg("{label}, expert {n} gets no token", label=label, n=e - 1)
        facts = dict(
            x=x,
            w_gate=w,
            states=states,
            k=k,
            normalize=normalize is not False,
            dt=dt,
            counts=counts.tolist(),
            h=h,
        )
        cases.append(Case(label, steps, ["r", "x", "w_gate"], facts=facts, size=t * e * d))
    return cases


# ---------------------------------------------------------------------------------------------
# The judge


def _mistakes(x, w, s, k, normalize):
    return [
        (
            N_(
                "each output is not weighted: multiply each expert's output by its token's router weight before "
                "adding it back"
            ),
            lambda: ref_moe(x, w, s, k, normalize, unweighted=True),
        ),
        (
            N_(
                "the weight multiplies the expert's input: y = w * expert(x), the weight scales the expert's "
                "output (an expert is not linear)"
            ),
            lambda: ref_moe(x, w, s, k, normalize, weight_inside=True),
        ),
        (
            N_("your weights are not renormalised: pass normalize on to route"),
            lambda: ref_moe(x, w, s, k, normalize, renorm=False),
        ),
        (
            N_("your weights are renormalised although normalize=False: pass normalize on to route"),
            lambda: ref_moe(x, w, s, k, normalize, renorm=True),
        ),
        (
            N_("equal probabilities are broken toward the higher expert index: check route"),
            lambda: ref_moe(x, w, s, k, normalize, ties="high"),
        ),
    ]


def _judge_rows(rows, counts, t):
    """Each expert called once on exactly its tokens (an expert with no token: not at all, or on 0
    rows)."""
    got = [[n for n in r if n] for r in rows]
    if all(sum(r) == n and len(r) <= 1 for r, n in zip(got, counts)):
        return
    if all(sum(r) >= t for r in got):
        hint = N_(
            "your answer runs every expert on every token and masks (or weights) the outputs: that spends E/k "
            "times the FLOPs. Group the assignments by expert (argsort, bincount, split) and call each expert "
            "on x[its tokens] only"
        )
    elif any(len(r) > 1 for r in got):
        hint = N_(
            "an expert is called more than once (one call per token or per slot): call each expert once, on "
            "all the tokens routed to it (argsort the flat expert ids, then split by bincount)"
        )
    else:
        hint = N_("call each expert on exactly the tokens routed to it (the k choices of route), each once")
    raise CheckFailure(
        msg("moe_forward does not call each expert once on exactly its tokens.")
        + got_expected(
            msg("rows per call, by expert: {rows}", rows=str(got)),
            msg("one call per expert on {counts} rows", counts=str(counts)),
        )
        + hint_line(hint)
    )


def _judge_memory(largest, f):
    x, e, k, h = f["x"], len(f["states"]), f["k"], f["h"]
    t, d = x.shape
    if not isinstance(largest, (list, tuple)) or len(largest) != 4:
        raise CheckFailure(
            msg("the grader could not observe {who} (no allocation report came back)", who="moe_forward")
        )
    n, shape, op, dtype = largest
    limit = budget(t, d, e, k, h)
    if int(n) <= limit:
        return
    hint = (
        N_(
            "your answer builds a tokens x experts x d_model tensor (every expert's output for every token): "
            "compute each expert's output for its own tokens only and add it back with index_add_"
        )
        if int(n) >= t * e * min(d, h)
        else N_("keep every tensor to the size of the assignments (T * k rows) or of x")
    )
    raise CheckFailure(
        msg("moe_forward creates a tensor larger than grouped dispatch needs.")
        + got_expected(
            msg(
                "a new tensor of {n} elements, shape {shape}, {dtype}, made by {op}",
                n=int(n),
                shape=tuple(shape),
                dtype=dtype,
                op=f"aten.{op}",
            ),
            msg("at most {n} elements per tensor", n=limit),
        )
        + hint_line(hint)
    )


def _moe_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (tuple, list)) or len(r) != 3:
        raise CheckFailure(msg("the grader could not run {who} (no results came back)", who="moe_forward"))
    y, rows, largest = r
    x, w, s, k, normalize, dt = f["x"], f["w_gate"], f["states"], f["k"], f["normalize"], f["dt"]
    compare(
        y,
        ref_moe(x, w, s, k, normalize),
        dt,
        msg("{name} output", name="moe_forward"),
        _mistakes(x, w, s, k, normalize),
        N_("y[t] = sum over token t's k experts of weight * expert(x[t]), weights and experts from route"),
    )
    if not isinstance(rows, (list, tuple)) or len(rows) != len(s):
        raise CheckFailure(msg("the grader could not run {who} (no results came back)", who="moe_forward"))
    _judge_rows(rows, f["counts"], x.shape[0])
    _judge_memory(largest, f)
    inputs_unchanged(out, f, ("x", "w_gate"), "moe_forward")
