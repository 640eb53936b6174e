"""The lines every check's failure message is built of: `LINE` (a new line, indented), the
`got:`/`expected:` pair (`got_expected`), the `hint:` line (`hint_line`) and the `on input:` line
(`on_input`); and `_hint_of`, which reads a message's hint back (the mistake's name in the grader's
class report). The words are catalogue ids (`i18n.msg`), so each line reads in the notebook's language.
"""

from __future__ import annotations

from .. import i18n
from ..i18n import N_, msg


def _hint_of(text: str) -> str:
    """The hint of a message: the field of its `hint_line`, else its `hint: ` line's text."""
    if isinstance(text, i18n.Msg):
        for part in text.parts or (text,):
            if isinstance(part, i18n.Msg) and part.msgid == HINT:
                return part.fields["hint"]
    for line in text.splitlines():
        if line.strip().startswith("hint: "):
            return line.strip()[len("hint: ") :]
    return ""


# the frames of a failure's lines under its first: each on its own line, indented by two spaces
LINE = "\n  "
HINT = N_("hint: {hint}")


def hint_line(hint: str) -> i18n.Msg:
    """A failure's `hint:` line (with the newline before it); `hint` a `Msg`, or data."""
    return LINE + msg(HINT, hint=hint)


def on_input(label: str) -> i18n.Msg:
    """The `on input:` line that ends a failure's message (with the newline before it)."""
    return LINE + msg("on input: {label}", label=label)


def got_expected(got, expected) -> i18n.Msg:
    """The `got:` and `expected:` lines (each with the newline before it); a value a `Msg` or data."""
    return LINE + msg("got:      {got}", got=got) + LINE + msg("expected: {expected}", expected=expected)
