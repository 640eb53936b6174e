"""The check of `generate` (lesson 07_decoder): its reference, its cases, the helper that records
what each step feeds the model (`record_generate`, run where the student's code runs) and its judge."""

from __future__ import annotations

import inspect

import torch

from .._core import LINE, Case, call, gen, got_expected, graded, helper, hint_line, let, new, ref
from .._judge import CheckFailure, expect_tensor
from ..i18n import N_, msg
from ._shared import F64, gpt_state, ref_gpt

EARLIER = ("GPT", "sample_next")  # the reference of each when the student's fails its own check

# ---------------------------------------------------------------------------------------------
# generate (with the student's GPT, in float64: greedy decoding has no near-ties to round)


def ref_generate(s, idx, n_new, h, use_cache=True, mode="ok", act="gelu"):
    """Greedy decoding with the float64 reference GPT; `mode` recomputes a classic mistake:
    "first_position" (samples from logits[:, 0]), "full_with_cache" (feeds the whole sequence again
    with the cache), "last_token_only" (feeds only the last token, without the cache)."""
    out, cache = idx.clone(), None
    for _ in range(n_new):
        if mode == "last_token_only":
            logits, _ = ref_gpt(s, out[:, -1:], h, act=act)
        elif mode == "full_with_cache":
            logits, cache = ref_gpt(s, out, h, cache, act=act)
        elif use_cache:
            logits, cache = ref_gpt(s, out if cache is None else out[:, -1:], h, cache, act=act)
        else:
            logits, _ = ref_gpt(s, out, h, act=act)
        nxt = (logits[:, 0] if mode == "first_position" else logits[:, -1]).argmax(-1)  # (B,)
        out = torch.cat([out, nxt[:, None]], dim=1)
    return out


def _gen_specs(hidden):
    # (B, T0, max_new, vocab, d_model, n_heads, n_layers, max_len, temperature, top_k, use_cache)
    if not hidden:
        return [
            (2, 4, 1, 11, 12, 3, 1, 8, 0.0, None, True),  # one new token: ids out of the vocabulary show
            (2, 3, 5, 11, 12, 3, 2, 26, 0.0, None, True),
            (3, 4, 4, 9, 8, 2, 1, 9, 0.0, None, False),
            (2, 2, 5, 13, 12, 2, 2, 21, 1.3, 1, True),
            (3, 3, 6, 10, 8, 2, 1, 34, 1.0, None, True),
            (4, 3, 6, 10, 8, 2, 1, 12, None, None, None),  # temperature, top_k, use_cache left out
        ]
    # max_len leaves room for the positions that feeding the whole sequence with the cache would use
    return [
        (4, 5, 8, 17, 16, 4, 2, 70, 0.0, None, True),
        (2, 1, 9, 12, 16, 4, 2, 46, 0.0, None, True),
        (3, 6, 6, 15, 12, 3, 3, 13, 0.8, 1, False),
        (4, 2, 10, 20, 16, 2, 2, 66, 0.9, 5, True),
    ]


GENERATE_DEFAULTS = dict(temperature=1.0, top_k=None, use_cache=True)  # generate's signature
GENERATE_DEFAULT_HINT = N_(
    "the signature's defaults are temperature=1.0, top_k=None, use_cache=True: generate(model, idx, "
    "max_new_tokens) must do what generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, "
    "use_cache=True) does"
)
GENERATE_OUTPUT = N_("generate's output")
MAX_RECORDED = 200  # calls of the model recorded per generate (the cases need at most 10)


def record_generate(generate, model, idx, max_new_tokens, **kwargs):
    """Run the student's `generate` with `model` whose forward records each call, and report raw
    facts: (tokens, calls, sampled, top_ks), one row of `calls` per call of the model: [tokens fed
    (T), T_past of the kv_cache passed (-1: none, -2: unreadable), grad mode on (0/1), logits part of
    an autograd graph (0/1)]; one row of `sampled` per call of `sample_next` (the name generate's
    module binds, seen through generate.__globals__): the shape of the logits it was given ([-1]:
    not a tensor); one entry of `top_ks` per such call: the top_k it was given, its default included
    (-1: None, -2: not an int, or arguments sample_next's signature does not take). It runs where the
    student's code lives; the judge decides from these numbers alone."""
    calls, sampled, top_ks = [], [], []
    scope = getattr(generate, "__globals__", None)
    sampler = scope.get("sample_next") if isinstance(scope, dict) else None

    def top_k_given(args, kw):
        try:
            bound = inspect.signature(sampler).bind(*args, **kw)
            bound.apply_defaults()
            k = bound.arguments.get("top_k")
        except (TypeError, ValueError):  # arguments its signature does not take: it raises itself
            return -2
        return -1 if k is None else int(k) if isinstance(k, int) and not isinstance(k, bool) else -2

    def recording_sampler(*args, **kw):
        logits = args[0] if args else kw.get("logits")
        if len(sampled) < MAX_RECORDED:
            sampled.append([int(n) for n in logits.shape] if isinstance(logits, torch.Tensor) else [-1])
            top_ks.append(top_k_given(args, kw))
        return sampler(*args, **kw)

    forward = model.forward

    def recording(*args, **kw):
        x = args[0] if args else kw.get("idx")
        cache = args[1] if len(args) > 1 else kw.get("kv_cache")
        try:
            t_past = -1 if cache is None else int(cache[0][0].shape[2])
        except Exception:  # noqa: BLE001 - a cache of another layout: reported as unreadable
            t_past = -2
        t = int(x.shape[1]) if isinstance(x, torch.Tensor) and x.dim() == 2 else -1
        grad_on = torch.is_grad_enabled()
        result = forward(*args, **kw)
        logits = result[0] if isinstance(result, (tuple, list)) and len(result) else result
        graph = isinstance(logits, torch.Tensor) and logits.requires_grad
        if len(calls) < MAX_RECORDED:
            calls.append([t, t_past, int(grad_on), int(graph)])
        return result

    model.forward = recording  # an instance attribute: model(...) and model.forward(...) both record
    if callable(sampler):
        scope["sample_next"] = recording_sampler  # the answer's own, or the reference put in its place
    try:
        out = generate(model, idx, max_new_tokens, **kwargs)
    finally:
        del model.forward
        if callable(sampler):
            scope["sample_next"] = sampler
    return out, calls, sampled, top_ks


def _gen_cases(hidden):
    cases = []
    for i, (b, t0, n_new, v, d, h, n, max_len, temp, top_k, use_cache) in enumerate(_gen_specs(hidden)):
        g = gen(7700 + 23 * i + (900 if hidden else 0))
        s = gpt_state(v, d, n, max_len, g, F64)
        s = {k: (t * 0.6 if k == "tok_emb.weight" or k == "head.weight" else t) for k, t in s.items()}
        idx = torch.randint(0, v, (b, t0), generator=g)
        default = temp is None  # the signature's defaults, compared with them given explicitly
        kw = {} if default else dict(temperature=temp, top_k=top_k, use_cache=use_cache)
        explicit = GENERATE_DEFAULTS if default else kw
        use_cache = True if default else use_cache
        sampled = default or (temp > 0 and top_k != 1)
        steps = [new("model", "GPT", v, d, h, n, max_len, state=s, dtype=F64), let("idx", idx)]
        outputs = ["out", "idx"]
        record = helper("decoder.record_generate")  # what each step feeds the model, with grad on or off
        if sampled:
            steps += [
                new("g", "torch.Generator"),
                call("_", ref("g", "manual_seed"), 11 + i),
                call(
                    "out",
                    record,
                    graded("generate"),
                    ref("model"),
                    ref("idx"),
                    n_new,
                    generator=ref("g"),
                    **kw,
                ),
                call("_", ref("g", "manual_seed"), 11 + i),
                call("again", "generate", ref("model"), ref("idx"), n_new, generator=ref("g"), **explicit)
                if not default
                else call(
                    "again",
                    record,
                    graded("generate"),
                    ref("model"),
                    ref("idx"),
                    n_new,
                    generator=ref("g"),
                    **explicit,
                ),
            ]
            outputs.append("again")
        else:
            steps.append(call("out", record, graded("generate"), ref("model"), ref("idx"), n_new, **kw))
        called = (
            f"generate(GPT(vocab_size={v}, d_model={d}, n_heads={h}, n_layers={n}, max_len={max_len}) "
            f"(float64), idx {tuple(idx.shape)}, max_new_tokens={n_new}"
        )
        shown = f"temperature={temp}, top_k={top_k}, use_cache={use_cache}"
        if default:  # sampled too
            label = msg(
                "{call}, temperature, top_k and use_cache left out (defaults 1.0, None, True), generator seeded",
                call=called,
            )
        elif sampled:
            label = msg("{call}, {options}, generator seeded", call=called, options=shown)
        else:
            label = called + ", " + shown  # code only
        cases.append(
            Case(
                label,
                steps,
                outputs,
                facts=dict(
                    s=s,
                    idx=idx,
                    n_new=n_new,
                    h=h,
                    v=v,
                    sampled=sampled,
                    use_cache=use_cache,
                    default=default,
                    top_k=top_k,
                ),
                size=b * (t0 + n_new) * d * n,
            )
        )
    return cases


def _judge_calls(calls, t0, n_new, use_cache, default=False):
    """What each call of the model was fed: with the cache, the prompt and then one token per step,
    each with the cache of everything before it; without, the whole sequence so far; never with grad."""
    if not isinstance(calls, (list, tuple)) or not all(
        isinstance(c, (list, tuple)) and len(c) == 4 and all(isinstance(x, int) for x in c) for c in calls
    ):
        raise CheckFailure(
            msg("generate's calls of the model could not be read back: {got}", got=f"{calls!r:.80}")
        )
    graph = [i for i, c in enumerate(calls) if c[2] or c[3]]
    if graph:
        raise CheckFailure(
            msg(
                "generate ran the model with gradients on: its logits carry an autograd graph, so every step "
                "keeps its activations for a backward that never comes."
            )
            + got_expected(
                msg("grad mode on at calls {calls} of {n}", calls=graph[:8], n=len(calls)),
                N_("grad mode off at every call"),
            )
            + hint_line(N_("run the loop under torch.no_grad() (or decorate generate with @torch.no_grad())"))
        )
    fed = [[c[0], c[1]] for c in calls]
    if use_cache:
        want = [[t0, -1]] + [[1, t0 + i] for i in range(n_new - 1)]
    else:
        want = [[t0 + i, -1] for i in range(n_new)]
    if fed == want:
        return
    if default and fed == [[t0 + i, -1] for i in range(n_new)]:
        hint = GENERATE_DEFAULT_HINT
    elif use_cache and fed == [[t0 + i, -1] for i in range(n_new)]:
        hint = N_(
            "your generate never uses the cache: every step fed the whole sequence again without a "
            "kv_cache. With use_cache=True, feed the prompt once, then only the new token, out[:, -1:], "
            "with kv_cache=cache from the step before"
        )
    elif use_cache and [c[0] for c in fed] == [t0 + i for i in range(n_new)] and any(c[1] > 0 for c in fed):
        hint = N_(
            "with the cache, feed only the new token: you passed the whole sequence again together with the "
            "cache, so the cached positions are counted twice"
        )
    elif fed and all(c == [1, -1] for c in fed):
        hint = N_(
            "your model sees only the last token: pass the cache back in (kv_cache=cache), or, without the "
            "cache, the whole sequence so far"
        )
    elif not use_cache and fed == [[t0, -1]] + [[1, t0 + i] for i in range(n_new - 1)]:
        hint = N_(
            "your generate uses the cache even with use_cache=False: without it, every step runs the model "
            "on the whole sequence so far, with no kv_cache (the run the cached one is compared with)"
        )
    else:
        hint = N_(
            "with use_cache=True, the first call feeds the prompt (no cache), each later call one token with "
            "the cache of all the tokens before it; with use_cache=False, every call feeds the whole "
            "sequence so far, no cache; one call per new token"
        )
    raise CheckFailure(
        msg(
            "generate fed the model other inputs than expected ([tokens fed, cached positions], -1 for no "
            "cache, one pair per call of the model)."
        )
        + got_expected(
            f"{fed[:12]}{' ...' if len(fed) > 12 else ''}", f"{want[:12]}{' ...' if len(want) > 12 else ''}"
        )
        + hint_line(hint)
    )


def _judge_sampled(sampled, calls, b, v):
    """sample_next is given the last position's logits, (B, vocab_size): never more rows than
    sequences. An answer that does not call sample_next by that name leaves nothing to judge."""
    if not isinstance(sampled, (list, tuple)) or not all(
        isinstance(r, (list, tuple)) and all(isinstance(n, int) for n in r) for r in sampled
    ):
        raise CheckFailure(
            msg("generate's calls of sample_next could not be read back: {got}", got=f"{sampled!r:.80}")
        )
    wrong = [list(r) for r in sampled if len(r) != 2 or r[1] != v or r[0] > b]
    if not wrong:
        return
    fed = [c[0] for c in calls if isinstance(c, (list, tuple)) and c]
    every = {b * t for t in fed}
    hint = (
        N_(
            "you sampled a token at every position and kept the last one: give sample_next the last "
            "position's logits only, logits[:, -1, :] (B, vocab_size), one row per sequence"
        )
        if any(len(r) == 2 and r[0] in every and r[0] > b for r in wrong)
        or any(len(r) == 3 and r[0] == b and r[1] in fed and r[1] > 1 for r in wrong)
        else N_("give sample_next the last position's logits, logits[:, -1, :], of shape (B, vocab_size)")
    )
    raise CheckFailure(
        msg("generate gave sample_next the logits of other positions than the last.")
        + got_expected(
            msg("logits of shape {shapes}", shapes=", ".join(str(tuple(r)) for r in wrong[:4])),
            f"({b}, {v}) = (B, vocab_size)",
        )
        + hint_line(hint)
    )


def _gen_judge(case, out):
    f = case.facts
    s, idx, n_new, h, v = f["s"], f["idx"], f["n_new"], f["h"], f["v"]
    b, t0 = idx.shape
    recorded = out["out"]
    if not isinstance(recorded, (tuple, list)) or len(recorded) != 4:
        raise CheckFailure(msg("generate's output could not be read back: {got}", got=f"{recorded!r:.80}"))
    got, calls, sampled, top_ks = recorded
    _token_count(got, f)
    got = expect_tensor(got, GENERATE_OUTPUT, shape=(b, t0 + n_new))
    if got.dtype != torch.int64:
        raise CheckFailure(msg("generate should return token ids.") + got_expected(got.dtype, "torch.int64"))
    if not torch.equal(got[:, :t0], idx):
        raise CheckFailure(
            msg("generate's output should start with the prompt idx, then the new tokens.")
            + got_expected(got[0].tolist(), msg("{prompt} + {n} new tokens", prompt=idx[0].tolist(), n=n_new))
        )
    if not torch.equal(out["idx"], idx):
        raise CheckFailure(
            msg(
                "{who} modified its input {name} in place: {advice}",
                who="generate",
                name="idx",
                advice=N_("build a new tensor with torch.cat"),
            )
        )
    if got.min() < 0 or got.max() >= v:
        raise CheckFailure(
            msg("generate produced ids outside the vocabulary [0, {v}).", v=v)
            + LINE
            + msg("got:      {got}", got=got[0].tolist())
            + hint_line(
                N_(
                    "you sampled from the logits of every position, (B, T * V) or (B * T, V): take the last "
                    "position's logits, logits[:, -1, :] (B, V)"
                )
            )
        )
    if f.get("default"):  # "again": the same call with the defaults given explicitly, recorded too
        explicit = out["again"]
        if not isinstance(explicit, (tuple, list)) or len(explicit) != 4:
            raise CheckFailure(
                msg("generate's output could not be read back: {got}", got=f"{explicit!r:.80}")
            )
        again, calls_again, _, _ = explicit
        _judge_calls(calls_again, t0, n_new, True)  # its own mistakes are named first
        _judge_calls(calls, t0, n_new, True, default=True)
        _judge_sampled(sampled, calls, b, v)
        again = expect_tensor(again, GENERATE_OUTPUT, shape=got.shape)
        if not torch.equal(got, again):
            raise CheckFailure(
                msg(
                    "generate called without temperature, top_k and use_cache gave other tokens than with "
                    "temperature=1.0, top_k=None, use_cache=True (the same seeded generator)."
                )
                + got_expected(got[0].tolist(), again[0].tolist())
                + hint_line(GENERATE_DEFAULT_HINT)
            )
        return
    if f["sampled"]:
        if not torch.equal(got, out["again"]):
            raise CheckFailure(
                msg(
                    "generate gave different tokens with the same seeded generator: pass generator= on to "
                    "sample_next (and temperature, top_k)"
                )
            )
        _judge_calls(calls, t0, n_new, f["use_cache"])
        _judge_sampled(sampled, calls, b, v)
        _judge_top_k(top_ks, f["top_k"])
        return
    exp = ref_generate(s, idx, n_new, h, f["use_cache"])
    if torch.equal(got, exp) or torch.equal(
        got, ref_generate(s, idx, n_new, h, f["use_cache"], act="gelu_tanh")
    ):
        _judge_calls(calls, t0, n_new, f["use_cache"])
        _judge_sampled(sampled, calls, b, v)
        return
    mistakes = [
        (
            N_(
                "your generate samples from the first position's logits: the next token comes from the last "
                "position, logits[:, -1, :]"
            ),
            "first_position",
        ),
        (
            N_(
                "with the cache, feed only the new token: you passed the whole sequence again together with the "
                "cache, so the cached positions are counted twice"
            ),
            "full_with_cache",
        ),
        (
            N_(
                "your model sees only the last token: pass the cache back in (kv_cache=cache), or, without the "
                "cache, the whole sequence so far"
            ),
            "last_token_only",
        ),
    ]
    other = _other_top_k(top_ks, f["top_k"])
    hint = TOP_K_NOT_PASSED if other and set(other) == {-1} else ""  # sample_next's default, None
    for text, mode in mistakes if not hint else []:
        try:
            if torch.equal(got, ref_generate(s, idx, n_new, h, f["use_cache"], mode)):
                hint = text
                break
        except Exception:  # noqa: BLE001 - a mistake the reference cannot even run
            continue
    row = next(i for i in range(b) if not torch.equal(got[i], exp[i]))  # the first sequence that differs
    raise CheckFailure(
        msg("generate with greedy decoding (temperature 0 or top_k=1) gave other tokens than the reference.")
        + got_expected(f"out[{row}] = {got[row].tolist()}", f"out[{row}] = {exp[row].tolist()}")
        + hint_line(
            hint
            or N_(
                "at each step: logits of the last position -> sample_next(..., temperature, top_k, generator) "
                "-> append; with use_cache, feed only the new token and the cache the model returned"
            )
        )
    )


TOP_K_NOT_PASSED = N_(
    "your generate does not pass top_k on to sample_next: call sample_next(logits[:, -1, :], temperature, "
    "top_k, generator) with the top_k generate was given"
)


def _other_top_k(top_ks, top_k) -> list:
    """The top_k values sample_next was given other than generate's own (-1: None), in call order."""
    want = -1 if top_k is None else top_k
    if not isinstance(top_ks, (list, tuple)):
        return []
    return [k for k in top_ks if k != want]


def _judge_top_k(top_ks, top_k):
    """Each call of sample_next is given generate's top_k (a sampled case has no reference tokens)."""
    other = _other_top_k(top_ks, top_k)
    if not other:
        return
    shown = {-1: "None", -2: "?"}
    raise CheckFailure(
        msg("generate called sample_next with another top_k than it was given.")
        + got_expected(f"top_k={shown.get(other[0], other[0])}", f"top_k={top_k}")
        + (hint_line(TOP_K_NOT_PASSED) if other[0] == -1 else "")
    )


def _token_count(got, f):
    """An output one token longer or shorter than asked, named when the reference's greedy decoding
    of that many tokens gives exactly its tokens."""
    idx, n_new = f["idx"], f["n_new"]
    b, t0 = idx.shape
    if f["sampled"] or not isinstance(got, torch.Tensor) or got.dim() != 2 or got.shape[0] != b:
        return
    made = got.shape[1] - t0
    why = {
        n_new + 1: N_(
            "one token too many: your generate samples max_new_tokens + 1 tokens (one from the prompt's step, "
            "then one per step of a loop of max_new_tokens). The prompt's step makes the first of the "
            "max_new_tokens new tokens"
        ),
        n_new - 1: N_(
            "one token too few: your generate samples max_new_tokens - 1 tokens; the prompt's step makes the "
            "first new token, and every step samples one"
        ),
    }.get(made)
    if why is None or made < 0:
        return
    for act in ("gelu", "gelu_tanh"):
        try:
            same = torch.equal(got, ref_generate(f["s"], idx, made, f["h"], f["use_cache"], act=act))
        except Exception:  # noqa: BLE001 - more positions than max_len: not this mistake
            same = False
        if same:
            raise CheckFailure(
                msg("{what} has the wrong shape.", what=GENERATE_OUTPUT)
                + got_expected(tuple(got.shape), f"({b}, {t0 + n_new}) = (B, T + max_new_tokens)")
                + hint_line(why)
            )
