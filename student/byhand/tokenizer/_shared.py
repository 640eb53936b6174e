"""What lesson 11's exercises share: GPT-2's pre-tokenization pattern and end-of-text token, bytes
as latin-1 strings on the wire, the references (a BPE trainer `train` and an encoder `encode`, each
with the keywords that make the classic mistakes, `decode`, GPT-2's published vocabulary and merges
`gpt2`) and the case texts (slices of the shipped corpus, random words)."""

from __future__ import annotations

import collections
import random

from .. import corpus

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"
EOT2 = EOT + EOT  # overlaps EOT: must be matched first (longest first)
# regex metacharacters other than |: unescaped, [SEP] and [CLS] cut English at every S, E, P, C, L
# (the LORD of the King James text), and a.b at every "a b" (an answer that escapes only | fails too)
BERT_SEP, BERT_CLS, A_DOT_B = "[SEP]", "[CLS]", "a.b"


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


def special_split(text: str, specials, escape=True, longest=True) -> list:
    """`text` cut at the special tokens (longest first): a list of (is_special, piece). `escape=False`
    is the classic mistake, the tokens put into the pattern as they are: `[SEP]` is then a character
    class, `a.b` any three characters from a to b (a pattern that does not compile raises);
    `longest=False` another, the tokens tried shortest first (a longer one that starts with a shorter
    one is never found whole)."""
    if not specials:
        return [(False, text)]
    re = _regex()
    longest_first = sorted(specials, key=len, reverse=longest)
    alt = "|".join(re.escape(s) if escape else s for s in longest_first)
    out, at = [], 0
    for m in re.finditer(alt, text):
        out.append((False, text[at : m.start()]))
        out.append((True, m.group()))
        at = m.end()
    out.append((False, text[at:]))
    return [(s, p) for s, p in out if s or p]


def _pretokens(piece: str, split: str) -> list:
    """The pre-tokens of `piece`: GPT-2's pattern (`split="gpt2"`), or the classic mistakes, none
    (`"none"`: the piece whole) or `str.split()` (`"ws"`: whitespace dropped, punctuation kept on
    the words)."""
    if split == "gpt2":
        return _regex().findall(GPT2_PATTERN, piece)
    return piece.split() if split == "ws" else [piece]


def _words(text: str, specials, split="gpt2", cut=True, escape=True, longest=True, chars=False) -> dict:
    """{pre-token as a tuple of single bytes: count}, in order of first appearance."""
    counts: dict = {}
    pieces = special_split(text, specials, escape, longest) if cut else [(False, text)]
    if cut == "delete":  # the special tokens deleted, the text on both sides joined
        pieces = [(False, "".join(p for s, p in pieces if not s))]
    for is_special, piece in pieces:
        if is_special:
            continue
        for tok in _pretokens(piece, split):
            w = (
                tuple(c.encode("utf-8") for c in tok)
                if chars
                else tuple(bytes([b]) for b in tok.encode("utf-8"))
            )
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


def train(
    text,
    vocab_size,
    specials=(),
    tie="greatest",
    split="gpt2",
    cut=True,
    unique=False,
    at_end=False,
    escape=True,
    longest=True,
    new_weight=None,
    stale=False,
    chars=False,
):
    """(vocab, merges, pair counts left) of BPE on `text`; the keywords make the classic mistakes:
    `tie` ("smallest", "first": the first pair counted, "ids": the greatest pair of token ids; and
    "hf", not a mistake but Hugging Face tokenizers' rule, for tests/test_claims_11.py),
    `split="none"` (no pre-tokens) or `"ws"` (`str.split()`), `cut=False` (special tokens counted
    as text) or `"delete"` (deleted from the text), `unique` (each distinct pre-token counted
    once), `at_end` (special tokens after the merges), `escape=False` (special tokens put into the
    pattern that cuts the text unescaped), `longest=False` (special tokens tried shortest first);
    in the incremental loop, `new_weight` (the pairs a merge makes counted with this weight, not
    the pre-token's count) and `stale` (the pairs a merge removes never subtracted, only the merged
    pair dropped); `chars` (pre-tokens made of characters, not of single bytes)."""
    specials = list(specials)
    base = {b: bytes([b]) for b in range(256)}
    vocab = {i + len(specials): t for i, t in base.items()}
    vocab.update({i: s.encode("utf-8") for i, s in enumerate(specials)})
    ids = {t: i for i, t in sorted(vocab.items(), reverse=True)}
    if tie == "hf":  # its ids: the bytes ordered by their printable stand-ins, then merges as made
        stand_in = bytes_to_unicode()
        ids = {bytes([b]): i for i, b in enumerate(sorted(range(256), key=lambda b: stand_in[b]))}
    counted = _words(text, specials, split, cut, escape, longest, chars)
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
                if stale:
                    pairs.pop(best, None)
                else:
                    for p in zip(w, w[1:]):
                        pairs[p] -= c
                        if pairs[p] == 0:
                            del pairs[p]
                words[i] = _merge_word(w, best, merged)
                for p in zip(words[i], words[i][1:]):
                    pairs[p] += c if new_weight is None else new_weight
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
    escape=True,
    drop=False,
):
    """Token ids of `text`; the keywords make the classic mistakes: `order` ("highest": the
    highest-ranked pair merged first, "leftmost": the first pair that has a merge), `split="none"`
    (merges across pre-tokens) or `"ws"` (pre-tokens made with `str.split()`), `cut=False`
    (special tokens encoded as text), `longest=False` (special tokens matched in the order given,
    not longest first), `offset` (ids shifted), `by_index` (a special token's id taken as its index
    in `specials`, not from the vocab), `escape=False` (the special tokens put into the pattern
    unescaped: what it matches that is no special token is encoded as text, as the lesson's
    `regex.split` with a group gives it back), `drop` (the special tokens left out: `regex.split`
    without a group keeps no separator)."""
    re = _regex()
    ranks = {p: i for i, p in enumerate(merges)}
    ids = {t: i for i, t in sorted(vocab.items(), reverse=True)}
    specials = list(specials or ())
    if cut and specials:
        if longest:
            pieces = special_split(text, specials, escape)
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
        if is_special and piece in specials:
            if drop:
                continue
            out.append(specials.index(piece) if by_index else ids[piece.encode("utf-8")])
            continue
        for tok in _pretokens(piece, split) if piece else []:
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


def _with_specials(text: str, every: int, specials) -> str:
    """`text` with the special tokens in turn after every `every`-th line."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % every == every - 1:
            out.append(specials[(i // every) % len(specials)])
    return "\n".join(out)


def _random_words(seed: int, n: int, letters: str = "abc") -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 6))) for _ in range(n))


_STRINGS = [
    "Hello, world! It's 2024: naïve café, 12345 apples.",
    "  leading spaces, trailing spaces   \n\n\tand tabs\n",
    "中文分词：字节级 BPE。你好，世界！",
    "emoji 🙂👍🏽 and mixed 日本語 text, Ünïcödé",
    "",
    "I'll say they've done it, we're sure; don't!",
    "Amen.\n\nAnd the LORD said unto Moses,",  # a pre-token boundary that GPT-2's merges would cross
]
