"""train_bpe (and train_bpe_naive, judged the same way): the helper `run_train` (run where the answer
runs: the vocab and merges as latin-1 strings, or what is wrong with them as data), the cases,
the hints of the classic mistakes and the judge that names the first wrong merge."""

from __future__ import annotations

import random

from .._core import LINE, Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure
from ..i18n import N_, Msg, join, msg
from ._shared import (
    A_DOT_B,
    BERT_CLS,
    BERT_SEP,
    EOT,
    EOT2,
    _b2s,
    _random_words,
    _s2b,
    _slice,
    _with_eot,
    _with_specials,
    train,
)
from .train_bpe_naive import reference_pretoken_counts, train_naive

# train_bpe_naive's answer cell defines pretoken_counts too, which the student's train_bpe calls: when
# the naive trainer fails its own check, train_bpe's cases run with the reference of both (one
# mistake costs one question, byhand._depends). This module judges both trainers, so the
# declarations are theirs alike (the naive one skips itself).
EARLIER = ("train_bpe_naive",)
REFERENCE = train_naive  # what replaces a naive trainer that fails (byhand._depends)
ALSO_REPLACED = {"pretoken_counts": reference_pretoken_counts}

# ---------------------------------------------------------------------------------------------
# Helpers: run where the answer lives, return plain values


def _vocab_facts(vocab, merges):
    """("ok", vocab items, merges) with bytes as latin-1 strings, or ("bad", what is wrong, its
    values): data, the judge words it (`_BAD`)."""
    if not isinstance(vocab, dict):
        return ("bad", "vocab_type", type(vocab).__name__)
    items = []
    for k, v in list(vocab.items())[:200_000]:
        if not isinstance(k, int) or isinstance(k, bool):
            return ("bad", "key", f"{k!r:.40}")
        if not isinstance(v, bytes):
            return ("bad", "value", f"{k}", type(v).__name__, f"{v!r:.40}")
        items.append((int(k), _b2s(v)))
    if not isinstance(merges, (list, tuple)):
        return ("bad", "merges_type", type(merges).__name__)
    out = []
    for m in list(merges)[:200_000]:
        if not (isinstance(m, tuple) and len(m) == 2 and all(isinstance(x, bytes) for x in m)):
            return ("bad", "merge", f"{m!r:.60}")
        out.append((_b2s(m[0]), _b2s(m[1])))
    return ("ok", items, out)


def run_train(fn, text, vocab_size, special_tokens):
    result = fn(text, vocab_size, list(special_tokens))
    if not (isinstance(result, tuple) and len(result) == 2):
        return ("bad", "returned", type(result).__name__)
    return _vocab_facts(*result)


TEN = "abababcabc"  # the lesson's ten-character example
SEP, SEP_BB = "<|s|>", "<|s|>bb"  # SEP_BB starts with SEP and is not made of it: longest first matters


def _words_with_seps(seed: int, letters: str) -> str:
    """Random words of `letters` (no b) with SEP and SEP_BB between them: matched shortest first,
    SEP_BB leaves a "bb" behind as text, 15 times."""
    rng = random.Random(seed)
    words = _random_words(seed, 60, letters).split(" ")
    for i in range(30):
        words.insert(rng.randrange(len(words)), SEP_BB if i % 2 else SEP)
    return " ".join(words)


def _english(n: int, *specials) -> Msg:
    """The words of a case label: `n` characters of English (with these special tokens)."""
    if len(specials) == 2:
        return msg("{n} characters of English with {a} and {b}", n=n, a=specials[0], b=specials[1])
    return msg("{n} characters of English", n=n)


def _chinese(n: int, *specials) -> Msg:
    """The words of a case label: `n` characters of Chinese (with this special token)."""
    if specials:
        return msg("{n} characters of Chinese with {a}", n=n, a=specials[0])
    return msg("{n} characters of Chinese", n=n)


def _random_label(letters: str, *specials) -> Msg:
    """The words of a case label: random words of `letters` (with two special tokens between them)."""
    shown = join(N_(", "), letters)  # the letters are data; the comma is the language's
    if specials:
        return msg(
            "random words of {letters} with {a} and {b} between them",
            letters=shown,
            a=specials[0],
            b=specials[1],
        )
    return msg("random words of {letters} (many ties)", letters=shown)


def _train_specs(hidden: bool) -> list:
    """(label, text, vocab_size, special tokens)."""
    if not hidden:
        return [
            (msg("the ten-character example {text}", text=repr(TEN)), TEN, 256 + 4, []),
            (
                msg("{text} (overlapping pairs; every pair merged before vocab_size)", text=repr("aaa aaaa")),
                "aaa aaaa",
                300,
                [],
            ),
            (_random_label("abc"), _random_words(7, 60), 256 + 12, []),
            (_english(3000), _slice("en", 11, 3000), 256 + 40, []),
            (_english(2000, EOT, EOT2), _with_eot(_slice("en", 12, 2000), 4), 258 + 30, [EOT, EOT2]),
            (_chinese(800), _slice("zh", 13, 800), 256 + 30, []),
            (_random_label("ac", SEP, SEP_BB), _words_with_seps(14, "ac"), 258 + 8, [SEP, SEP_BB]),
            (
                _english(2000, BERT_SEP, BERT_CLS),
                _with_specials(_slice("en", 16, 2000), 3, [BERT_SEP, BERT_CLS]),
                258 + 30,
                [BERT_SEP, BERT_CLS],
            ),
        ]
    return [
        (_random_label("abcd"), _random_words(8, 90, "abcd"), 256 + 20, []),
        (_random_label("ad", SEP, SEP_BB), _words_with_seps(15, "ad"), 258 + 10, [SEP, SEP_BB]),
        (_english(6000), _slice("en", 21, 6000), 256 + 80, []),
        (_english(4000, EOT, EOT2), _with_eot(_slice("en", 22, 4000), 3), 258 + 50, [EOT2, EOT]),
        (_chinese(1500), _slice("zh", 23, 1500), 256 + 60, []),
        (_chinese(1500, EOT), _with_eot(_slice("zh", 24, 1500), 2), 257 + 40, [EOT]),
        (
            _english(3000, A_DOT_B, BERT_SEP),
            _with_specials(_slice("en", 26, 3000), 2, [A_DOT_B, BERT_SEP]),
            258 + 50,
            [A_DOT_B, BERT_SEP],
        ),
    ]


def _train_cases(name):
    def cases(hidden):
        out = []
        for label, text, size, specials in _train_specs(hidden):
            steps = [call("r", helper("tokenizer.run_train"), graded(name), text, size, specials)]
            facts = dict(text=text, vocab_size=size, specials=specials)
            full = msg(
                "{call}, text = {text}",
                call=f"{name}(text, vocab_size={size}, special_tokens={specials})",
                text=label,
            )
            out.append(Case(full, steps, ["r"], facts=facts, size=len(text) * 100 + size))
        return out

    return cases


# ---------------------------------------------------------------------------------------------
# Judging the trainers

H_TIES = N_(
    "ties broken the wrong way: when pairs have the same count, merge the lexicographically greatest "
    "pair of bytes, max(pairs, key=lambda p: (counts[p], p))"
)
H_TIES_IDS = N_(
    "ties broken by token ids: compare the pairs as bytes (b'ab' > b'a'), not by the ids of their tokens"
)
H_ACROSS = N_(
    "merges across pre-token boundaries: split the text with GPT2_PATTERN first and count pairs "
    "only inside each pre-token"
)
H_SPECIAL_COUNTED = N_(
    "special tokens counted as text: cut the text at every special token first and never count "
    "pairs across or inside them"
)
H_UNESCAPED = N_(
    "special tokens put into the pattern unescaped: in a regular expression [SEP] is a class of three "
    "characters and a.b matches a, any one character, then b; escape each token, regex.escape(token), "
    "before joining them with |"
)
H_SPECIAL_DELETED = N_(
    "special tokens deleted from the text: the words on both sides of one then run together; cut the "
    "text at them with regex.split and count each piece on its own"
)
H_CHARS = N_(
    "pre-tokens made of characters, not of single bytes: a Chinese character is 3 bytes, and BPE "
    'starts from single bytes, tuple(bytes([b]) for b in tok.encode("utf-8"))'
)
H_UNIQUE = N_(
    "each pre-token counted once: a pair's count is the sum of the counts of the pre-tokens it occurs in"
)
H_STALE = N_(
    "the pair merged is not the most frequent one at that step: after a merge, update the counts of "
    "the pairs around each merged occurrence (the left neighbour's pair, the right neighbour's pair)"
)
H_NOT_A_PAIR = N_(
    "the pair merged does not occur inside any pre-token at that step: count pairs of adjacent "
    "tokens within pre-tokens, after the earlier merges"
)
H_LONGEST_TRAIN = N_(
    "special tokens not tried longest first: when one special token starts with another (<|s|> and "
    "<|s|>bb), the shorter one is found first and the rest of the longer one counted as text; sort them "
    "by length, longest first, before joining them with |"
)
H_STR_SPLIT = N_(
    "pre-tokens made with str.split(): it drops the spaces and keeps punctuation on the words; split "
    "each piece with regex.findall(GPT2_PATTERN, piece)"
)
H_NEW_WEIGHT = N_(
    "the pairs a merge makes are counted once each: add the pre-token's count n to each new pair, as "
    "you subtract it from each pair the merge removes"
)
H_ORDER = N_(
    "vocab id order wrong: special tokens first (ids 0, 1, ...), then the 256 single bytes in byte "
    "order, then one token per merge in the order made"
)
H_SPECIALS_AT_END = N_(
    "special tokens placed after the merges: they take the first ids, before the 256 bytes"
)
H_TOO_MANY = N_(
    "training stops at the wrong size: merge until len(vocab) == vocab_size (the special tokens and "
    "the 256 bytes count too), or until no pair is left"
)
H_BYTES = N_("vocab values and merges must be bytes (b'th'), not str: work on the UTF-8 bytes of the text")


def _fmt_pair(p) -> str:
    return f"({p[0]!r}, {p[1]!r})"


def _got_expected_code(got: str, expected: str):
    """The `got:` and `expected:` lines of values that are code (bytes, a pair of bytes), quoted as
    code in a translation."""
    return LINE + msg("got:      {code}", code=got) + LINE + msg("expected: {code}", code=expected)


def _train_judge(name):
    def judge(case, out):
        f = case.facts
        r = out["r"]
        if not isinstance(r, (list, tuple)) or not r or r[0] not in ("ok", "bad"):
            raise CheckFailure(msg("{name}: the grader could not read what it returned", name=name))
        if r[0] == "bad":  # a fact the helper found where the answer runs: its code and values
            raise CheckFailure(_bad(name, r[1:]) + hint_line(H_BYTES))
        got_vocab = {int(k): _s2b(v) for k, v in r[1]}
        got_merges = [(_s2b(a), _s2b(b)) for a, b in r[2]]
        text, size, specials = f["text"], f["vocab_size"], f["specials"]
        vocab, merges, _ = train(text, size, specials)
        if got_merges != merges and not {s.encode("utf-8") for s in specials} <= set(got_vocab.values()):
            _vocab_failed(name, got_vocab, vocab, merges, specials, lost=True)  # special tokens lost
        if got_merges != merges:
            _merges_failed(name, got_merges, merges, text, size, specials)
        if got_vocab != vocab:
            _vocab_failed(name, got_vocab, vocab, merges, specials)

    return judge


def _bad(name, fact) -> Msg:
    """The first line of a failure `_vocab_facts` or `run_train` reported as (code, values...)."""
    code, values = (fact[0], tuple(fact[1:])) if fact else ("", ())
    if code == "returned" and len(values) == 1:
        return msg("{name}: it returned a {type}, not a pair (vocab, merges)", name=name, type=values[0])
    if code == "vocab_type" and len(values) == 1:
        return msg("{name}: vocab is a {type}, not a dict", name=name, type=values[0])
    if code == "key" and len(values) == 1:
        return msg("{name}: vocab has the key {key}, not an int id", name=name, key=values[0])
    if code == "value" and len(values) == 3:
        return msg(
            "{name}: vocab[{i}] is a {type} ({value}), not bytes",
            name=name,
            i=values[0],
            type=values[1],
            value=values[2],
        )
    if code == "merges_type" and len(values) == 1:
        return msg("{name}: merges is a {type}, not a list", name=name, type=values[0])
    if code == "merge" and len(values) == 1:
        return msg("{name}: the merge {merge} is not a tuple of two bytes", name=name, merge=values[0])
    raise CheckFailure(msg("{name}: the grader could not read what it returned", name=name))


def _merges_failed(name, got, merges, text, size, specials):
    variants = [
        (H_TIES, dict(tie="smallest")),
        (H_TIES, dict(tie="first")),
        (H_TIES_IDS, dict(tie="ids")),
        (H_ACROSS, dict(split="none")),
        (H_SPECIAL_COUNTED, dict(cut=False)),
        (H_SPECIAL_DELETED, dict(cut="delete")),
        (H_UNESCAPED, dict(escape=False)),
        (H_UNIQUE, dict(unique=True)),
        (H_LONGEST_TRAIN, dict(longest=False)),
        (H_STR_SPLIT, dict(split="ws")),
        (H_STALE, dict(stale=True)),
        (H_NEW_WEIGHT, dict(new_weight=1)),
        (H_CHARS, dict(chars=True)),
    ]
    hint = ""
    for h, kw in variants:
        try:
            made = train(text, size, specials, **kw)[1]
        except Exception:  # noqa: BLE001 - tokens that unescaped are no pattern: not this mistake
            continue
        if got == made:
            hint = h
            break
    k = next((i for i, (a, b) in enumerate(zip(got, merges)) if a != b), min(len(got), len(merges)))
    if k == len(merges) or k == len(got):
        exhausted = len(merges) < size - 256 - len(specials)  # the reference ran out of pairs
        if not hint and exhausted and len(got) > len(merges):
            hint = H_NOT_A_PAIR
        # stopped at another size: the reference trained to a vocab_size off by one or by the specials
        sizes = {size + d for d in (1, -1, len(specials), -len(specials)) if d}
        if not hint and any(got == train(text, s, specials)[1] for s in sorted(sizes) if s > 256):
            hint = H_TOO_MANY
        raise CheckFailure(
            msg(
                "{name}: {n} merges where {m} were expected (the first {k} agree).",
                name=name,
                n=len(got),
                m=len(merges),
                k=k,
            )
            + got_expected(
                msg("{n} merges", n=len(got)),
                msg(
                    "{n} merges (vocab_size {size}, {specials} special tokens)",
                    n=len(merges),
                    size=size,
                    specials=len(specials),
                ),
            )
            + (hint_line(hint) if hint else "")
        )
    if not hint:
        # what was true at merge k: the state after the k merges both made
        _, _, left = train(text, 256 + len(specials) + k, specials)
        c_got, c_exp = left.get(got[k], 0), left[merges[k]]
        # a fact of merge k, not a guess at the mistake: the pair was none, or tied with the expected
        hint = H_NOT_A_PAIR if c_got == 0 else H_TIES if c_got == c_exp else ""
    raise CheckFailure(
        msg("{name}: merge {k} (counting from 0) is wrong; the {k} before it agree.", name=name, k=k)
        + _got_expected_code(_fmt_pair(got[k]), _fmt_pair(merges[k]))
        + (hint_line(hint) if hint else "")
    )


def _vocab_failed(name, got, vocab, merges, specials, lost=False):
    """Fail at the first wrong id of the vocab; `lost`: a special token is missing from it (its id
    taken by a byte), which matters more than its size."""
    if len(got) != len(vocab) and not lost:
        raise CheckFailure(
            msg("{name}: the vocab has {n} tokens.", name=name, n=len(got))
            + got_expected(msg("{n} tokens", n=len(got)), msg("{n} tokens", n=len(vocab)))
            + hint_line(H_TOO_MANY)
        )
    wrong = next(i for i in sorted(vocab) if got.get(i) != vocab[i])
    ends = {
        i: t for i, t in enumerate(list(vocab.values())[len(specials) :] + [s.encode() for s in specials])
    }
    hint = H_SPECIALS_AT_END if specials and got == ends else H_ORDER
    raise CheckFailure(
        msg("{name}: vocab[{i}] is wrong.", name=name, i=wrong)
        + _got_expected_code(repr(got.get(wrong)), repr(vocab[wrong]))
        + hint_line(hint)
    )
