"""encode_iterable (Tokenizer's): the helper `run_stream` (what it yields for a generator of lines and
how many lines it read before its first id), its cases and its judge."""

from __future__ import annotations

import random

from .._core import Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import _STRINGS, EOT, EOT2, GPT2_PATTERN, _slice, _with_eot, encode
from .tokenizer import _encode_failed, _plain_ids, _short, _source, _tokenizer

# an integration question: the student's answers are kept (byhand._depends), as the lesson
# says before the exercise: a method of the student's Tokenizer class
BUILDS_ON = ("Tokenizer",)


def _read(encode_iterable, lines):
    """encode_iterable over a generator of `lines` that counts what it hands out: (ids, whether it
    returned an iterator, lines taken before the first id came out, the most lines taken in a row
    while no id came out)."""
    taken = [0]

    def feed():
        for line in lines:
            taken[0] += 1
            yield line

    result = encode_iterable(feed())
    lazy = hasattr(result, "__next__")
    it = iter(result)
    first = next(it, None)
    at_first = taken[0]
    ids, marks = ([], [0]) if first is None else ([first], [0, at_first])
    for i in it:
        ids.append(i)
        marks.append(taken[0])
    marks.append(len(lines))
    return ids, lazy, at_first, max(b - a for a, b in zip(marks, marks[1:]))


def run_stream(cls, source, special_tokens, lines):
    """`_read` of the answer's encode_iterable, its ids plain."""
    ids, lazy, at_first, held = _read(_tokenizer(cls, source, special_tokens).encode_iterable, lines)
    return _plain_ids(ids), lazy, at_first, held


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


H_AT_SPACE = N_(
    "the buffer cut at its last space: a run of spaces cut between two pieces splits otherwise than in "
    "the whole text, and a text with no spaces (Chinese) is held whole until the end; cut where "
    "safe_end(buffer, self.special_tokens) says"
)
H_NO_FLUSH = N_(
    "the text left in the buffer after the last piece is never encoded: after the loop, "
    "yield from self.encode(buffer)"
)
H_SAFE_END_SPECIALS = N_(
    "safe_end called without the special tokens: a special token cut between two pieces is encoded as "
    "text; call safe_end(buffer, self.special_tokens)"
)


def _safe_end(buffer, special_tokens):
    """The lesson's `safe_end` (given in its first cell): how much of `buffer` can be encoded now."""
    import regex

    hold = 0
    for k in range(1, max(map(len, special_tokens), default=0) + 1):
        if any(s.startswith(buffer[-k:]) for s in special_tokens) and k <= len(buffer):
            hold = k
    region = buffer[: len(buffer) - hold]
    start = 0
    if special_tokens:
        pattern = "|".join(regex.escape(s) for s in sorted(special_tokens, key=len, reverse=True))
        for m in regex.finditer(pattern, region):
            start = m.end()
    if start == len(region):  # ends with a whole special token
        return start
    ends = [start + m.end() for m in regex.finditer(GPT2_PATTERN, region[start:])][:-1]
    safe = [e for e in ends if not region[e - 1].isspace()]
    return safe[-1] if safe else start


def _streamed(lines, vocab, merges, specials, mistake):
    """`_read` of the reference encode_iterable with one mistake: "at_space" (the buffer cut at its
    last space), "no_flush" (the buffer left after the last piece dropped), "no_specials" (safe_end
    told of no special tokens)."""

    def encode_iterable(pieces):
        buffer = ""
        for piece in pieces:
            buffer += piece
            if mistake == "at_space":
                end = max(buffer.rfind(" "), 0)
            else:
                end = _safe_end(buffer, [] if mistake == "no_specials" else specials)
            if end:
                yield from encode(buffer[:end], vocab, merges, specials)
                buffer = buffer[end:]
        if mistake != "no_flush":
            yield from encode(buffer, vocab, merges, specials)

    return _read(encode_iterable, lines)


def _spaced(text: str, seed: int) -> str:
    """`text` with runs of 2 to 6 spaces in place of some of its spaces, and lines indented by 4."""
    rng = random.Random(seed)
    out = "".join(" " * rng.choice((1, 1, 2, 3, 4, 6)) if c == " " else c for c in text)
    return out.replace("\n", "\n    ")


def _cut_in_runs(text: str, seed: int) -> list:
    """`text` cut inside its runs of spaces (after two or more of a run of three or more), and at
    random places between them."""
    import regex

    rng = random.Random(seed)
    cuts = {m.start() + rng.randint(2, len(m.group()) - 1) for m in regex.finditer(" {3,}", text)}
    cuts |= set(rng.sample(range(1, len(text)), len(text) // 40))
    cuts = sorted(cuts)
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def _lines(text: str, seed: int) -> list:
    """`text` cut at random places (inside words, inside special tokens, between characters)."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, len(text) // 25)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def _stream_specs(hidden: bool) -> list:
    text = _with_eot(_slice("en", 51 + hidden, 2500 if hidden else 1500) + _STRINGS[1] + _STRINGS[2], 3)
    source = ("trained", _with_eot(_slice("en", 53, 2500), 4), 258 + 120, [EOT, EOT2])
    by_line = text.splitlines(keepends=True)
    # runs of spaces: a vocab that merges them, a text cut inside them
    spaced = ("trained", _with_eot(_spaced(_slice("en", 57, 1500), 57), 4), 258 + 60, [EOT, EOT2])
    runs = _spaced(_slice("en", 59 + hidden, 600 if hidden else 400), 59 + hidden)
    # Chinese with no whitespace (a space in its first piece only): safe points at its punctuation
    zh = _STRINGS[2][:10] + "".join(_slice("zh", 61 + hidden, 700 if hidden else 500).split())
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
        (
            lambda n: msg(
                "encode_iterable of English with runs of spaces, cut inside the runs, {n} pieces", n=n
            ),
            spaced,
            [EOT, EOT2],
            _cut_in_runs(runs, 63 + hidden),
        ),
        (
            lambda n: msg("encode_iterable of Chinese with no spaces, cut at random places, {n} pieces", n=n),
            source,
            [EOT, EOT2],
            _lines(zh, 65 + hidden),
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
    if not isinstance(r, (list, tuple)) or len(r) != 4:
        raise CheckFailure(msg("{name}: the grader could not read what it returned", name="encode_iterable"))
    ids, lazy, at_first, held = r
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):  # ("type", name): not ids
        shown = next((i for i in ids if not isinstance(i, int)), ids) if isinstance(ids, list) else ids[1]
        shown = f"{shown!s:.40}" + ("..." if len(str(shown)) >= 40 else "")  # _plain_ids cut it at 40
        raise CheckFailure(
            msg("encode_iterable yielded {value}, not an int id", value=shown)
            + got_expected(shown, N_("an int id"))
        )
    vocab, merges = _source(f)
    lines, specials = f["lines"], f["specials"]
    text = "".join(lines)
    expected = encode(text, vocab, merges, specials)
    mistakes = (
        (H_AT_SPACE, "at_space"),
        (H_NO_FLUSH, "no_flush"),
        (H_SAFE_END_SPECIALS, "no_specials"),
    )
    if ids != expected:
        per_line = [i for line in lines for i in encode(line, vocab, merges, specials)]
        hint = H_PER_LINE if ids == per_line else ""
        hint = hint or next(
            (h for h, m in mistakes if ids == _streamed(lines, vocab, merges, specials, m)[0]), ""
        )
        if not hint:  # encode's mistakes where they reproduce, else got and expected only
            _encode_failed(ids, text, vocab, merges, specials, what="encode_iterable", guess=False)
        k = next((i for i, (a, b) in enumerate(zip(ids, expected)) if a != b), min(len(ids), len(expected)))
        raise CheckFailure(
            msg("encode_iterable differs from encode of the joined text from id {k} on.", k=k)
            + got_expected(_short(ids[k:]), _short(expected[k:]))
            + hint_line(hint)
        )
    n = len(lines)
    if lazy and at_first <= max(2, n // 2) and held > max(2, n // 2):  # lazy at first, then not
        hint = (
            H_AT_SPACE
            if (at_first, held) == _streamed(lines, vocab, merges, specials, "at_space")[2:]
            else ""
        )
        raise CheckFailure(
            msg("encode_iterable read {read} of {n} lines in a row without giving an id.", read=held, n=n)
            + got_expected(msg("{n} lines read", n=held), N_("a few lines read"))
            + (hint_line(hint) if hint else "")
        )
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
            + (hint_line(H_NOT_LAZY) if at_first == n else "")
        )
