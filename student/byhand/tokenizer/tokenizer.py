"""Tokenizer: the helper `run_tokenizer` (run where the answer runs: encode, decode back, decode cut
characters), its cases, the hints of the classic encoding and decoding mistakes and its judge."""

from __future__ import annotations

from .._core import Case, call, got_expected, graded, helper, hint_line
from .._judge import CheckFailure
from ..i18n import N_, msg
from ._shared import (
    _STRINGS,
    BERT_CLS,
    BERT_SEP,
    EOT,
    EOT2,
    _slice,
    _with_eot,
    _with_specials,
    decode,
    encode,
    gpt2,
    train,
)
from .train_bpe import H_STR_SPLIT


def _tokenizer(cls, source, special_tokens):
    if source[0] == "gpt2":
        vocab, merges = gpt2()
    else:
        _, text, size, specials = source
        vocab, merges, _ = train(text, size, specials)
    return cls(dict(vocab), list(merges), list(special_tokens) or None)


def _plain_ids(ids):
    if not isinstance(ids, (list, tuple)):
        return ("type", type(ids).__name__)  # a tuple: not a list of ids, its type's name
    return [int(i) if isinstance(i, int) else repr(i)[:40] for i in ids]


def run_tokenizer(cls, source, special_tokens, texts, id_lists):
    """Encode each text, decode its ids back, decode each of `id_lists`; a decode that raises is
    reported as its error."""
    tok = _tokenizer(cls, source, special_tokens)
    encoded, round_trips, decoded = [], [], []
    for text in texts:
        ids = tok.encode(text)
        encoded.append(_plain_ids(ids))
        round_trips.append(_decoded(tok, ids))
    for ids in id_lists:
        decoded.append(_decoded(tok, list(ids)))
    return encoded, round_trips, decoded


def _decoded(tok, ids):
    try:
        out = tok.decode(ids)
    except UnicodeDecodeError as exc:
        return ["raised", f"UnicodeDecodeError: {exc}"[:200]]
    return ["ok", out] if isinstance(out, str) else ["ok", repr(out)[:80]]


# ---------------------------------------------------------------------------------------------
# Judging the tokenizer

H_RANK = N_(
    "merges applied out of rank order: within a pre-token, always merge the pair with the lowest rank first"
)
H_LEFTMOST = N_(
    "merges applied left to right, not by rank: among the adjacent pairs that have a merge, take the one "
    "with the lowest rank (the earliest merge), wherever it is"
)
H_ENC_ACROSS = N_(
    "merges across pre-token boundaries: split with GPT2_PATTERN first and encode each pre-token on its own"
)
H_SPECIAL_SPLIT = N_(
    "special tokens split: cut the text at the special tokens first and give each its own id, never "
    "encode it as text"
)
H_SPECIAL_DROPPED = N_(
    "special tokens dropped: regex.split gives back what it cuts at only when the pattern is a group; "
    "put the special tokens' pattern in parentheses and give each special token its id"
)
H_LONGEST = N_(
    "overlapping special tokens not matched longest first: sort them by length, longest first, before "
    "building the pattern that cuts the text"
)
H_ENC_UNESCAPED = N_(
    "special tokens put into the pattern unescaped: | [ ] . + are regular-expression syntax, so "
    "<|endoftext|> matches <, endoftext or > anywhere in the text and [SEP] any one of S, E and P; "
    "escape each token, regex.escape(token), before joining them with |"
)
H_OFFSET = N_(
    "vocab id order wrong: ids come from the vocab (special tokens first, then the bytes), not from "
    "the byte values or the merge ranks"
)
H_BY_INDEX = N_(
    "special token ids taken from their place in special_tokens: look each one up in the vocab (its "
    "bytes -> its id); GPT-2's <|endoftext|> is id 50256"
)
H_ENCODE = N_(
    "encode differs from the reference: cut at the special tokens (longest first), split each piece with "
    "GPT2_PATTERN, merge each pre-token's bytes in rank order, then map the byte strings to their vocab ids"
)
H_DECODE_RAISES = N_(
    'decode raised on ids that cut a character: join the bytes, then .decode("utf-8", errors="replace")'
)
H_DECODE = N_('decode: join the bytes of every id (vocab[i]), then .decode("utf-8", errors="replace") once')
H_PER_TOKEN = N_(
    "decoded token by token: a character split over two tokens becomes replacement characters; join "
    "all the bytes first, then decode once"
)


def _tok_specs(hidden: bool) -> list:
    """(label, source, special tokens, texts, id lists to decode)."""
    en, zh = _slice("en", 41 + hidden, 3000), _slice("zh", 43 + hidden, 1200)
    train_text = _with_eot(en + zh, 5)
    trained = ("trained", train_text, 258 + (200 if hidden else 150), [EOT, EOT2])
    texts = list(_STRINGS) + [
        # an unescaped <|endoftext|> cuts the text at "endoftext" (and at < and >), breaking merges
        "words like thendoftexthe are only text",
        _slice("en", 45 + hidden, 400),
        f"one{EOT}two {EOT2} three{EOT}{EOT}{EOT}",
        _with_eot(_slice("zh", 47 + hidden, 200), 2),
    ]
    texts.append("<|endoftext|<|endoftext|>>" if hidden else "<<|endoftext|><|endoftext|")
    if hidden:
        texts.append(_slice("en", 49, 1500))
    # regex metacharacters other than |: unescaped, [SEP] and [CLS] cut the text at every S, E, P, C
    # and L; words in capitals in the training text give those letters merges, which the cuts break
    bert = [BERT_SEP, BERT_CLS]
    caps = "PEACE SPEECH CLASS SELAH LORD " * 30
    bert_text = _with_specials(_slice("en", 51 + hidden, 1500) + "\n" + caps, 3, bert)
    bert_texts = [
        f"{BERT_CLS} SPEECH of PEACE, said the LORD.{BERT_SEP}SELAH {BERT_SEP}{BERT_CLS}",
        _with_specials(_slice("en", 53 + hidden, 300), 1, bert) + " CLASS",
    ]
    cut = list("中文🙂".encode())  # single bytes: decoding ids of a cut character
    gpt2_ids = {t: i for i, t in gpt2()[0].items()}
    gpt2_cut = [gpt2_ids[bytes([b])] for b in cut]
    return [
        (
            msg(
                "Tokenizer with a vocabulary trained on English and Chinese with special tokens {a} and {b}",
                a=EOT,
                b=EOT2,
            ),
            trained,
            [EOT, EOT2],
            texts,
            [[2 + b for b in cut[:2]], [2 + b for b in cut[:4]], [2 + b for b in cut[3:]]],
        ),
        (
            msg("Tokenizer with GPT-2's vocabulary and merges"),
            ("gpt2",),
            [EOT],
            [*texts[:4], texts[6], texts[8], f"Bye.{EOT}Hallo, schöne Grüße aus Köln!"],
            [gpt2_cut[:2], gpt2_cut[:7]],
        ),
        (  # special_tokens=None, its default: no special token, <|endoftext|> is text
            msg("Tokenizer with GPT-2's vocabulary and merges, special_tokens=None"),
            ("gpt2",),
            [],
            [f"Bye.{EOT}Hallo, {EOT2}!", texts[0]],
            [],
        ),
        (
            msg(
                "Tokenizer with a vocabulary trained on English with special tokens {a} and {b}",
                a=BERT_SEP,
                b=BERT_CLS,
            ),
            ("trained", bert_text, 258 + 100, bert),
            bert,
            bert_texts,
            [],
        ),
    ]


def _tok_cases(hidden):
    out = []
    for label, source, specials, texts, id_lists in _tok_specs(hidden):
        steps = [
            call(
                "r", helper("tokenizer.run_tokenizer"), graded("Tokenizer"), source, specials, texts, id_lists
            )
        ]
        facts = dict(source=source, specials=specials, texts=texts, id_lists=id_lists)
        # the case of [SEP] and [CLS] last: the others name the classic mistakes, which its few short
        # texts may not tell apart
        size = sum(map(len, texts)) * (100 if BERT_SEP in specials else 1)
        out.append(Case(label, steps, ["r"], facts=facts, size=size))
    return out


def _source(facts):
    if facts["source"][0] == "gpt2":
        return gpt2()
    _, text, size, specials = facts["source"]
    return train(text, size, specials)[:2]


def _short(ids, limit=12) -> str:
    if not isinstance(ids, list):
        return str(ids)
    return str(ids[:limit])[:-1] + (", ...]" if len(ids) > limit else "]")


def _encoded(text, vocab, merges, specials, mistake):
    """The reference encoder with one mistake; None when the mistake cannot run on these tokens (an
    unescaped token that is no pattern)."""
    try:
        return encode(text, vocab, merges, specials, **mistake)
    except Exception:  # noqa: BLE001 - regex's error on a pattern that does not compile
        return None


def _encode_failed(got, text, vocab, merges, specials, what="Tokenizer.encode", guess=True):
    """Fail with the first id that differs, and the hint of the encoding mistake that gives `got`;
    none reproducing it, `guess` words the ids (H_OFFSET: as many, other ids) or the whole recipe
    (H_ENCODE), else (encode_iterable, whose encode passed its own check) only got and expected."""
    variants = [
        (H_RANK, dict(order="highest")),
        (H_LEFTMOST, dict(order="leftmost")),
        (H_ENC_ACROSS, dict(split="none")),
        (H_STR_SPLIT, dict(split="ws")),
        (H_SPECIAL_SPLIT, dict(cut=False)),
        (H_SPECIAL_DROPPED, dict(drop=True)),
        (H_ENC_UNESCAPED, dict(escape=False)),
        (H_LONGEST, dict(longest=False)),
        (H_OFFSET, dict(offset=len(specials))),
        (H_BY_INDEX, dict(by_index=True)),
    ]
    expected = encode(text, vocab, merges, specials)
    hint = next((h for h, kw in variants if got == _encoded(text, vocab, merges, specials, kw)), "")
    if not hint and specials and isinstance(got, list):  # special tokens given as shortest first
        hint = (
            H_LONGEST if got == encode(text, vocab, merges, sorted(specials, key=len), longest=False) else ""
        )
    if not hint and guess:  # the same number of tokens with other ids: the ids, not the merges, are wrong
        hint = H_OFFSET if isinstance(got, list) and len(got) == len(expected) else H_ENCODE
    k = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise CheckFailure(
        msg("{who} of {text} differs from id {k} on.", who=what, text=repr(shown), k=k)
        + got_expected(_short(got[k:]), _short(expected[k:]))
        + (hint_line(hint) if hint else "")
    )


def _tok_judge(case, out):
    f = case.facts
    r = out["r"]
    if not isinstance(r, (list, tuple)) or len(r) != 3:
        raise CheckFailure(msg("{name}: the grader could not read what it returned", name="Tokenizer"))
    encoded, round_trips, decoded = r
    vocab, merges = _source(f)
    specials = f["specials"]
    for text, got, back in zip(f["texts"], encoded, round_trips):
        if isinstance(got, tuple) and len(got) == 2 and got[0] == "type":  # not a list: its type
            raise CheckFailure(
                msg("Tokenizer.encode returned 'a {type}', not a list of int ids", type=f"{got[1]!s:.40}")
            )
        if not isinstance(got, list) or not all(isinstance(i, int) for i in got):
            raise CheckFailure(
                msg("Tokenizer.encode returned {value}, not a list of int ids", value=f"{got!r:.60}")
            )
        if got != encode(text, vocab, merges, specials):
            _encode_failed(got, text, vocab, merges, specials)
        if back[0] == "raised":
            raise CheckFailure(
                msg("{name} raised {error}", name="Tokenizer.decode", error=back[1])
                + hint_line(H_DECODE_RAISES)
            )
        if back[1] != text:
            raise CheckFailure(
                msg("decode(encode(s)) != s for s = {text}.", text=repr(text[:60]))
                + got_expected(
                    msg("the text {text}", text=repr(back[1][:60])),
                    msg("the text {text}", text=repr(text[:60])),
                )
                + hint_line(H_PER_TOKEN if back[1] == decode(got, vocab, per_token=True) else H_DECODE)
            )
    for ids, back in zip(f["id_lists"], decoded):
        if back[0] == "raised":
            raise CheckFailure(
                msg("Tokenizer.decode({ids}) raised {error}", ids=str(ids), error=back[1])
                + hint_line(H_DECODE_RAISES)
            )
        expected = decode(ids, vocab)
        if back[1] != expected:
            per = decode(ids, vocab, per_token=True)
            raise CheckFailure(
                msg("Tokenizer.decode({ids}) is wrong.", ids=str(ids))
                + got_expected(
                    msg("the text {text}", text=repr(back[1])), msg("the text {text}", text=repr(expected))
                )
                + hint_line(H_PER_TOKEN if back[1] == per else H_DECODE)
            )
