"""One check package per lesson, one module per exercise in it (byhand/<topic>/<exercise>.py);
`LESSONS` maps a lesson id to its package name."""

import importlib

LESSONS = {
    "01_attention": "attention",
    "02_layernorm": "layernorm",
    "03_residual": "residual",
    "04_pre_post_ln": "pre_post_ln",
    "05_init": "init",
    "06_transformer_block": "transformer_block",
    "07_decoder": "decoder",
    "08_backward": "backward",
    "09_modern_block": "modern_block",
    "10_flash_attention": "flash_attention",
    "11_tokenizer": "tokenizer",
    "12_training": "training",
    "13_mixture_of_experts": "moe",
}

__version__ = "0.4.4"  # byhand: the self-checks of the course (torch, numpy, regex, matplotlib)


def for_lesson(lesson: str):
    """The check package of a lesson (e.g. "01_attention" -> byhand.attention)."""
    return importlib.import_module(f"{__name__}.{LESSONS[lesson]}")


def verbose(on: bool | None = None) -> bool:
    """A failed self-check shows its message only (the default) or, after `verbose(True)`, the whole
    traceback (as `check(..., traceback=True)` does for one check); the current setting."""
    from . import _core

    return _core.verbose(on)
