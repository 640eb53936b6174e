"""A time limit on one case of a check: a student's function that never returns stops its own
question, not the whole cell (in the grader, not the cell limit and every question after it).

`run_case` runs each case under `case_limit(...)`: a wall-clock alarm (SIGALRM by `setitimer`) where
Python has one and only in the main thread, as signals allow; on Windows, in a thread, or with the
limit off it does nothing. An alarm already set by someone else that fires sooner (the grader's probe
sets one per question) is left in charge; one that fires later is set again afterwards, less the
time spent. The limit: the grader's per-question limit at grading (`set_limit`, in its first, silent
request), else `DEFAULT_SECONDS` or BYHAND_CASE_LIMIT from the environment (0: none).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

from .i18n import msg

DEFAULT_SECONDS = 120.0  # a learner's laptop: far above any case's time, well below a lost afternoon


def _from_environment() -> float | None:
    try:
        seconds = float(os.environ.get("BYHAND_CASE_LIMIT", DEFAULT_SECONDS))
    except ValueError:
        seconds = DEFAULT_SECONDS
    return seconds if seconds > 0 else None


_LIMIT: list = [_from_environment()]


def set_limit(seconds: float | None) -> None:
    """Each case's limit from now on, in seconds; None or 0: no limit."""
    _LIMIT[0] = float(seconds) if seconds else None


def limit() -> float | None:
    return _LIMIT[0]


class Stopped(BaseException):
    """Raised by the alarm inside the student's code: not an Exception, so `run_steps`'s
    `except Exception` (and the student's own) lets it through."""


def available() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def case_limit(seconds: float | None):
    """Raise `Stopped` in the block once it has run `seconds` (where an alarm is possible)."""
    if not seconds or not available():
        yield
        return
    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer <= seconds:  # an alarm of someone else's comes first: it decides
        yield
        return

    def stop(*_):
        raise Stopped()

    began = time.monotonic()
    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if outer > 0:  # someone else's later alarm: still due, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001))


def stopped_result(seconds: float) -> dict:
    """The wire result of a case stopped at its limit (an error, for anything that reads only that)."""
    return {"error": f"stopped after {seconds:g} s", "stopped": seconds, "step": 0}


def stopped_message(name: str, seconds) -> str:
    """The verdict on a stopped case (`seconds` comes from the kernel: only a number is shown)."""
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        seconds = 0.0
    return msg(
        "{name} ran past the {s} s limit for one case and was stopped (a limit of wall-clock time: a loop "
        "that never ends, a very slow answer, or a machine too busy to run it in time)",
        name=name,
        s=f"{seconds:g}",
    )
