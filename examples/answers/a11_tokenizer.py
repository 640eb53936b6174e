"""Example answers for lesson 11_tokenizer: the example class, the classic mistakes of byte-level BPE
(ties broken the other way, pairs counted across pre-tokens, special tokens counted as text or put
into the pattern unescaped (or with only their | escaped), each pre-token counted once, the
vocabulary in the wrong order, training one merge too many, str instead of bytes, stale pair counts
or ties broken the other way in the incremental trainer (a fast trainer with wrong merges gets no
point for speed either), the naive trainer handed in as the fast one; merges applied out of rank
order or left to right, no pre-tokens, no special tokens or unescaped ones at encoding, special
tokens matched shortest first or given their index as id, ids that are byte values and ranks,
decoding that raises or decodes token by token, streaming line by line or all at once), and correct
answers written differently (plain dicts, a heap, linked lists of symbols, a minbpe-style encoder, a
streaming encoder of its own). Each mistake is the reference answer cell with one change. Keys are
answer-cell ids."""

from autograder.course import nbgrader_meta, read_solution

NAIVE, FAST, TOK = "train_bpe_naive_answer", "train_bpe_answer", "Tokenizer_answer"


def _reference() -> dict:
    """The solution notebook's answer cells, without nbgrader's solution markers."""
    out = {}
    for cell in read_solution("11_tokenizer").cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in (NAIVE, FAST, TOK):
            lines = [line for line in cell.source.splitlines() if "### BEGIN SOLUTION" not in line]
            out[gid] = "\n".join(line for line in lines if "### END SOLUTION" not in line) + "\n"
    return out


REF = _reference()
ALL_OK = dict(REF)


def _mut(cell: str, *changes) -> dict:
    """The reference answer cell `cell` with each (old, new) replaced (old must be there, once)."""
    src = REF[cell]
    for old, new in changes:
        assert src.count(old) == 1, f"{cell}: {old!r} appears {src.count(old)} times"
        src = src.replace(old, new)
    return {cell: src}


PICK = "best = max(counts, key=lambda p: (counts[p], p))"

MISTAKES = {
    "naive_ties_smallest": dict(
        cells=_mut(NAIVE, (PICK, "best = min(counts, key=lambda p: (-counts[p], p))")),
        question="train_bpe_naive",
        hint="ties broken the wrong way",
    ),
    "naive_ties_first_seen": dict(
        cells=_mut(NAIVE, (PICK, "best = max(counts, key=counts.get)")),
        question="train_bpe_naive",
        hint="ties broken the wrong way",
    ),
    "naive_across_pretokens": dict(
        cells=_mut(NAIVE, ("for tok in regex.findall(GPT2_PATTERN, piece):", "for tok in [piece]:")),
        question="train_bpe_naive",
        hint="merges across pre-token boundaries",
    ),
    "naive_specials_counted": dict(
        cells=_mut(
            NAIVE, ("    if special_tokens:\n        longest_first", "    if False:\n        longest_first")
        ),
        question="train_bpe_naive",
        hint="special tokens counted as text",
    ),
    "naive_specials_unescaped": dict(
        cells=_mut(NAIVE, ('"|".join(regex.escape(s) for s in longest_first)', '"|".join(longest_first)')),
        question="train_bpe_naive",
        hint="unescaped",
    ),
    "naive_specials_only_bar_escaped": dict(  # right for <|endoftext|>, not for [SEP] or a.b
        cells=_mut(
            NAIVE,
            (
                '"|".join(regex.escape(s) for s in longest_first)',
                '"|".join(s.replace("|", "\\|") for s in longest_first)',
            ),
        ),
        question="train_bpe_naive",
        hint="unescaped",
    ),
    "naive_pretokens_counted_once": dict(
        cells=_mut(NAIVE, ("                counts[pair] += n\n", "                counts[pair] += 1\n")),
        question="train_bpe_naive",
        hint="each pre-token counted once",
    ),
    "naive_specials_after_merges": dict(
        cells=_mut(
            NAIVE,
            (
                '    vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}\n',
                "    vocab = {}\n",
            ),
            (
                "    return vocab, merges\n",
                '    for s in special_tokens:\n        vocab[len(vocab)] = s.encode("utf-8")\n    return vocab, merges\n',
            ),
            (
                "    while len(vocab) < vocab_size:",
                "    while len(vocab) < vocab_size - len(special_tokens):",
            ),
        ),
        question="train_bpe_naive",
        hint="special tokens placed after the merges",
    ),
    "naive_one_merge_too_many": dict(
        cells=_mut(NAIVE, ("    while len(vocab) < vocab_size:", "    while len(vocab) <= vocab_size:")),
        question="train_bpe_naive",
        hint="training stops at the wrong size",
    ),
    "naive_str_tokens": dict(
        cells=_mut(NAIVE, ("        vocab[len(vocab)] = bytes([b])", "        vocab[len(vocab)] = chr(b)")),
        question="train_bpe_naive",
        hint="must be bytes",
    ),
    "fast_counts_go_stale": dict(
        cells=_mut(
            FAST,
            (
                "            for pair in zip(word, word[1:]):\n                counts[pair] -= n\n"
                "                if counts[pair] == 0:\n                    del counts[pair]\n",
                "            counts.pop(best, None)  # only the merged pair's count goes\n",
            ),
        ),
        question="train_bpe",
        hint="at that step",  # a stale count makes a pair that is gone look frequent
    ),
    "fast_ties_first_counted": dict(  # fast and wrong: it had got the point for speed (issue 51)
        cells=_mut(FAST, (PICK, "best = max(counts, key=counts.get)")),
        question="train_bpe",
        hint="ties broken the wrong way",
    ),
    "fast_is_the_naive_trainer": dict(
        cells={
            FAST: "def train_bpe(text, vocab_size, special_tokens=()):\n    return train_bpe_naive(text, vocab_size, special_tokens)\n"
        },
        question="train_bpe_speed",
        hint="still visits every pre-token at every merge",
    ),
    "encode_highest_rank_first": dict(
        cells=_mut(TOK, ("_, i = min(found)", "_, i = max(found)")),
        question="Tokenizer",
        hint="merges applied out of rank order",
    ),
    "encode_left_to_right": dict(
        cells=_mut(TOK, ("_, i = min(found)", "_, i = found[0]")),
        question="Tokenizer",
        hint="merges applied left to right",
    ),
    "encode_across_pretokens": dict(
        cells=_mut(
            TOK, ("for tok in regex.findall(GPT2_PATTERN, piece):", "for tok in [piece] if piece else []:")
        ),
        question="Tokenizer",
        hint="merges across pre-token boundaries",
    ),
    "encode_specials_as_text": dict(
        cells=_mut(
            TOK,
            (
                "        if self.special_tokens:\n            pattern",
                "        if False:\n            pattern",
            ),
        ),
        question="Tokenizer",
        hint="special tokens split",
    ),
    "encode_specials_unescaped": dict(
        cells=_mut(
            TOK,
            ('"|".join(regex.escape(s) for s in self.special_tokens)', '"|".join(self.special_tokens)'),
        ),
        question="Tokenizer",
        hint="unescaped",
    ),
    "encode_specials_only_bar_escaped": dict(  # right for <|endoftext|>, not for [SEP]
        cells=_mut(
            TOK,
            (
                '"|".join(regex.escape(s) for s in self.special_tokens)',
                '"|".join(s.replace("|", "\\|") for s in self.special_tokens)',
            ),
        ),
        question="Tokenizer",
        hint="unescaped",
    ),
    "encode_specials_in_given_order": dict(
        cells=_mut(
            TOK,
            (
                "self.special_tokens = sorted(special_tokens or [], key=len, reverse=True)",
                "self.special_tokens = list(special_tokens or [])",
            ),
        ),
        question="Tokenizer",
        hint="not matched longest first",
    ),
    "encode_special_id_is_its_index": dict(
        cells=_mut(
            TOK,
            (
                'ids.append(self.ids[piece.encode("utf-8")])',
                "ids.append(self.special_tokens[::-1].index(piece))",
            ),
        ),
        question="Tokenizer",
        hint="special token ids taken from their place",
    ),
    "encode_ids_are_bytes_and_ranks": dict(
        cells=_mut(
            TOK,
            (
                "self.ranks = {pair: r for r, pair in enumerate(merges)}",
                "self.ranks = {pair: r for r, pair in enumerate(merges)}\n"
                "        self.ids.update({bytes([b]): b for b in range(256)})\n"
                "        self.ids.update({a + b: 256 + r for r, (a, b) in enumerate(merges)})",
            ),
        ),
        question="Tokenizer",
        hint="vocab id order wrong",
    ),
    "decode_strict": dict(
        cells=_mut(TOK, ('.decode("utf-8", errors="replace")', '.decode("utf-8")')),
        question="Tokenizer",
        hint="decode raised on ids that cut a character",
    ),
    "decode_token_by_token": dict(
        cells=_mut(
            TOK,
            (
                'return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")',
                'return "".join(self.vocab[i].decode("utf-8", errors="replace") for i in ids)',
            ),
        ),
        question="Tokenizer",
        hint="decoded token by token",
    ),
    "stream_line_by_line": dict(
        cells=_mut(
            TOK,
            (
                "            buffer += line\n            end = safe_end(buffer, self.special_tokens)\n",
                "            buffer += line\n            end = len(buffer)\n",
            ),
        ),
        question="encode_iterable",
        hint="each line encoded on its own",
    ),
    "stream_reads_everything_first": dict(
        cells=_mut(
            TOK,
            (
                "            end = safe_end(buffer, self.special_tokens)\n",
                "            end = 0\n",
            ),
        ),
        question="encode_iterable",
        hint="is not lazy",
    ),
    # issue 51, a student trial: each passed or got another mistake's hint
    "stream_cut_at_last_space": dict(  # a run of spaces cut inside; Chinese held whole
        cells=_mut(
            TOK,
            (
                "            end = safe_end(buffer, self.special_tokens)\n            if end:\n",
                '            end = buffer.rfind(" ")\n            if end > 0:\n',
            ),
        ),
        question="encode_iterable",
        hint="the buffer cut at its last space",
    ),
    "stream_no_final_flush": dict(
        cells=_mut(TOK, ("        yield from self.encode(buffer)\n", "")),
        question="encode_iterable",
        hint="never encoded",
        not_hints=("encode differs from the reference",),
    ),
    "stream_safe_end_without_specials": dict(
        cells=_mut(TOK, ("safe_end(buffer, self.special_tokens)", "safe_end(buffer, [])")),
        question="encode_iterable",
        hint="safe_end called without the special tokens",
        not_hints=("encode differs from the reference",),
    ),
    "naive_specials_in_given_order": dict(  # [<|s|>, <|s|>bb]: the shorter one found first
        cells=_mut(
            NAIVE,
            (
                "longest_first = sorted(special_tokens, key=len, reverse=True)",
                "longest_first = list(special_tokens)",
            ),
        ),
        question="train_bpe_naive",
        hint="not tried longest first",
        not_hints=("does not occur inside any pre-token",),
    ),
    "naive_pretokens_by_str_split": dict(
        cells=_mut(NAIVE, ("for tok in regex.findall(GPT2_PATTERN, piece):", "for tok in piece.split():")),
        question="train_bpe_naive",
        hint="str.split()",
        not_hints=("training stops at the wrong size",),
    ),
    "encode_pretokens_by_str_split": dict(
        cells=_mut(TOK, ("for tok in regex.findall(GPT2_PATTERN, piece):", "for tok in piece.split():")),
        question="Tokenizer",
        hint="str.split()",
    ),
    "fast_new_pairs_weight_one": dict(
        cells=_mut(
            FAST,
            (
                "            for pair in zip(word, word[1:]):\n                counts[pair] += n\n",
                "            for pair in zip(word, word[1:]):\n                counts[pair] += 1\n",
            ),
        ),
        question="train_bpe",
        hint="the pairs a merge makes are counted once each",
        not_hints=("update the counts of the pairs around",),
    ),
    # more a student could write (issue 51)
    "naive_pretokens_of_whole_text": dict(  # `text` for `piece`: every piece counts the whole text
        cells=_mut(
            NAIVE,
            (
                "for tok in regex.findall(GPT2_PATTERN, piece):",
                "for tok in regex.findall(GPT2_PATTERN, text):",
            ),
        ),
        question="train_bpe_naive",
        hint="special tokens counted as text",
    ),
    "naive_specials_deleted": dict(
        cells=_mut(
            NAIVE,
            (
                'pieces = regex.split("|".join(regex.escape(s) for s in longest_first), text)',
                'pieces = [regex.sub("|".join(regex.escape(s) for s in longest_first), "", text)]',
            ),
        ),
        question="train_bpe_naive",
        hint="special tokens deleted from the text",
        not_hints=("does not occur inside any pre-token",),
    ),
    "naive_bytes_take_the_specials_ids": dict(
        cells=_mut(NAIVE, ("        vocab[len(vocab)] = bytes([b])", "        vocab[b] = bytes([b])")),
        question="train_bpe_naive",
        hint="vocab id order wrong",
        not_hints=("training stops at the wrong size",),
    ),
    "naive_merge_never_applied": dict(
        cells=_mut(NAIVE, ("        words = merged\n", "")),
        question="train_bpe_naive",
        hint="does not occur inside any pre-token at that step",
    ),
    "naive_one_merge_too_few": dict(
        cells=_mut(NAIVE, ("    while len(vocab) < vocab_size:", "    while len(vocab) < vocab_size - 1:")),
        question="train_bpe_naive",
        hint="training stops at the wrong size",
    ),
    "naive_int_tokens": dict(
        cells=_mut(
            NAIVE,
            (
                'counts[tuple(bytes([b]) for b in tok.encode("utf-8"))] += 1',
                'counts[tuple(tok.encode("utf-8"))] += 1',
            ),
        ),
        question="train_bpe_naive",
        hint="must be bytes",
    ),
    "naive_characters_not_bytes": dict(
        cells=_mut(
            NAIVE,
            (
                'counts[tuple(bytes([b]) for b in tok.encode("utf-8"))] += 1',
                'counts[tuple(c.encode("utf-8") for c in tok)] += 1',
            ),
        ),
        question="train_bpe_naive",
        hint="made of characters, not of single bytes",
    ),
    "fast_zero_counts_kept": dict(
        cells=_mut(
            FAST, ("                if counts[pair] == 0:\n                    del counts[pair]\n", "")
        ),
        question="train_bpe",
        hint="raised KeyError",
    ),
    "fast_merged_word_not_stored": dict(
        cells=_mut(
            FAST, ("            words[i] = word = merge(word, best)", "            word = merge(word, best)")
        ),
        question="train_bpe",
        hint="raised KeyError",
    ),
    "fast_where_not_updated": dict(
        cells=_mut(
            FAST,
            (
                "                counts[pair] += n\n                where[pair].add(i)\n",
                "                counts[pair] += n\n",
            ),
        ),
        question="train_bpe",
        hint="raised KeyError",
    ),
    "encode_split_without_group": dict(
        cells=_mut(
            TOK,
            (
                'pattern = "(" + "|".join(regex.escape(s) for s in self.special_tokens) + ")"',
                'pattern = "|".join(regex.escape(s) for s in self.special_tokens)',
            ),
        ),
        question="Tokenizer",
        hint="special tokens dropped",
    ),
    "decode_errors_ignored": dict(
        cells=_mut(TOK, ('.decode("utf-8", errors="replace")', '.decode("utf-8", errors="ignore")')),
        question="Tokenizer",
        hint='errors="replace"',
    ),
    "tokenizer_special_tokens_none_fails": dict(  # special_tokens=None, the default
        cells=_mut(
            TOK,
            (
                "self.special_tokens = sorted(special_tokens or [], key=len, reverse=True)",
                "self.special_tokens = sorted(special_tokens, key=len, reverse=True)",
            ),
        ),
        question="Tokenizer",
        hint="raised TypeError",
    ),
    "stream_returns_a_list": dict(
        cells={
            TOK: REF[TOK][: REF[TOK].index("    def encode_iterable")]
            + '    def encode_iterable(self, lines):\n        return self.encode("".join(lines))\n'
        },
        question="encode_iterable",
        hint="returned a list, not an iterator",
    ),
    "stream_lines_listed_first": dict(
        cells=_mut(
            TOK,
            (
                "    def encode_iterable(self, lines):\n",
                "    def encode_iterable(self, lines):\n        lines = list(lines)\n",
            ),
        ),
        question="encode_iterable",
        hint="is not lazy",
    ),
    "stream_yields_lists": dict(
        cells=_mut(TOK, ("yield from self.encode(buffer[:end])", "yield self.encode(buffer[:end])")),
        question="encode_iterable",
        hint="not an int id",
    ),
    "stream_held_text_dropped": dict(
        cells=_mut(TOK, ("buffer = buffer[end:]", 'buffer = ""')),
        question="encode_iterable",
        hint="differs from id",
        not_hints=("hint:",),
    ),
}

# Correct answers written differently: full points.
HEAP_TRAINER = '''
import heapq


class _Desc:
    """A pair that sorts in reverse, so a min-heap pops the greatest pair first on equal counts."""

    __slots__ = ("pair",)

    def __init__(self, pair):
        self.pair = pair

    def __lt__(self, other):
        return self.pair > other.pair

    def __eq__(self, other):
        return self.pair == other.pair


def train_bpe(text, vocab_size, special_tokens=()):
    vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
    vocab.update({len(special_tokens) + b: bytes([b]) for b in range(256)})
    counted = pretoken_counts(text, special_tokens)
    words, freq = [list(w) for w in counted], list(counted.values())
    counts, where = {}, {}
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            counts[p] = counts.get(p, 0) + freq[i]
            where.setdefault(p, set()).add(i)
    heap = [(-c, _Desc(p)) for p, c in counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(vocab) < vocab_size and heap:
        neg, d = heapq.heappop(heap)
        p = d.pair
        if counts.get(p, 0) != -neg or -neg <= 0:  # a stale entry: its count has changed since
            continue
        merges.append(p)
        vocab[len(vocab)] = p[0] + p[1]
        touched = set()
        for i in where.pop(p, ()):
            w, n = words[i], freq[i]
            for q in zip(w, w[1:]):
                counts[q] -= n
                touched.add(q)
            w = merge(w, p)
            words[i] = w
            for q in zip(w, w[1:]):
                counts[q] = counts.get(q, 0) + n
                where.setdefault(q, set()).add(i)
                touched.add(q)
        for q in touched:
            if counts.get(q, 0) > 0:
                heapq.heappush(heap, (-counts[q], _Desc(q)))
            elif q in counts:
                del counts[q]
    return vocab, merges
'''

LINKED_TRAINER = '''
def train_bpe(text, vocab_size, special_tokens=()):
    """Every pre-token's symbols in one linked list (prev/next arrays); `where` holds the positions
    of each pair, so a merge edits only the symbols it joins."""
    vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
    vocab.update({len(special_tokens) + b: bytes([b]) for b in range(256)})
    sym, nxt, prv, weight = [], [], [], []
    for word, n in pretoken_counts(text, special_tokens).items():
        start = len(sym)
        for j, b in enumerate(word):
            sym.append(b)
            weight.append(n)
            prv.append(start + j - 1 if j else -1)
            nxt.append(start + j + 1 if j + 1 < len(word) else -1)
    counts, where = {}, {}

    def add(i, sign):
        j = nxt[i]
        if i < 0 or j < 0:
            return
        p = (sym[i], sym[j])
        counts[p] = counts.get(p, 0) + sign * weight[i]
        if sign > 0:
            where.setdefault(p, set()).add(i)
        elif counts[p] == 0:
            del counts[p]

    for i in range(len(sym)):
        add(i, 1)
    merges = []
    while len(vocab) < vocab_size and counts:
        best = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        for i in sorted(where.pop(best, ())):
            j = nxt[i]
            if sym[i] is None or j < 0 or (sym[i], sym[j]) != best:
                continue  # gone, or changed by an earlier merge in this round
            add(prv[i], -1)
            add(i, -1)
            add(j, -1)
            sym[i] = best[0] + best[1]
            sym[j] = None
            nxt[i] = nxt[j]
            if nxt[j] >= 0:
                prv[nxt[j]] = i
            add(prv[i], 1)
            add(i, 1)
        counts.pop(best, None)
    return vocab, merges
'''

PLAIN_DICT_NAIVE = """
def pretoken_counts(text, special_tokens=()):
    out = {}
    cut = sorted(special_tokens, key=len, reverse=True)
    pieces = regex.split("|".join(map(regex.escape, cut)), text) if cut else [text]
    for piece in pieces:
        for m in regex.finditer(GPT2_PATTERN, piece):
            key = tuple(bytes([b]) for b in m.group().encode())
            out[key] = out.get(key, 0) + 1
    return out


def train_bpe_naive(text, vocab_size, special_tokens=()):
    vocab = {}
    for s in special_tokens:
        vocab[len(vocab)] = s.encode()
    for b in range(256):
        vocab[len(vocab)] = bytes([b])
    words = pretoken_counts(text, special_tokens)
    merges = []
    while len(vocab) < vocab_size:
        pairs = {}
        for w, n in words.items():
            for i in range(len(w) - 1):
                pairs[w[i], w[i + 1]] = pairs.get((w[i], w[i + 1]), 0) + n
        if not pairs:
            break
        top = max(pairs.values())
        best = sorted(p for p, c in pairs.items() if c == top)[-1]
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        new = {}
        for w, n in words.items():
            w2 = tuple(merge(list(w), best))
            new[w2] = new.get(w2, 0) + n
        words = new
    return vocab, merges
"""

MINBPE_STYLE_TOKENIZER = """
class Tokenizer:
    def __init__(self, vocab, merges, special_tokens=None):
        self.vocab = vocab
        self.inverse = {v: k for k, v in vocab.items()}
        self.rank = {p: r for r, p in enumerate(merges)}
        self.specials = sorted(special_tokens or (), key=len, reverse=True)
        self.split = (
            regex.compile("(" + "|".join(map(regex.escape, self.specials)) + ")") if self.specials else None
        )
        self.word = regex.compile(GPT2_PATTERN)

    def _bpe(self, chunk):
        parts = [bytes([b]) for b in chunk.encode()]
        while len(parts) >= 2:
            pair = min(zip(parts, parts[1:]), key=lambda p: self.rank.get(p, float("inf")))
            if pair not in self.rank:
                break
            parts = merge(parts, pair)
        return [self.inverse[p] for p in parts]

    def encode(self, text):
        out = []
        for i, piece in enumerate(self.split.split(text) if self.split else [text]):
            if i % 2 == 1:  # the split's capturing group: a special token
                out.append(self.inverse[piece.encode()])
            else:
                for m in self.word.finditer(piece):
                    out += self._bpe(m.group())
        return out

    def decode(self, ids):
        buf = bytearray()
        for i in ids:
            buf += self.vocab[i]
        return bytes(buf).decode("utf-8", "replace")

    def encode_iterable(self, lines):
        pending = ""
        for line in lines:
            pending += line
            cut = safe_end(pending, self.specials)
            for i in self.encode(pending[:cut]):
                yield i
            pending = pending[cut:]
        for i in self.encode(pending):
            yield i
"""

# issue 51: three more, written another way than the reference: ties as (count, first, second), the
# vocabulary as a list of tokens; a cached encoder that merges one occurrence at a time and cuts at the
# special tokens with finditer; a streaming buffer of its own (not `safe_end`)
TUPLE_TIE_NAIVE = """
def pretoken_counts(text, special_tokens=()):
    word = regex.compile(GPT2_PATTERN)
    if special_tokens:
        cut = regex.compile("|".join(regex.escape(s) for s in sorted(special_tokens, key=lambda s: -len(s))))
        pieces = cut.split(text)
    else:
        pieces = [text]
    out = collections.defaultdict(int)
    for piece in pieces:
        for m in word.finditer(piece):
            out[tuple(m.group().encode("utf-8")[i : i + 1] for i in range(len(m.group().encode("utf-8"))))] += 1
    return dict(out)


def train_bpe_naive(text, vocab_size, special_tokens=()):
    specials = [s.encode("utf-8") for s in special_tokens]
    tokens = specials + [bytes([b]) for b in range(256)]
    words = list(pretoken_counts(text, special_tokens).items())
    merges = []
    while len(tokens) < vocab_size:
        counts = {}
        for word, n in words:
            for a, b in zip(word, word[1:]):
                counts[a, b] = counts.get((a, b), 0) + n
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p[0], p[1]))
        merges.append(best)
        tokens.append(best[0] + best[1])
        words = [(tuple(merge(list(w), best)), n) for w, n in words]
    return dict(enumerate(tokens)), merges
"""

LRU_TOKENIZER = """
import functools


class Tokenizer:
    def __init__(self, vocab, merges, special_tokens=None):
        self.vocab = vocab
        self.token_id = {t: i for i, t in vocab.items()}
        self.rank = dict(zip(merges, range(len(merges))))
        self.specials = tuple(sorted(special_tokens or (), key=len, reverse=True))
        self._bpe = functools.lru_cache(maxsize=None)(self._bpe_uncached)

    def _bpe_uncached(self, word):
        parts = [bytes([b]) for b in word.encode("utf-8")]
        while True:
            ranked = [(self.rank.get((a, b)), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            ranked = [(r, i) for r, i in ranked if r is not None]
            if not ranked:
                break
            r, i = min(ranked)
            parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2 :]  # the leftmost one of that rank
        return tuple(self.token_id[p] for p in parts)

    def encode(self, text):
        out = []
        rest = text
        if self.specials:
            pat = regex.compile("|".join(map(regex.escape, self.specials)))
            at = 0
            for m in pat.finditer(text):
                for w in regex.findall(GPT2_PATTERN, text[at : m.start()]):
                    out.extend(self._bpe(w))
                out.append(self.token_id[m.group().encode("utf-8")])
                at = m.end()
            rest = text[at:]
        for w in regex.findall(GPT2_PATTERN, rest):
            out.extend(self._bpe(w))
        return out

    def decode(self, ids):
        data = bytearray()
        for i in ids:
            data.extend(self.vocab[i])
        return data.decode("utf-8", "replace")

    def encode_iterable(self, lines):
        pending = ""
        for line in lines:
            pending += line
            end = safe_end(pending, list(self.specials))
            ids, pending = self.encode(pending[:end]), pending[end:]
            yield from ids
        yield from self.encode(pending)
"""

OWN_STREAM_TOKENIZER = (
    REF[TOK][: REF[TOK].index("    def encode_iterable")]
    + '''    def encode_iterable(self, lines):
        """Hold back what may still change: a tail that begins a special token, the last two
        pre-tokens of the text after the last special token, and whitespace before them."""
        specials = regex.compile("|".join(map(regex.escape, self.special_tokens))) if self.special_tokens else None
        words = regex.compile(GPT2_PATTERN)
        held = ""
        for line in lines:
            held += line
            keep = 0
            for s in self.special_tokens:
                for k in range(min(len(s), len(held)), 0, -1):
                    if s.startswith(held[-k:]):
                        keep = max(keep, k)
                        break
            head = held[: len(held) - keep]
            last = max((m.end() for m in specials.finditer(head)), default=0) if specials else 0
            cut = last
            ends = [last + m.end() for m in words.finditer(head[last:])]
            for e in ends[:-1]:
                if not head[e - 1].isspace():
                    cut = e
            if cut:
                yield from self.encode(held[:cut])
                held = held[cut:]
        yield from self.encode(held)
'''
)

ALTERNATIVES = {
    "tuple_ties_token_list": {**ALL_OK, NAIVE: TUPLE_TIE_NAIVE},
    "cached_tokenizer_finditer": {**ALL_OK, TOK: LRU_TOKENIZER},
    "own_streaming_buffer": {**ALL_OK, TOK: OWN_STREAM_TOKENIZER},
    "plain_dicts_and_sorted_ties": {**ALL_OK, NAIVE: PLAIN_DICT_NAIVE},
    "heap_trainer": {**ALL_OK, FAST: HEAP_TRAINER},
    "linked_list_trainer": {**ALL_OK, FAST: LINKED_TRAINER},
    "minbpe_style_tokenizer": {**ALL_OK, TOK: MINBPE_STYLE_TOKENIZER},
}

# The example class. A student missing here does not submit this lesson.
STUDENTS = {
    "alice_perfect": ALL_OK,
    "bob_blank": {},
    "carol_partial": {NAIVE: REF[NAIVE]},
    "dave_ties": {**ALL_OK, **MISTAKES["naive_ties_first_seen"]["cells"], FAST: HEAP_TRAINER},
    "erin_stream": {**ALL_OK, **MISTAKES["stream_line_by_line"]["cells"]},
}

MAX = {"train_bpe_naive": 2, "train_bpe": 2, "train_bpe_speed": 1, "Tokenizer": 3, "encode_iterable": 2}
EXPECTED = {
    "alice_perfect": dict(MAX),
    "bob_blank": {q: 0 for q in MAX},
    "carol_partial": {**{q: 0 for q in MAX}, "train_bpe_naive": 2},
    "dave_ties": {**MAX, "train_bpe_naive": 0},
    "erin_stream": {**MAX, "encode_iterable": 0},
}
