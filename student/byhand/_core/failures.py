"""What a failed check raises: `CheckFailure` (a wrong answer), `NotDone` (still the stub) and
`AnswerError` (the answer raised), and how a notebook shows one: its message alone, or the whole
traceback when asked (`verbose`, BYHAND_TRACEBACK=1; the flag `_VERBOSE` lives here and only here).
"""

from __future__ import annotations

import os

from .. import i18n
from ..i18n import N_
from .lines import _hint_of

# ---------------------------------------------------------------------------------------------
# Failures


class CheckFailure(AssertionError):
    """A wrong answer. The message says what is wrong, got vs expected, and a hint.

    `hint` is the name of the mistake, for the grader's class report: given as `hint=`, or else the
    message's `hint:` line (the message format is this module's own).
    """

    # What a failure on a later case may add to the first one ("also, on ..."), whose mistake may
    # explain it too: a `fact` about the answer (an attribute or parameter it lacks) always; a hint
    # whose probe `separates` its mistake from the others (the output matched that mistake's) when the
    # first failure names no such mistake, or when it is the first mistake and one more
    separates = False
    fact = False
    # the name the short traceback shows before the message: a catalogue id, so a Chinese notebook
    # reads its own words there, not the English class name
    shown_as = N_("CheckFailure")

    def __init__(self, message: str = "", hint: str | None = None):
        super().__init__(message)
        self._hint = hint

    @property
    def hint(self) -> str:
        return self._hint if self._hint is not None else _hint_of(i18n.message_of(self))

    def with_text(self, message: str) -> CheckFailure:
        """The same failure (same class, same hint) with `message` as its text."""
        failure = type(self)(message, hint=self._hint)
        failure.separates, failure.fact = self.separates, self.fact
        return failure

    @property
    def _render_traceback_(self):
        """IPython asks an exception for this to render it (`InteractiveShell.showtraceback`, the
        `traceback` of the kernel's error message every front end shows): the message alone, with no
        frame of this package. With the full traceback asked for (`check(..., traceback=True)`,
        `byhand.verbose(True)` or BYHAND_TRACEBACK=1) there is no such attribute, and IPython renders
        its own full traceback. Plain Python never asks: it prints the whole traceback."""
        if _VERBOSE[0] or getattr(self, "full_traceback", False):
            raise AttributeError("_render_traceback_")
        return self._short_traceback

    def _short_traceback(self) -> list:
        head, _, rest = str(self).partition("\n")
        name = i18n.localize(self.shown_as) + _RESET + i18n.localize(_NAME_SEPARATOR)
        lines = [f"{_RED}{name}{head}"] + (rest.split("\n") if rest else [])
        return lines + [_DIM + i18n.localize(FULL_TRACEBACK) + _RESET]


# How a check's failure is shown in a notebook: the message only, unless the whole traceback is asked for
_VERBOSE = [os.environ.get("BYHAND_TRACEBACK", "").strip() not in ("", "0")]
FULL_TRACEBACK = N_("(the whole traceback: check(..., traceback=True))")
_NAME_SEPARATOR = N_(": ")  # between the failure's name and its message
_RED, _DIM, _RESET = "\x1b[0;31m", "\x1b[2m", "\x1b[0m"  # the colours of IPython's own tracebacks


def verbose(on: bool | None = None) -> bool:
    """Show the whole traceback of every failed check from now on (`on=True`), or the message only
    (`on=False`, the default, or BYHAND_TRACEBACK=1 in the environment); the current setting."""
    if on is not None:
        _VERBOSE[0] = bool(on)
    return _VERBOSE[0]


class NotDone(CheckFailure):
    """The exercise is still the blank stub (raises NotImplementedError)."""

    shown_as = N_("NotDone")


class AnswerError(CheckFailure):
    """The answer raised an exception other than NotImplementedError."""

    shown_as = N_("AnswerError")
