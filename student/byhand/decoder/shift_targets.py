"""The check of `shift_targets` (lesson 07_decoder): its cases and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call, gen, got_expected, hint_line, let, ref
from .._judge import CheckFailure, assert_close, expect_tensor
from ..i18n import N_, msg

# ---------------------------------------------------------------------------------------------
# shift_targets


def _shift_cases(hidden):
    specs = [(2, 6, 11), (3, 9, 7)] if not hidden else [(5, 13, 50), (1, 4, 3), (4, 33, 20)]
    cases = []
    for i, (b, t1, v) in enumerate(specs):
        g = gen(7000 + 13 * i + t1 + (900 if hidden else 0))
        tokens = torch.randint(0, v, (b, t1), generator=g)
        cases.append(
            Case(
                msg("tokens {shape} (B, T+1) with ids in [0, {v})", shape=tuple(tokens.shape), v=v),
                [let("tokens", tokens), call("out", "shift_targets", ref("tokens"))],
                ["out", "tokens"],
                facts=dict(tokens=tokens),
                size=b * t1,
            )
        )
    return cases


def _shift_judge(case, out):
    tokens = case.facts["tokens"]
    got = out["out"]
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailure(
            msg("shift_targets should return a pair (inputs, targets), got {got}", got=repr(got))
        )
    inputs, targets = got
    exp_in, exp_tg = tokens[:, :-1], tokens[:, 1:]
    b, t1 = tokens.shape
    for what, g in (("inputs", inputs), ("targets", targets)):
        expect_tensor(g, what)
        if g.dtype != torch.int64:
            raise CheckFailure(
                msg("{what} should be token ids.", what=what) + got_expected(g.dtype, "torch.int64")
            )
    if tuple(inputs.shape) == (b - 1, t1) or tuple(targets.shape) == (b - 1, t1):
        raise CheckFailure(
            msg(
                "shift_targets shifted along the batch dim: inputs {got}, expected {expected}.",
                got=tuple(inputs.shape),
                expected=tuple(exp_in.shape),
            )
            + hint_line(N_("shift along the time axis, dim 1: tokens[:, :-1] and tokens[:, 1:]"))
        )
    if torch.equal(inputs, exp_tg) and torch.equal(targets, exp_in):
        raise CheckFailure(
            msg("shift_targets shifted the wrong way: your targets are the tokens *before* each input.")
            + hint_line(
                N_(
                    "position t reads token t and predicts token t+1: inputs = tokens[:, :-1], "
                    "targets = tokens[:, 1:]"
                )
            )
        )
    if tuple(targets.shape) == tuple(exp_tg.shape) and torch.equal(targets, inputs):
        raise CheckFailure(
            msg(
                "shift_targets returned targets equal to the inputs: the targets are not shifted, so the model "
                "would learn to copy its input."
            )
            + hint_line(N_("targets = tokens[:, 1:] (the next token)"))
        )
    if tuple(targets.shape) == (b, t1) or tuple(inputs.shape) == (b, t1):
        # what the answer returned, recomputed from the mistakes that keep all T+1 tokens somewhere
        full = [
            (
                (tokens, tokens[:, 1:]),
                N_(
                    "the inputs keep all T+1 tokens: drop the last one, inputs = tokens[:, :-1] (it is only a target)"
                ),
            ),
            (
                (tokens[:, :-1], tokens),
                N_(
                    "the targets keep all T+1 tokens: targets = tokens[:, 1:], the next token at each position"
                ),
            ),
            ((tokens, tokens), N_("targets are not shifted: both are the whole of tokens")),
        ]
        hint = next(
            (
                h
                for (i, t), h in full
                if inputs.shape == i.shape
                and targets.shape == t.shape
                and torch.equal(inputs, i)
                and torch.equal(targets, t)
            ),
            "",
        )
        raise CheckFailure(
            msg("shift_targets returned a tensor of the full length T+1 = {n}.", n=t1)
            + got_expected(
                f"inputs.shape = {tuple(inputs.shape)}, targets.shape = {tuple(targets.shape)}",
                f"inputs.shape = targets.shape = {tuple(exp_in.shape)} = (B, T)",  # code, shown as it is
            )
            + (hint_line(hint) if hint else "")
        )
    assert_close(inputs, exp_in, "inputs", "inputs = tokens[:, :-1]")  # the hint is code, shown as it is
    assert_close(targets, exp_tg, "targets", N_("targets = tokens[:, 1:] (the next token at each position)"))
    if not torch.equal(out["tokens"], tokens):
        raise CheckFailure(
            msg("{who} modified its input {name} in place", who="shift_targets", name="tokens")
        )
