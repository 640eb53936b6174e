"""Checks for lesson 11_tokenizer: byte-level BPE, trained on real text.

Every verdict compares with the grader's own references, computed in its process: a BPE trainer
(pair counts kept incrementally, ties to the lexicographically greatest pair of bytes) and an
encoder (merges in rank order within GPT-2's pre-tokens, special tokens longest first). On a
mismatch the classic mistakes are recomputed on the same inputs (ties broken another way, pairs
counted across pre-tokens, special tokens counted as text, merges applied out of rank order,
special tokens split or matched shortest first, decoding token by token...) and the one the answer
reproduces is named; a trainer whose merges match none is told at which merge it went wrong and
whether the pair it chose was tied, less frequent, or not a pair at all.

Bytes do not travel on the wire, so the helpers that run where the answer lives (`run_train`,
`run_tokenizer`, `run_stream`, `time_train`) send tokens back as latin-1 strings (one character per
byte) and report type problems as data (a code and its values, which the judge words). The texts
are slices of the shipped corpus (`byhand.corpus`), chosen by seed: hidden cases differ only in the
slices and sizes. `regex` (GPT-2's pattern needs `\\p{L}`) is imported when a check runs, not when
this module is.
"""

from __future__ import annotations

import collections
import random
import time

from . import _core, corpus
from ._core import LINE, Case, Question, call, got_expected, graded, helper, hint_line
from ._judge import CheckFailure
from .i18n import N_, Msg, msg

LESSON = "11_tokenizer"
HELPERS = ("run_train", "run_tokenizer", "run_stream", "time_train")

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"
EOT2 = EOT + EOT  # overlaps EOT: must be matched first (longest first)


def _regex():
    import regex

    return regex


# ---------------------------------------------------------------------------------------------
# Bytes on the wire: latin-1 strings, one character per byte


def _b2s(b: bytes) -> str:
    return b.decode("latin-1")


def _s2b(s: str) -> bytes:
    return s.encode("latin-1")


# ---------------------------------------------------------------------------------------------
# References (and the mistakes, as variants of them)


def special_split(text: str, specials) -> list:
    """`text` cut at the special tokens (longest first): a list of (is_special, piece)."""
    if not specials:
        return [(False, text)]
    re = _regex()
    alt = "|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True))
    out, at = [], 0
    for m in re.finditer(alt, text):
        out.append((False, text[at : m.start()]))
        out.append((True, m.group()))
        at = m.end()
    out.append((False, text[at:]))
    return [(s, p) for s, p in out if s or p]


def _words(text: str, specials, split="gpt2", cut=True) -> dict:
    """{pre-token as a tuple of single bytes: count}, in order of first appearance."""
    re = _regex()
    counts: dict = {}
    pieces = special_split(text, specials) if cut else [(False, text)]
    for is_special, piece in pieces:
        if is_special:
            continue
        for tok in re.findall(GPT2_PATTERN, piece) if split == "gpt2" else [piece]:
            w = tuple(bytes([b]) for b in tok.encode("utf-8"))
            counts[w] = counts.get(w, 0) + 1
    return counts


def _merge_word(w, pair, merged):
    out, i = [], 0
    while i < len(w):
        if i + 1 < len(w) and w[i] == pair[0] and w[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(w[i])
            i += 1
    return out


def _pick(pairs: dict, tie: str, ids: dict):
    top = max(pairs.values())
    tied = [p for p, c in pairs.items() if c == top]
    if tie == "smallest":
        return min(tied)
    if tie == "ids":
        return max(tied, key=lambda p: (ids[p[0]], ids[p[1]]))
    if tie == "hf":  # Hugging Face tokenizers' BpeTrainer: the smallest pair of its token ids
        return min(tied, key=lambda p: (ids[p[0]], ids[p[1]]))
    if tie == "first":
        return tied[0]
    return max(tied)


def train(text, vocab_size, specials=(), tie="greatest", split="gpt2", cut=True, unique=False, at_end=False):
    """(vocab, merges, pair counts left) of BPE on `text`; the keywords make the classic mistakes:
    `tie` ("smallest", "first": the first pair counted, "ids": the greatest pair of token ids; and
    "hf", not a mistake but Hugging Face tokenizers' rule, for tests/test_claims_11.py),
    `split="none"` (no pre-tokens), `cut=False` (special tokens counted as text), `unique` (each
    distinct pre-token counted once), `at_end` (special tokens after the merges)."""
    specials = list(specials)
    base = {b: bytes([b]) for b in range(256)}
    vocab = {i + len(specials): t for i, t in base.items()}
    vocab.update({i: s.encode("utf-8") for i, s in enumerate(specials)})
    ids = {t: i for i, t in sorted(vocab.items(), reverse=True)}
    if tie == "hf":  # its ids: the bytes ordered by their printable stand-ins, then merges as made
        stand_in = bytes_to_unicode()
        ids = {bytes([b]): i for i, b in enumerate(sorted(range(256), key=lambda b: stand_in[b]))}
    counted = _words(text, specials, split, cut)
    words = [list(w) for w in counted]
    freq = [1 if unique else c for c in counted.values()]
    merges: list = []
    n_merges = vocab_size - len(vocab)
    if tie == "first":  # a naive recount each time: the order pairs are first met
        while len(merges) < n_merges:
            pairs: dict = {}
            for w, c in zip(words, freq):
                for p in zip(w, w[1:]):
                    pairs[p] = pairs.get(p, 0) + c
            if not pairs:
                break
            best = _pick(pairs, tie, ids)
            merges.append(best)
            ids.setdefault(best[0] + best[1], 256 + len(specials) + len(merges) - 1)
            words = [_merge_word(w, best, best[0] + best[1]) for w in words]
    else:
        pairs = collections.Counter()
        where = collections.defaultdict(set)
        for i, w in enumerate(words):
            for p in zip(w, w[1:]):
                pairs[p] += freq[i]
                where[p].add(i)
        while len(merges) < n_merges and pairs:
            best = _pick(pairs, tie, ids)
            merges.append(best)
            merged = best[0] + best[1]
            ids.setdefault(merged, 256 + len(specials) + len(merges) - 1)
            for i in sorted(where.pop(best)):
                w, c = words[i], freq[i]
                for p in zip(w, w[1:]):
                    pairs[p] -= c
                    if pairs[p] == 0:
                        del pairs[p]
                words[i] = _merge_word(w, best, merged)
                for p in zip(words[i], words[i][1:]):
                    pairs[p] += c
                    where[p].add(i)
    out = {}
    if at_end:
        out.update({i: bytes([i]) for i in range(256)})
        out.update({256 + i: a + b for i, (a, b) in enumerate(merges)})
        out.update({len(out) + i: s.encode("utf-8") for i, s in enumerate(specials)})
    else:
        out.update({i: s.encode("utf-8") for i, s in enumerate(specials)})
        out.update({len(specials) + i: bytes([i]) for i in range(256)})
        out.update({len(specials) + 256 + i: a + b for i, (a, b) in enumerate(merges)})
    left = collections.Counter()
    for w, c in zip(words, freq):
        for p in zip(w, w[1:]):
            left[p] += c
    return out, merges, left


def train_naive(text, vocab_size, special_tokens=()):
    """The naive trainer (every pair recounted after every merge), what `time_train` measures the
    answer against; the same merges as `train`."""
    specials = list(special_tokens)
    vocab = {i: s.encode("utf-8") for i, s in enumerate(specials)}
    vocab.update({len(specials) + b: bytes([b]) for b in range(256)})
    words = _words(text, specials)
    merges = []
    while len(vocab) < vocab_size:
        pairs = collections.Counter()
        for w, c in words.items():
            for p in zip(w, w[1:]):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        new: dict = {}
        for w, c in words.items():
            key = tuple(_merge_word(w, best, best[0] + best[1]))
            new[key] = new.get(key, 0) + c
        words = new
    return vocab, merges


def encode(
    text,
    vocab,
    merges,
    specials=(),
    order="rank",
    split="gpt2",
    cut=True,
    longest=True,
    offset=0,
    by_index=False,
):
    """Token ids of `text`; the keywords make the classic mistakes: `order` ("highest": the
    highest-ranked pair merged first, "leftmost": the first pair that has a merge), `split="none"`
    (merges across pre-tokens), `cut=False` (special tokens encoded as text), `longest=False`
    (special tokens matched in the order given, not longest first), `offset` (ids shifted),
    `by_index` (a special token's id taken as its index in `specials`, not from the vocab)."""
    re = _regex()
    ranks = {p: i for i, p in enumerate(merges)}
    ids = {t: i for i, t in sorted(vocab.items(), reverse=True)}
    specials = list(specials or ())
    if cut and specials:
        if longest:
            pieces = special_split(text, specials)
        else:
            alt = "|".join(re.escape(s) for s in specials)
            pieces, at = [], 0
            for m in re.finditer(alt, text):
                pieces += [(False, text[at : m.start()]), (True, m.group())]
                at = m.end()
            pieces.append((False, text[at:]))
    else:
        pieces = [(False, text)]
    out, cache = [], {}
    for is_special, piece in pieces:
        if is_special:
            out.append(specials.index(piece) if by_index else ids[piece.encode("utf-8")])
            continue
        for tok in re.findall(GPT2_PATTERN, piece) if split == "gpt2" else ([piece] if piece else []):
            if tok not in cache:
                parts = [bytes([b]) for b in tok.encode("utf-8")]
                while len(parts) > 1:
                    found = [(ranks[p], i) for i, p in enumerate(zip(parts, parts[1:])) if p in ranks]
                    if not found:
                        break
                    if order == "leftmost":
                        i = found[0][1]
                    elif order == "highest":
                        i = max(found)[1]
                    else:
                        i = min(found)[1]
                    pair = (parts[i], parts[i + 1])
                    parts = _merge_word(parts, pair, pair[0] + pair[1])
                cache[tok] = [ids[p] - offset for p in parts]
            out += cache[tok]
    return out


def decode(ids, vocab, per_token=False) -> str:
    if per_token:
        return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


def bytes_to_unicode() -> dict:
    """GPT-2's printable stand-in for each byte (the alphabet of its published files)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = [b for b in range(256) if b not in keep]
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + n) for n, b in enumerate(extra)}}


_GPT2: list = []


def gpt2():
    """(vocab, merges) of GPT-2 from its published files, as bytes."""
    if not _GPT2:
        back = {u: b for b, u in bytes_to_unicode().items()}
        vocab = {i: bytes(back[c] for c in tok) for tok, i in corpus.gpt2_encoder().items() if tok != EOT}
        vocab[corpus.gpt2_encoder()[EOT]] = EOT.encode()
        merges = [(bytes(back[c] for c in a), bytes(back[c] for c in b)) for a, b in corpus.gpt2_merges()]
        _GPT2.append((vocab, merges))
    return _GPT2[0]


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
# Case data: slices of the shipped texts


def _slice(name: str, seed: int, n: int) -> str:
    text = corpus.load_text(name)
    rng = random.Random(seed)
    start = text.find("\n", rng.randrange(0, len(text) - 2 * n)) + 1
    return text[start : start + n]


def _with_eot(text: str, every: int) -> str:
    """`text` with an end-of-text token after every `every`-th line (and a doubled one once)."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % every == every - 1:
            out.append(EOT2 if i // every == 1 else EOT)
    return "\n".join(out)


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
    shown = ", ".join(letters)  # data: the letters
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
        ]
    return [
        (_random_label("abcd"), _random_words(8, 90, "abcd"), 256 + 20, []),
        (_random_label("ad", SEP, SEP_BB), _words_with_seps(15, "ad"), 258 + 10, [SEP, SEP_BB]),
        (_english(6000), _slice("en", 21, 6000), 256 + 80, []),
        (_english(4000, EOT, EOT2), _with_eot(_slice("en", 22, 4000), 3), 258 + 50, [EOT2, EOT]),
        (_chinese(1500), _slice("zh", 23, 1500), 256 + 60, []),
        (_chinese(1500, EOT), _with_eot(_slice("zh", 24, 1500), 2), 257 + 40, [EOT]),
    ]


def _random_words(seed: int, n: int, letters: str = "abc") -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 6))) for _ in range(n))


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
        (H_UNIQUE, dict(unique=True)),
    ]
    hint = ""
    for h, kw in variants:
        if got == train(text, size, specials, **kw)[1]:
            hint = h
            break
    k = next((i for i, (a, b) in enumerate(zip(got, merges)) if a != b), min(len(got), len(merges)))
    if k == len(merges) or k == len(got):
        exhausted = len(merges) < size - 256 - len(specials)  # the reference ran out of pairs
        hint = hint or (H_NOT_A_PAIR if exhausted and len(got) > len(merges) else H_TOO_MANY)
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
            + hint_line(hint)
        )
    if not hint:
        # what was true at merge k: the state after the k merges both made
        _, _, left = train(text, 256 + len(specials) + k, specials)
        c_got, c_exp = left.get(got[k], 0), left[merges[k]]
        hint = H_NOT_A_PAIR if c_got == 0 else H_TIES if c_got == c_exp else H_STALE
    raise CheckFailure(
        msg("{name}: merge {k} (counting from 0) is wrong; the {k} before it agree.", name=name, k=k)
        + _got_expected_code(_fmt_pair(got[k]), _fmt_pair(merges[k]))
        + hint_line(hint)
    )


def _vocab_failed(name, got, vocab, merges, specials):
    if len(got) != len(vocab):
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
H_LONGEST = N_(
    "overlapping special tokens not matched longest first: sort them by length, longest first, before "
    "building the pattern that cuts the text"
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

_STRINGS = [
    "Hello, world! It's 2024: naïve café, 12345 apples.",
    "  leading spaces, trailing spaces   \n\n\tand tabs\n",
    "中文分词：字节级 BPE。你好，世界！",
    "emoji 🙂👍🏽 and mixed 日本語 text, Ünïcödé",
    "",
    "I'll say they've done it, we're sure; don't!",
    "Amen.\n\nAnd the LORD said unto Moses,",  # a pre-token boundary that GPT-2's merges would cross
]


def _tok_specs(hidden: bool) -> list:
    """(label, source, special tokens, texts, id lists to decode)."""
    en, zh = _slice("en", 41 + hidden, 3000), _slice("zh", 43 + hidden, 1200)
    train_text = _with_eot(en + zh, 5)
    trained = ("trained", train_text, 258 + (200 if hidden else 150), [EOT, EOT2])
    texts = list(_STRINGS) + [
        _slice("en", 45 + hidden, 400),
        f"one{EOT}two {EOT2} three{EOT}{EOT}{EOT}",
        _with_eot(_slice("zh", 47 + hidden, 200), 2),
    ]
    texts.append("<|endoftext|<|endoftext|>>" if hidden else "<<|endoftext|><|endoftext|")
    if hidden:
        texts.append(_slice("en", 49, 1500))
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
            [*texts[:4], texts[6], texts[7], f"Bye.{EOT}Hallo, schöne Grüße aus Köln!"],
            [gpt2_cut[:2], gpt2_cut[:7]],
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
        out.append(Case(label, steps, ["r"], facts=facts, size=sum(map(len, texts))))
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


def _encode_failed(got, text, vocab, merges, specials, what="Tokenizer.encode"):
    variants = [
        (H_RANK, dict(order="highest")),
        (H_LEFTMOST, dict(order="leftmost")),
        (H_ENC_ACROSS, dict(split="none")),
        (H_SPECIAL_SPLIT, dict(cut=False)),
        (H_LONGEST, dict(longest=False)),
        (H_OFFSET, dict(offset=len(specials))),
        (H_BY_INDEX, dict(by_index=True)),
    ]
    expected = encode(text, vocab, merges, specials)
    hint = next((h for h, kw in variants if got == encode(text, vocab, merges, specials, **kw)), "")
    if not hint and specials and isinstance(got, list):  # special tokens given as shortest first
        hint = (
            H_LONGEST if got == encode(text, vocab, merges, sorted(specials, key=len), longest=False) else ""
        )
    if not hint:  # the same number of tokens with other ids: the ids, not the merges, are wrong
        hint = H_OFFSET if isinstance(got, list) and len(got) == len(expected) else H_ENCODE
    k = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise CheckFailure(
        msg("{who} of {text} differs from id {k} on.", who=what, text=repr(shown), k=k)
        + got_expected(_short(got[k:]), _short(expected[k:]))
        + hint_line(hint)
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


QUESTIONS = _core.by_name(
    Question("train_bpe_naive", _train_cases("train_bpe_naive"), _train_judge("train_bpe_naive")),
    Question("train_bpe", _train_cases("train_bpe"), _train_judge("train_bpe")),
    Question("train_bpe_speed", _speed_cases, _speed_judge, needs=("train_bpe",)),
    Question("Tokenizer", _tok_cases, _tok_judge),
    Question("encode_iterable", _stream_cases, _stream_judge, needs=("Tokenizer",)),
)

check = _core.lesson_check(QUESTIONS, "train_bpe", devices=False)
