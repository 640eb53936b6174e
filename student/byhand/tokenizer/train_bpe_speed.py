"""train_bpe_speed: the helper `time_train` (CPU time of train_bpe and of the naive trainer on the
same text, in the answer's kernel), its case and its judge."""

from __future__ import annotations

import time

from .._core import Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import _slice
from .train_bpe_naive import train_naive

# an integration question: the student's train_bpe is kept (byhand._depends), as the lesson
# says before the exercise: it times the student's train_bpe itself; the pretoken_counts it calls is
# the naive trainer's cell's, replaced with it when that one fails its own check
BUILDS_ON = ("train_bpe",)
EARLIER = ("train_bpe_naive",)


def time_train(fn, text, vocab_size):
    """CPU seconds of `fn` and of the naive trainer on the same text, interleaved, best of two."""
    answer, naive = [], []
    for _ in range(2):
        t0 = time.thread_time()
        fn(text, vocab_size, [])
        t1 = time.thread_time()
        train_naive(text, vocab_size)
        t2 = time.thread_time()
        answer.append(t1 - t0)
        naive.append(t2 - t1)
    return min(answer), min(naive)


# ---------------------------------------------------------------------------------------------
# How fast: the answer against the naive trainer, in the same kernel

SPEED_LIMIT = 0.4  # of the naive trainer's CPU time; the lesson's incremental trainer takes about 0.1
H_SLOW = N_(
    "it still visits every pre-token at every merge: keep, for each pair, the pre-tokens that contain it, "
    "and after a merge update only those pre-tokens and their pair counts"
)


def _speed_cases(hidden):
    text = _slice("en", 31 if not hidden else 32, 60_000 if not hidden else 80_000)
    size = 256 + (120 if not hidden else 150)
    steps = [call("r", helper("tokenizer.time_train"), graded("train_bpe"), text, size)]
    label = msg(
        "{call} on {n} characters of English, timed against the naive trainer",
        call=f"train_bpe(text, {size})",
        n=len(text),
    )
    return [Case(label, steps, ["r"], facts={}, size=len(text))]


def _speed_judge(case, out):
    r = out["r"]
    if not isinstance(r, (list, tuple)) or len(r) != 2 or not all(isinstance(x, float) for x in r):
        raise CheckFailure(msg("train_bpe: the grader could not time it (no timings came back)"))
    answer, naive = r
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
