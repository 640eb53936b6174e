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
this package is.

A module per exercise, named by it (`train_bpe_naive.py`, `train_bpe.py`, `train_bpe_speed.py`,
`tokenizer.py` for `Tokenizer`, `encode_iterable.py`): its cases, its mistakes and its judge (the two
trainers share train_bpe's cases and judge, and so does the speed check, since a point for speed
needs right merges; train_bpe_naive.py holds the naive trainer the speed check times against); what several share (the references `train` and `encode`, GPT-2's vocabulary,
the case texts) is in `_shared.py`.
"""

from __future__ import annotations

from .. import _core, _score
from .._core import Question
from ._shared import EOT, EOT2, GPT2_PATTERN, bytes_to_unicode, decode, encode, gpt2, special_split, train
from .encode_iterable import H_NOT_LAZY, H_PER_LINE, _stream_cases, _stream_judge, run_stream
from .tokenizer import (
    H_BY_INDEX,
    H_DECODE,
    H_DECODE_RAISES,
    H_ENC_ACROSS,
    H_ENCODE,
    H_LEFTMOST,
    H_LONGEST,
    H_OFFSET,
    H_PER_TOKEN,
    H_RANK,
    H_SPECIAL_SPLIT,
    _tok_cases,
    _tok_judge,
    run_tokenizer,
)
from .train_bpe import (
    H_ACROSS,
    H_BYTES,
    H_NOT_A_PAIR,
    H_ORDER,
    H_SPECIAL_COUNTED,
    H_SPECIALS_AT_END,
    H_STALE,
    H_TIES,
    H_TIES_IDS,
    H_TOO_MANY,
    H_UNESCAPED,
    H_UNIQUE,
    TEN,
    _train_cases,
    _train_judge,
    run_train,
)
from .train_bpe_naive import train_naive
from .train_bpe_speed import H_SLOW, SPEED_LIMIT, _speed_cases, _speed_judge, time_train

LESSON = "11_tokenizer"
HELPERS = ("run_train", "run_tokenizer", "run_stream", "time_train")


QUESTIONS = _core.by_name(
    Question("train_bpe_naive", _train_cases("train_bpe_naive"), _train_judge("train_bpe_naive")),
    Question("train_bpe", _train_cases("train_bpe"), _train_judge("train_bpe")),
    Question("train_bpe_speed", _speed_cases, _speed_judge, needs=("train_bpe",)),
    Question("Tokenizer", _tok_cases, _tok_judge),
    Question("encode_iterable", _stream_cases, _stream_judge, needs=("Tokenizer",)),
)

check = _core.lesson_check(QUESTIONS, "train_bpe", devices=False)
score = _score.lesson_score(QUESTIONS)  # what the lesson's last cell calls

__all__ = [
    "LESSON",
    "HELPERS",
    "QUESTIONS",
    "check",
    "EOT",
    "EOT2",
    "GPT2_PATTERN",
    "H_ACROSS",
    "H_BYTES",
    "H_BY_INDEX",
    "H_DECODE",
    "H_DECODE_RAISES",
    "H_ENCODE",
    "H_ENC_ACROSS",
    "H_LEFTMOST",
    "H_LONGEST",
    "H_NOT_A_PAIR",
    "H_NOT_LAZY",
    "H_OFFSET",
    "H_ORDER",
    "H_PER_LINE",
    "H_PER_TOKEN",
    "H_RANK",
    "H_SLOW",
    "H_SPECIALS_AT_END",
    "H_SPECIAL_COUNTED",
    "H_SPECIAL_SPLIT",
    "H_STALE",
    "H_TIES",
    "H_TIES_IDS",
    "H_TOO_MANY",
    "H_UNESCAPED",
    "H_UNIQUE",
    "SPEED_LIMIT",
    "TEN",
    "bytes_to_unicode",
    "decode",
    "encode",
    "gpt2",
    "run_stream",
    "run_tokenizer",
    "run_train",
    "special_split",
    "time_train",
    "train",
    "train_naive",
]
