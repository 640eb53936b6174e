"""The message of an answer that raised (`answer_error_message`): what a PyTorch error students'
code raises often means in one line (`KNOWN_ERRORS`, `explain_error`), the error itself, the
line of the student's code that raised it, and the input.
"""

from __future__ import annotations

import re

from .. import i18n
from ..i18n import N_, msg
from .lines import LINE, on_input

# PyTorch errors students' code raises often, and what each means in one line (English here; the
# message catalogues translate it): (pattern over "Type: message", explanation with its groups)
KNOWN_ERRORS = [
    (
        r"RuntimeError: The expanded size of the tensor \((?P<want>-?\d+)\) must match the existing size "
        r"\((?P<have>\d+)\) at non-singleton dimension (?P<dim>\d+)",
        N_(
            "expand can only stretch a dimension of size 1: dimension {dim} has size {have}, "
            "and expand asked for {want}"
        ),
    ),
    (
        r"RuntimeError: expand\(.*\): the number of sizes provided \((?P<n>\d+)\) must be greater or "
        r"equal to the number of dimensions in the tensor \((?P<d>\d+)\)",
        N_("expand needs a size for each of the tensor's {d} dimensions (-1 keeps a size), not {n}"),
    ),
    (
        r"RuntimeError: shape '(?P<shape>\[[^\]]*\])' is invalid for input of size (?P<n>\d+)",
        N_("the shape {shape} given to view/reshape does not hold the tensor's {n} elements"),
    ),
    (
        r"RuntimeError: view size is not compatible with input tensor's size and stride",
        N_(
            "view needs a contiguous tensor (a transpose or permute makes one that is not): use "
            ".reshape(...), or .contiguous().view(...)"
        ),
    ),
    (
        r"RuntimeError: mat1 and mat2 shapes cannot be multiplied \((?P<a>\d+)x(?P<b>\d+) and "
        r"(?P<c>\d+)x(?P<d>\d+)\)",
        N_(
            "a matrix product needs the left matrix's last size to equal the right one's first: {b} against {c}"
        ),
    ),
    (
        r"RuntimeError: Expected size for first two dimensions of batch2 tensor to be: "
        r"(?P<want>\[[^\]]*\]) but got: (?P<got>\[[^\]]*\])",
        N_(
            "a batched matrix product needs the inner sizes to agree: the right tensor's first two "
            "sizes are {got}, and the left one asks for {want}"
        ),
    ),
    (
        r"RuntimeError: The size of tensor a \((?P<a>\d+)\) must match the size of tensor b "
        r"\((?P<b>\d+)\) at non-singleton dimension (?P<dim>\d+)",
        N_(
            "the two tensors do not broadcast: dimension {dim} has size {a} in one and {b} in the other, "
            "and neither is 1"
        ),
    ),
    (
        r"RuntimeError: function (?P<fn>\w+) returned an incorrect number of gradients "
        r"\(expected (?P<want>\d+), got (?P<got>\d+)\)",
        N_(
            "backward must return one gradient for each input of forward, None for an input that needs "
            "none: {want} of them, not {got}"
        ),
    ),
    (
        r"RuntimeError: a leaf Variable that requires grad is being used in an in-place operation",
        N_(
            "an in-place operation (+=, x[...] = ..., .add_()) changed a parameter or another tensor made "
            "with requires_grad=True: compute a new tensor (x = x + y), or change it under torch.no_grad()"
        ),
    ),
    (
        r"RuntimeError: one of the variables needed for gradient computation has been modified by an "
        r"inplace operation",
        N_(
            "an in-place operation (+=, x[...] = ..., .add_()) changed a tensor autograd had saved for "
            "backward: use the out-of-place form (x = x + y, not x += y)"
        ),
    ),
]


def explain_error(error: str) -> str:
    """What a PyTorch error (its "Type: message" text) means, in one English line; "" when it is not
    one of KNOWN_ERRORS."""
    for pattern, explanation in KNOWN_ERRORS:
        m = re.match(pattern, error)
        if m:
            return msg(explanation, **m.groupdict())
    return ""


def answer_error_message(name: str, result: dict, label: str) -> i18n.Msg:
    """The message of an answer that raised: what the error means when it is a known one, the error
    itself, the line of the student's code that raised it, and the input."""
    error = str(result.get("error", ""))
    at = result.get("at")
    where = ""
    if isinstance(at, dict) and isinstance(at.get("line"), int):
        code = str(at.get("code") or "")[:200]
        cell = str(at.get("cell", ""))[:200]
        if code:
            where = LINE + msg(
                "in your code: {cell}, line {line}: {code}", cell=cell, line=at["line"], code=code
            )
        else:
            where = LINE + msg("in your code: {cell}, line {line}", cell=cell, line=at["line"])
        caller = at.get("from")
        if isinstance(caller, dict) and isinstance(caller.get("line"), int):
            # the line of the graded answer's own cell that called the code which raised
            where += LINE + msg(
                "called from {cell}, line {line}: {code}",
                cell=str(caller.get("cell", ""))[:200],
                line=caller["line"],
                code=str(caller.get("code") or "")[:200],
            )
    meaning = explain_error(error)
    if meaning:
        head = msg("{name} raised an error: {meaning}", name=name, meaning=meaning)
        return head + LINE + msg("the error: {error}", error=error) + where + on_input(label)
    line = re.fullmatch(r"(.*) \(line (\d+)\)", error, re.S)
    if line:  # the line the answer's own error names, said apart from its text (quoted as code)
        raised = msg(
            "{name} raised {error} (line {line})", name=name, error=line.group(1), line=int(line.group(2))
        )
    else:
        raised = msg("{name} raised {error}", name=name, error=error)
    return raised + where + on_input(label)
