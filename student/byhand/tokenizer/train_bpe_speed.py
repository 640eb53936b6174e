"""train_bpe_speed: the helper `time_train` (CPU time of train_bpe and of the naive trainer on the
same text, in the answer's kernel, and what train_bpe returned there), its cases and its judge. The
point for speed goes to a right trainer only: the cases are train_bpe's own, judged as train_bpe's
check judges them, and the timed case, whose merges are judged the same way before its time."""

from __future__ import annotations

import time

from .. import i18n
from .._core import LINE, Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import _s2b, _slice, train
from .train_bpe import _fmt_pair, _got_expected_code, _train_cases, _train_judge, _vocab_facts
from .train_bpe_naive import train_naive

# an integration question: the student's train_bpe is kept (byhand._depends), as the lesson
# says before the exercise: it times the student's train_bpe itself; the pretoken_counts it calls is
# the naive trainer's cell's, replaced with it when that one fails its own check
BUILDS_ON = ("train_bpe",)
EARLIER = ("train_bpe_naive",)


def time_train(fn, text, vocab_size):
    """CPU seconds of `fn` and of the naive trainer on the same text, interleaved, best of two, and
    what `fn` returned the first time, as `run_train` reports it (read outside the timed calls)."""
    answer, naive, returned = [], [], None
    for _ in range(2):
        t0 = time.thread_time()
        result = fn(text, vocab_size, [])
        t1 = time.thread_time()
        train_naive(text, vocab_size)
        t2 = time.thread_time()
        answer.append(t1 - t0)
        naive.append(t2 - t1)
        if returned is None:
            ok = isinstance(result, tuple) and len(result) == 2
            returned = _vocab_facts(*result) if ok else ("bad", "returned", type(result).__name__)
    return min(answer), min(naive), returned


# ---------------------------------------------------------------------------------------------
# How fast: the answer against the naive trainer, in the same kernel

SPEED_LIMIT = 0.4  # of the naive trainer's CPU time; the lesson's incremental trainer takes about 0.1
H_SLOW = N_(
    "it still visits every pre-token at every merge: keep, for each pair, the pre-tokens that contain it, "
    "and after a merge update only those pre-tokens and their pair counts"
)


_RIGHT_CASES, _RIGHT_JUDGE = _train_cases("train_bpe"), _train_judge("train_bpe")
H_RIGHT_FIRST = N_("the point for speed goes to a train_bpe that is also right, and this one is not:")


def _speed_cases(hidden):
    text = _slice("en", 31 if not hidden else 32, 60_000 if not hidden else 80_000)
    size = 256 + (120 if not hidden else 150)
    steps = [call("r", helper("tokenizer.time_train"), graded("train_bpe"), text, size)]
    label = msg(
        "{call} on {n} characters of English, timed against the naive trainer",
        call=f"train_bpe(text, {size})",
        n=len(text),
    )
    facts = dict(timed=True, text=text, vocab_size=size, specials=[])
    # train_bpe's own cases first, the timed one last: a wrong trainer is told what is wrong
    return _RIGHT_CASES(hidden) + [Case(label, steps, ["r"], facts=facts, size=10**9)]


def _right(case, out):
    """train_bpe's judge on one result, its failure led by the line that says why speed needs it."""
    try:
        _RIGHT_JUDGE(case, out)
    except CheckFailure as exc:
        raise exc.with_text(msg(H_RIGHT_FIRST) + LINE + i18n.message_of(exc)) from None


def _timed_right(facts, returned):
    """The timed run's merges against the reference's, before its time counts. Only the first wrong
    merge is named: train_bpe's own cases, judged first, name the mistake (the classic mistakes
    recomputed on this long text would cost the judge a minute)."""
    if not isinstance(returned, (list, tuple)) or len(returned) != 3 or returned[0] != "ok":
        _right(Case("", [], [], facts=facts), {"r": returned})  # what is wrong with what it returned
        return
    got = [(_s2b(a), _s2b(b)) for a, b in returned[2]]
    _, merges, _ = train(facts["text"], facts["vocab_size"], [])
    if got == merges:
        return
    k = next((i for i, (a, b) in enumerate(zip(got, merges)) if a != b), min(len(got), len(merges)))
    if k == len(got) or k == len(merges):
        raise CheckFailure(
            msg(H_RIGHT_FIRST)
            + LINE
            + msg(
                "{name}: {n} merges where {m} were expected (the first {k} agree).",
                name="train_bpe",
                n=len(got),
                m=len(merges),
                k=k,
            )
            + got_expected(msg("{n} merges", n=len(got)), msg("{n} merges", n=len(merges)))
        )
    raise CheckFailure(
        msg(H_RIGHT_FIRST)
        + LINE
        + msg("train_bpe: merge {k} (counting from 0) of the timed run is wrong.", k=k)
        + _got_expected_code(_fmt_pair(got[k]), _fmt_pair(merges[k]))
    )


def _speed_judge(case, out):
    if not case.facts.get("timed"):  # one of train_bpe's own cases
        _right(case, out)
        return
    r = out["r"]
    if not isinstance(r, (list, tuple)) or len(r) != 3 or not all(isinstance(x, float) for x in r[:2]):
        raise CheckFailure(msg("train_bpe: the grader could not time it (no timings came back)"))
    answer, naive, returned = r
    _timed_right(case.facts, returned)
    ratio = answer / max(naive, 1e-9)
    if ratio > SPEED_LIMIT:
        shown = f"{ratio:.2f}"
        raise CheckFailure(
            msg("train_bpe takes {ratio} times the naive trainer's time on the same text.", ratio=shown)
            + got_expected(
                msg("{ratio} of the naive time", ratio=shown),
                msg("at most {limit} of the naive time", limit=f"{SPEED_LIMIT}"),
            )
            + hint_line(H_SLOW)
        )
