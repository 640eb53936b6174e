"""What several of lesson 12's exercises share: the float64 dtype of the references, and the import
that must come before any case's time limit starts (`import_before_cases`)."""

from __future__ import annotations

import torch

F64 = torch.float64


def import_before_cases() -> None:
    """Import torch._dynamo now, where the cases are built (in the kernel, before any case's limit
    starts). torch.optim.Optimizer.__init__ (AdamW, the checkpoint's optimizer) imports it on its
    first call, as does a first function or dispatch mode (cross_entropy's and get_batch's watchers):
    hundreds of modules, seconds on a free laptop and past the 120 s limit of a case on a loaded
    machine, which then read as an answer that never returns."""
    import torch._dynamo  # noqa: F401
