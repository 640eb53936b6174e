"""train_bpe_naive: judged with train_bpe's cases and judge (the same merges, the same vocab: see
train_bpe.py). Here: the naive trainer itself, every pair recounted after every merge, which
train_bpe_speed times the answer against."""

from __future__ import annotations

import collections

from ._shared import _merge_word, _words


def reference_pretoken_counts(text, special_tokens=()):
    """{pre-token as a tuple of single bytes: count} of `text`, cut at the special tokens first (the
    answer cell's helper, put in place of the student's with the naive trainer: byhand._depends)."""
    return _words(text, list(special_tokens))


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
