"""encode_iterable (Tokenizer's): the helper `run_stream` (what it yields for a generator of lines and
how many lines it read before its first id), its cases and its judge."""

from __future__ import annotations

import random

from .._core import Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import _STRINGS, EOT, EOT2, _slice, _with_eot, encode
from .tokenizer import _encode_failed, _plain_ids, _short, _source, _tokenizer

# an integration question: the student's answers are kept (byhand._depends), as the lesson
# says before the exercise: a method of the student's Tokenizer class
BUILDS_ON = ("Tokenizer",)


def run_stream(cls, source, special_tokens, lines):
    """encode_iterable over a generator of `lines` that counts what it hands out: (ids, whether it
    returned an iterator, lines taken before the first id came out)."""
    tok = _tokenizer(cls, source, special_tokens)
    taken = [0]

    def feed():
        for line in lines:
            taken[0] += 1
            yield line

    result = tok.encode_iterable(feed())
    lazy = hasattr(result, "__next__")
    it = iter(result)
    first = next(it, None)
    at_first = taken[0]
    ids = [] if first is None else [first]
    ids += list(it)
    return _plain_ids(ids), lazy, at_first


# ---------------------------------------------------------------------------------------------
# Judging encode_iterable

H_PER_LINE = N_(
    "each line encoded on its own: a pre-token (or a special token) that runs across two lines gets "
    "other ids; hold back the text after the last complete pre-token and encode it with the next line"
)
H_NOT_LAZY = N_(
    "encode_iterable is not lazy: it read every line before giving the first id; yield the ids of "
    "each complete pre-token as soon as it is read"
)


def _lines(text: str, seed: int) -> list:
    """`text` cut at random places (inside words, inside special tokens, between characters)."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, len(text) // 25)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def _stream_specs(hidden: bool) -> list:
    text = _with_eot(_slice("en", 51 + hidden, 2500 if hidden else 1500) + _STRINGS[1] + _STRINGS[2], 3)
    source = ("trained", _with_eot(_slice("en", 53, 2500), 4), 258 + 120, [EOT, EOT2])
    by_line = text.splitlines(keepends=True)
    return [
        (
            lambda n: msg("encode_iterable of a text read line by line, {n} pieces", n=n),
            source,
            [EOT, EOT2],
            by_line,
        ),
        (
            lambda n: msg(
                "encode_iterable of the same text cut at random places (inside words and special tokens), {n} pieces",
                n=n,
            ),
            source,
            [EOT, EOT2],
            _lines(text, 55 + hidden),
        ),
    ]


def _stream_cases(hidden):
    out = []
    for label, source, specials, lines in _stream_specs(hidden):
        steps = [call("r", helper("tokenizer.run_stream"), graded("Tokenizer"), source, specials, lines)]
        facts = dict(source=source, specials=specials, lines=lines)
        out.append(Case(label(len(lines)), steps, ["r"], facts=facts, size=len(lines)))
    return out


def _stream_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (list, tuple)) or len(r) != 3:
        raise CheckFailure(msg("{name}: the grader could not read what it returned", name="encode_iterable"))
    ids, lazy, at_first = r
    vocab, merges = _source(f)
    text = "".join(f["lines"])
    expected = encode(text, vocab, merges, f["specials"])
    if ids != expected:
        per_line = [i for line in f["lines"] for i in encode(line, vocab, merges, f["specials"])]
        if ids != per_line:
            _encode_failed(ids, text, vocab, merges, f["specials"], what="encode_iterable")
        k = next((i for i, (a, b) in enumerate(zip(ids, expected)) if a != b), min(len(ids), len(expected)))
        raise CheckFailure(
            msg("encode_iterable differs from encode of the joined text from id {k} on.", k=k)
            + got_expected(_short(ids[k:]), _short(expected[k:]))
            + hint_line(H_PER_LINE)
        )
    n = len(f["lines"])
    if not lazy or at_first > max(2, n // 2):
        if lazy:
            head = msg("encode_iterable read {read} of {n} lines before its first id.", read=at_first, n=n)
        else:
            head = msg(
                "encode_iterable read {read} of {n} lines before its first id, and returned a list, not an iterator.",
                read=at_first,
                n=n,
            )
        raise CheckFailure(
            head
            + got_expected(msg("{n} lines read", n=at_first), N_("a few lines read"))
            + hint_line(H_NOT_LAZY)
        )
