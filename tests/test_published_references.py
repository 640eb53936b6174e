"""Do lessons 11 and 12 agree with a published reference's own acceptance data?

Stanford CS336's assignment 1 (github.com/stanford-cs336/assignment1-basics, MIT licence) publishes,
with its tests, a small corpus (`tests/fixtures/corpus.en`) and the merges and vocabulary its
reference BPE trainer learns from it (vocab_size 500, special token <|endoftext|>), AdamW's weights
after 1000 steps of a fixed problem (`tests/_snapshots/test_adamw.npz`) and a cosine schedule's
learning rates (in `tests/test_optimizer.py`). Its tie rule (the lexicographically greatest pair) is
the lesson's.

Nothing of it is copied into this repository: point `CS336_ASSIGNMENT1` at a checkout of that
repository (or at its git directory, read with `git show`) and these tests read the files there;
without it they are skipped. docs/api/11_tokenizer.md and docs/api/12_training.md give the result
and the commit they were run against.
"""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from byhand import tokenizer
from lesson_code import lesson_fixture

from autograder.course import answer_namespace

ROOT = os.environ.get("CS336_ASSIGNMENT1", "")
pytestmark = pytest.mark.skipif(
    not ROOT or not Path(ROOT).exists(),
    reason="CS336_ASSIGNMENT1 (a copy of stanford-cs336/assignment1-basics) not set",
)

lesson11 = lesson_fixture("lesson11", "11_tokenizer", assigns=lambda node: False, skip_setup=False)


@pytest.fixture(scope="module")
def lesson12():
    """Lesson 12's reference answers (AdamW, lr_cosine_schedule)."""
    return answer_namespace("12_training")


def published(path: str) -> bytes:
    """A file of the reference repository: from its work tree, or from its git directory's HEAD."""
    root = Path(ROOT)
    if (root / path).exists():
        return (root / path).read_bytes()
    return subprocess.run(
        ["git", "--git-dir", str(root), "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout


def test_train_bpe_reproduces_the_published_merges_on_their_corpus(lesson11):
    """The lesson's fast trainer on CS336's corpus.en (vocab 500, <|endoftext|>): the same merges in the
    same order, and the same vocabulary, as CS336's published reference."""
    text = published("tests/fixtures/corpus.en").decode("utf-8")
    vocab, merges = lesson11["train_bpe"](text, 500, ["<|endoftext|>"])
    back = {c: b for b, c in tokenizer.bytes_to_unicode().items()}

    def to_bytes(token: str) -> bytes:
        return bytes(back[c] for c in token)

    lines = published("tests/fixtures/train-bpe-reference-merges.txt").decode("utf-8").splitlines()
    expected = [tuple(to_bytes(t) for t in line.rstrip().split(" ")) for line in lines if line.strip()]
    first = next((i for i, (a, b) in enumerate(zip(merges, expected)) if a != b), None)
    assert merges == expected, (
        f"merge {first}: got {merges[first] if first is not None else None}, "
        f"expected {expected[first] if first is not None else None} ({len(merges)} vs {len(expected)} merges)"
    )
    ref_vocab = json.loads(published("tests/fixtures/train-bpe-reference-vocab.json"))
    assert set(vocab.values()) == {to_bytes(t) for t in ref_vocab}, "the vocabularies differ"
    assert set(vocab) == set(ref_vocab.values())


def _adamw_weights(opt_class) -> torch.Tensor:
    """The published test's problem: a 3 -> 2 linear map, 1000 steps, seed 42 (re-stated, not copied:
    the test's setting is its acceptance data)."""
    torch.manual_seed(42)
    model = torch.nn.Linear(3, 2, bias=False)
    opt = opt_class(model.parameters(), lr=1e-3, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8)
    for _ in range(1000):
        opt.zero_grad()
        x = torch.rand(model.in_features)
        loss = ((torch.stack([x[0] + x[1], -x[2]]) - model(x)) ** 2).sum()
        loss.backward()
        opt.step()
    return model.weight.detach()


def test_adamw_matches_the_published_snapshot(lesson12):
    """The lesson's AdamW, after the published test's 1000 steps, within its tolerance (1e-4) of
    the reference implementation's stored weights, and of torch.optim.AdamW's."""
    with np.load(io.BytesIO(published("tests/_snapshots/test_adamw.npz"))) as snap:
        stored = torch.from_numpy(snap[next(iter(snap.files))])
    mine = _adamw_weights(lesson12["AdamW"])
    theirs = _adamw_weights(torch.optim.AdamW)
    assert torch.allclose(mine, theirs, atol=1e-4), f"got {mine}, expected torch's {theirs}"
    assert torch.allclose(mine, stored.to(mine.dtype), atol=1e-4), (
        f"got {mine}, expected the snapshot's {stored}"
    )


def test_cosine_schedule_matches_the_published_learning_rates(lesson12):
    """lr_cosine_schedule at steps 0-24 (max 1, min 0.1, warm-up 7, cosine to 21) equals the list the
    published test expects (read from its source)."""
    tree = ast.parse(published("tests/test_optimizer.py").decode("utf-8"))
    fn = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "test_get_lr_cosine_schedule"
    )
    values = {}
    for n in fn.body:  # max_learning_rate = 1, min_learning_rate = 1 * 0.1, ..., expected_lrs = [...]
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id != "actual_lrs"
        ):
            expr = ast.Expression(n.value)
            assert all(
                isinstance(
                    x,
                    (
                        ast.expr_context,
                        ast.Constant,
                        ast.List,
                        ast.BinOp,
                        ast.operator,
                        ast.UnaryOp,
                        ast.unaryop,
                        ast.Expression,
                    ),
                )
                for x in ast.walk(expr)
            )
            values[n.targets[0].id] = eval(compile(expr, "<published test>", "eval"), {"__builtins__": {}})
    expected = values["expected_lrs"]
    got = [
        lesson12["lr_cosine_schedule"](
            t,
            values["max_learning_rate"],
            values["min_learning_rate"],
            values["warmup_iters"],
            values["cosine_cycle_iters"],
        )
        for t in range(len(expected))
    ]
    np.testing.assert_allclose(got, expected, err_msg="got (actual) vs expected (the published list)")
