"""The check of `sample_next` (lesson 07_decoder): its cases, the reference probabilities
(`sampling_probs`, its catalogued mistakes among its options) and its judge."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .._core import LINE, Case, call, gen, got_expected, hint_line, let, new, rand, ref
from .._judge import CheckFailure, expect_tensor
from ..i18n import N_, msg
from ._shared import F64, reference_sample_next

REFERENCE = reference_sample_next  # what replaces an answer that fails (byhand._depends)

# ---------------------------------------------------------------------------------------------
# sample_next: deterministic cases, and frequencies of many seeded draws

N_DRAWS = 20000
SIGMAS = 6.0  # a frequency within 6 standard deviations of its probability (false alarm < 1e-8)


def _sample_specs(hidden):
    # (name, logits row (V,), temperature, top_k, dtype)
    base = torch.tensor([1.2, -0.3, 0.5, 2.0, -1.0, 0.9, 0.0, 1.6])
    specs = [
        ("greedy", None, 0.0, None, torch.float32),
        ("top1", None, 1.7, 1, torch.float64),
        ("dist", base, 0.5, None, torch.float32),
        ("dist", base, 2.0, None, torch.float64),
        ("dist", base, 1.0, 3, torch.float32),
        ("dist", base, None, None, torch.float64),  # temperature left out: the default, 1.0
    ]
    if hidden:
        base2 = torch.tensor([0.3, 2.2, -0.7, 1.1, 1.9, -2.0, 0.8, 0.2, 1.4, -0.1, 0.6])
        specs += [
            ("greedy", None, 0.0, 5, torch.float64),
            ("dist", base2, 0.7, 4, torch.float64),
            ("dist", base2, 1.5, None, torch.float32),
            ("dist", base2 * 2, 1.0, 2, torch.float32),
        ]
    # last, so that the seeds of the cases above stay as they were
    specs.append(("tied", None, 0.0, None, torch.float64))
    if hidden:
        specs.append(("tied", None, 0.0, 3, torch.float32))
    return specs


N_TIED = 40  # rows whose largest logit is tied: sampling among 2 or 3 of them is never right 40 times


def _tied_logits(g, dt):
    """(N_TIED, 9) logits whose largest value is shared by 2 or 3 positions of each row, the first
    of them anywhere: temperature 0 returns that first one, as logits.argmax(-1) does; a sampler
    with a tiny temperature draws among them."""
    logits = rand(N_TIED, 9, generator=g, mean=0.5, std=2.0)
    for r in range(N_TIED):
        tied = torch.randperm(9, generator=g)[: 2 + r % 2]
        logits[r, tied] = logits[r].max() + 0.75
    return logits.to(dt)


def _sample_cases(hidden):
    cases = []
    for i, (kind, row, temp, top_k, dt) in enumerate(_sample_specs(hidden)):
        g = gen(7600 + 17 * i + (900 if hidden else 0))
        kw = dict(temperature=temp, top_k=top_k) if temp is not None else dict(top_k=top_k)
        if kind != "dist":
            if kind == "tied":
                logits = _tied_logits(g, dt)
                label = msg(
                    "logits {shape} {dtype}, the largest logit of each row tied at 2 or 3 positions, "
                    "temperature={temperature}, top_k={top_k}",
                    shape=tuple(logits.shape),
                    dtype=dt,
                    temperature=temp,
                    top_k=top_k,
                )
            else:
                logits = rand(5, 13, generator=g, mean=0.5, std=2.0).to(dt)  # (B, V)
                label = msg(
                    "logits {shape} {dtype}, temperature={temperature}, top_k={top_k}",
                    shape=tuple(logits.shape),
                    dtype=dt,
                    temperature=temp,
                    top_k=top_k,
                )
            cases.append(
                Case(
                    label,
                    [
                        let("logits", logits),
                        new("g", "torch.Generator"),
                        call("_", ref("g", "manual_seed"), 5 + i),
                        call("out", "sample_next", ref("logits"), generator=ref("g"), **kw),
                        call("out2", "sample_next", ref("logits"), generator=ref("g"), **kw),
                    ],
                    ["out", "out2", "logits"],
                    facts=dict(kind=kind, logits=logits, **kw),
                    # top_k=1 after the frequency cases: a top-k that keeps k - 1 logits keeps none
                    # here and raises, and the frequencies name that mistake
                    size=logits.numel() + (10**5 if top_k == 1 else 0),
                )
            )
            continue
        logits = row.to(dt)[None, :].expand(N_DRAWS, -1).contiguous()  # the same row, N_DRAWS times
        seed_ = 100 + i + (900 if hidden else 0)
        shown = f"temperature={temp}" if temp is not None else N_("temperature left out (default 1.0)")
        cases.append(
            Case(
                msg(
                    "logits {shape} {dtype}: {n} copies of the row {row}, {temperature}, top_k={top_k}, "
                    "generator seeded {seed}",
                    shape=(N_DRAWS, row.numel()),
                    dtype=dt,
                    n=N_DRAWS,
                    row=[round(x, 2) for x in row.tolist()],
                    temperature=shown,
                    top_k=top_k,
                    seed=seed_,
                ),
                [
                    let("logits", logits),
                    new("g", "torch.Generator"),
                    call("_", ref("g", "manual_seed"), seed_),
                    call("out", "sample_next", ref("logits"), generator=ref("g"), **kw),
                    call("_", ref("g", "manual_seed"), seed_),
                    call("again", "sample_next", ref("logits"), generator=ref("g"), **kw),
                    # the caller's logits after both calls: their first and last rows (all rows are
                    # the same row), not the whole (N_DRAWS, V) back over the wire
                    call("first", ref("logits", "__getitem__"), 0),
                    call("last", ref("logits", "__getitem__"), -1),
                ],
                ["out", "again", "first", "last"],
                facts=dict(
                    kind=kind,
                    dtype=dt,
                    row=row.to(F64),
                    temperature=1.0 if temp is None else temp,
                    top_k=top_k,
                    default=temp is None,
                ),
                size=1000 + row.numel(),
            )
        )
    return cases


def sampling_probs(row, temperature, top_k, after_softmax=False, multiply=False, smallest=False, renorm=True):
    """The distribution sample_next should draw from (float64), or that of a classic mistake."""
    row = row.to(F64)
    keep = torch.ones_like(row, dtype=torch.bool)
    if top_k is not None:
        keep = torch.zeros_like(keep)
        keep[row.topk(top_k, largest=not smallest).indices] = True
    if after_softmax:
        p = torch.softmax(row, -1)  # p / T, then renormalized by the sampler: T has no effect
    else:
        p = torch.softmax(row * temperature if multiply else row / temperature, -1)
    p = torch.where(keep, p, torch.zeros_like(p))
    return p / p.sum() if renorm else p


def _ranks(p, k):
    """The distribution of the rank (0..k-1) within the top-k list of a draw from `p`: what a top-k
    that returns the index into torch.topk's values, not the vocabulary id, draws."""
    out = torch.zeros_like(p)
    out[:k] = p.sort(descending=True).values[:k]
    return out


def _logits_unchanged(f, out):
    """The caller's logits after both calls, as given; else which in-place change reproduces them."""
    row = f["row"].to(f["dtype"])
    first, last = out["first"], out["last"]
    if all(
        isinstance(r, torch.Tensor) and r.shape == row.shape and torch.equal(r, row) for r in (first, last)
    ):
        return
    # logits /= temperature and masked_fill_ at each of the two calls
    changed = row.clone()
    for _ in range(2):
        changed = changed / f["temperature"]
        if f["top_k"] is not None:
            changed = changed.masked_fill(changed < changed.topk(f["top_k"]).values[-1], -math.inf)
    same = isinstance(first, torch.Tensor) and first.shape == row.shape
    hint = (
        N_(
            "your sample_next divides (and masks) the caller's logits in place, logits /= temperature or "
            "masked_fill_: each call changes them again. Compute new tensors: logits = logits / "
            "temperature, logits.masked_fill(...)"
        )
        if same and first.dtype == row.dtype and torch.equal(first, changed)
        else ""
    )
    raise CheckFailure(
        msg("{who} modified its input {name} in place", who="sample_next", name="logits")
        + got_expected(
            f"logits[0] = {[round(x, 4) for x in first.tolist()] if same else repr(first)[:80]}",
            f"logits[0] = {[round(x, 4) for x in row.tolist()]}",
        )
        + (hint_line(hint) if hint else "")
    )


def _expect_samples(got, b, what):
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (b, 1):
        raise CheckFailure(
            msg("{what} has the wrong shape.", what=what)
            + got_expected(tuple(got.shape), (b,))
            + hint_line(N_("torch.multinomial(probs, 1) gives (B, 1): take [:, 0] (or .squeeze(-1))"))
        )
    got = expect_tensor(got, what, shape=(b,))
    if got.dtype != torch.int64:
        raise CheckFailure(
            msg("{what} should be token ids.", what=what)
            + got_expected(got.dtype, N_("torch.int64 (a LongTensor)"))
        )
    return got


# the temperatures a wrong default may have (0.8 and 0.7 most often): 0.05 to 3 by 0.05, 1.0 left out
OTHER_DEFAULTS = [t / 20 for t in range(1, 61) if t != 20]

SAMPLE_DEFAULT = N_(
    "the default temperature should be 1.0: sample_next(logits, temperature=1.0, top_k=None, generator=None) "
    "draws from softmax(logits) when called without a temperature"
)


def _sample_judge(case, out):
    f = case.facts
    temp, top_k = f["temperature"], f["top_k"]
    if f["kind"] != "dist":
        logits = f["logits"]
        got = _expect_samples(out["out"], logits.shape[0], "sample_next")
        exp = logits.argmax(-1)  # the first of the largest logits when several are tied
        if not torch.equal(got, exp):
            why = (
                N_("temperature 0 means greedy: return logits.argmax(-1) (dividing by 0 is not defined)")
                if temp == 0
                else N_(
                    "top_k=1 keeps only the largest logit, so every draw is logits.argmax(-1): set the other "
                    "logits to -inf before the softmax (0 still gives them probability)"
                )
            )
            largest = logits == logits.max(-1, keepdim=True).values
            in_range = bool(((got >= 0) & (got < logits.shape[-1])).all())
            if f["kind"] == "tied" and in_range and bool(largest.gather(-1, got[:, None]).all()):
                why = N_(
                    "with the largest logit tied, your answer returned another of the tied positions than the "
                    "first, as a draw from softmax(logits / T) with a tiny T does. Temperature 0 draws nothing: "
                    "return logits.argmax(-1), the first of the largest"
                )
            if top_k == 1 and torch.equal(got, logits.argmin(-1)):
                why = N_("your top-k keeps the smallest logits: keep the k largest (torch.topk(logits, k))")
            raise CheckFailure(
                msg("sample_next is not deterministic here.")
                + got_expected(got.tolist(), exp.tolist())
                + hint_line(why)
            )
        if not torch.equal(out["out2"], exp):
            raise CheckFailure(
                msg("sample_next gave a different answer the second time on a deterministic input")
            )
        if not torch.equal(out["logits"], logits):
            raise CheckFailure(
                msg("{who} modified its input {name} in place", who="sample_next", name="logits")
            )
        return
    row = f["row"]
    v = row.numel()
    got = _expect_samples(out["out"], N_DRAWS, "sample_next")
    if got.min() < 0 or got.max() >= v:
        raise CheckFailure(
            msg("sample_next returned ids outside the vocabulary [0, {v}).", v=v)
            + LINE
            + msg(
                "got:      {got}",
                got=msg("min {low}, max {high}", low=int(got.min()), high=int(got.max())),
            )
            + hint_line(
                N_(
                    "sample one index of the last dim per row (the top-k indices "
                    "must be mapped back to vocabulary ids with gather)"
                )
            )
        )
    again = _expect_samples(out["again"], N_DRAWS, "sample_next")
    _logits_unchanged(f, out)  # before the generator: logits changed in place change the second draw
    if not torch.equal(got, again):
        raise CheckFailure(
            msg("sample_next gave different draws with the same seeded generator: it does not use it.")
            + hint_line(N_("pass generator=generator to torch.multinomial (or to torch.rand)"))
        )
    freq = torch.bincount(got, minlength=v).to(F64) / N_DRAWS
    exp = sampling_probs(row, temp, top_k)

    def fits(p):
        sd = torch.sqrt(p * (1 - p) / N_DRAWS)
        return bool(((freq - p).abs() <= SIGMAS * sd + 1e-12).all())

    if fits(exp):
        return
    mistakes = []
    if f.get("default"):  # called without a temperature
        greedy = F.one_hot(row.argmax(), v).to(F64)
        mistakes += [
            (SAMPLE_DEFAULT, p) for p in [greedy] + [sampling_probs(row, t, top_k) for t in OTHER_DEFAULTS]
        ]
    mistakes += [
        (
            N_(
                "the temperature is applied after the softmax (or not at all): softmax(logits) / T renormalizes "
                "to softmax(logits). Divide the logits: softmax(logits / T)"
            ),
            sampling_probs(row, temp, top_k, after_softmax=True),
        ),
        (
            N_(
                "the logits are multiplied by the temperature: divide them, softmax(logits / T) (a high T "
                "flattens the distribution)"
            ),
            sampling_probs(row, temp, top_k, multiply=True),
        ),
    ]
    if top_k is not None:
        mistakes += [
            (
                N_("your top-k keeps the k smallest logits: keep the k largest, torch.topk(logits, k)"),
                sampling_probs(row, temp, top_k, smallest=True),
            ),
            (
                N_("top-k is not applied: only the k largest logits may ever be drawn"),
                sampling_probs(row, temp, None),
            ),
            (
                N_(
                    "your top-k returns the position of the draw within the top-k list (0..k-1), not the "
                    "token's id: map it back to the vocabulary, ids.gather(-1, pick) with the indices "
                    "torch.topk returned"
                ),
                _ranks(exp, top_k),
            ),
        ]
        if top_k > 1:
            mistakes.append(
                (
                    msg(
                        "your top-k keeps only k - 1 = {k} logits: the k-th largest must stay too. "
                        "Mask the logits strictly below the k-th largest (logits < kth, not <=)",
                        k=top_k - 1,
                    ),
                    sampling_probs(row, temp, top_k - 1),
                )
            )
    hint = next((h for h, p in mistakes if fits(p)), "")
    if not hint and top_k is not None:
        kept = exp > 0
        outside = [i for i in range(v) if not kept[i] and freq[i] > 0]
        p_raw = sampling_probs(row, temp, top_k, renorm=False)
        best = int(p_raw.argmax())
        if outside:
            hint = msg(
                "tokens outside the top {k} were drawn ({tokens}): set the other logits to -inf "
                "before the softmax (setting them to 0 still gives them probability)",
                k=top_k,
                tokens=outside,
            )
        elif abs(freq[best] - p_raw[best]) <= SIGMAS * math.sqrt(p_raw[best] * (1 - p_raw[best]) / N_DRAWS):
            hint = N_(
                "your top-k probabilities are not renormalized: the kept tokens must be drawn with "
                "p_i / (sum of the kept p), so they sum to 1 (softmax over the k kept logits only)"
            )
    raise CheckFailure(
        msg("sample_next draws with the wrong frequencies ({n} draws).", n=N_DRAWS)
        + got_expected(
            [round(x, 3) for x in freq.tolist()],
            msg(
                "{probs} (each within {sigmas} standard deviations)",
                probs=[round(x, 3) for x in exp.tolist()],
                sigmas=f"{SIGMAS:g}",
            ),
        )
        + hint_line(
            hint
            or N_(
                "probs = softmax(logits / temperature) over the kept (top-k) logits, then torch.multinomial"
            )
        )
    )
