"""Lesson 06_transformer_block, `positional_encoding`: its cases, its mistakes and its judge."""

from __future__ import annotations

import torch

from .._core import Case, call, got_expected, helper, hint_line, ref
from .._judge import CheckFailure, assert_close, diagnose, expect_tensor
from ..i18n import N_, msg
from ._shared import ref_pe, reference_positional_encoding

REFERENCE = reference_positional_encoding  # what replaces an answer that fails (byhand._depends)


def _pe_cases(hidden):
    specs = [(7, 4), (11, 6), (50, 16)] if not hidden else [(33, 10), (128, 64), (9, 126), (200, 48)]
    return [
        Case(
            msg("max_len={max_len}, d_model={d_model}", max_len=str(n), d_model=str(d)),
            [
                call("pe", "positional_encoding", n, d),
                call("pe_kind", helper("transformer_block.kind_of"), ref("pe")),  # a numpy array?
            ],
            ["pe", "pe_kind"],
            facts=dict(n=n, d=d),
            size=n * d,
        )
        for n, d in specs
    ]


def _pe_judge(case, out):
    n, d = case.facts["n"], case.facts["d"]
    exp = ref_pe(n, d)
    kind = out.get("pe_kind")
    if isinstance(kind, str) and kind != "torch.Tensor" and not isinstance(out["pe"], (list, tuple)):
        # the wire turns a numpy array into a tensor: the type the kernel saw is judged first
        raise CheckFailure(
            msg("positional_encoding should return a torch.Tensor.")
            + got_expected(kind, "torch.Tensor")
            + (
                hint_line(
                    N_(
                        "return a torch tensor, not a numpy array: build the table with torch (torch.arange, "
                        "torch.sin, torch.cos), or finish with torch.from_numpy(pe).float()"
                    )
                )
                if kind.startswith("numpy.")
                else ""
            )
        )
    pe = expect_tensor(out["pe"], f"positional_encoding({n}, {d})", shape=exp.shape)
    if pe.dtype != torch.float32:
        raise CheckFailure(
            msg("positional_encoding should return torch's default dtype.")
            + got_expected(pe.dtype, "torch.float32")
            + hint_line(N_("build the table in float32, or compute in float64 and finish with .float()"))
        )
    hint = diagnose(
        pe,
        [
            (
                N_(
                    "sin and cos are swapped: even features 2i hold sin(p * w_i), odd features 2i+1 hold cos(p * w_i)"
                ),
                lambda: ref_pe(n, d, swap=True),
            ),
            (
                N_("the frequency base is 1000: it is 10000, w_i = 1 / 10000^(2i/d_model)"),
                lambda: ref_pe(n, d, base=1000.0),
            ),
            (
                N_(
                    "the frequency base is wrong: yours is w_i = 1 / 10000^(i/d_model) with i the pair index; the "
                    "exponent is 2i/d_model (2i is the even feature's index: torch.arange(0, d_model, 2))"
                ),
                lambda: ref_pe(n, d, pair_index=False),
            ),
            (
                N_(
                    "the frequency base is applied the wrong way round: w_i = 1 / 10000^(2i/d_model), so divide the "
                    "position by 10000^(2i/d_model)"
                ),
                lambda: ref_pe(n, d, multiply=True),
            ),
            (
                N_(
                    "your table has all the sines first, then all the cosines: interleave them, sin in the even "
                    "features 0::2 and cos in the odd features 1::2"
                ),
                lambda: ref_pe(n, d, concat=True),
            ),
        ],
    )
    assert_close(
        pe,
        exp.float(),
        f"positional_encoding({n}, {d})",
        hint or N_("check the formula: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)"),
        rtol=1e-4,
        atol=1e-4,
    )  # float32 sin of arguments up to ~200: ~1e-5 rounding
