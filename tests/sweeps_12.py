"""The sweep behind lesson 12's comparison of warm-up, clipping and a learning rate ten times too large
(the capstone's section "Warm-up, clipping, and a learning rate ten times too large"), shared by
tests/test_claims_12.py and runnable by hand to re-measure what the lesson and docs/api/12_training.md
state (one corpus and length per process, one thread):

    .venv/bin/python tests/sweeps_12.py en full 10-29     # the notebook's length (SHORT = 400 steps)
    .venv/bin/python tests/sweeps_12.py zh quick 10-29    # the test length (SHORT = 60 steps)

It prints one line per seed: the held-out loss of each of the five runs the notebook compares. The
experiment code is the lesson's own (its answers, plain cells and capstone cells up to the loop).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

LESSON = "12_training"


def variants(lr: float) -> dict:
    """The notebook's five runs: (learning rate, warm-up steps or None for a tenth, clip norm or 0)."""
    return {
        "main": (lr, None, 1.0),
        "x10": (10 * lr, None, 1.0),
        "x10_no_warmup": (10 * lr, 0, 1.0),
        "x10_no_clip": (10 * lr, None, 0),
        "x10_neither": (10 * lr, 0, 0),
    }


def capstone(lang: str, quick: bool) -> dict:
    """The capstone's namespace (tokenizer, data, baselines, `train`) for corpus `lang` ('en' or 'zh')
    at the test length (`quick`) or the notebook's."""
    import torch

    saved = {k: os.environ.get(k) for k in ("PYTEST_CURRENT_TEST", "BYHAND_QUICK")}
    if not quick:
        os.environ.pop("PYTEST_CURRENT_TEST", None)  # the notebook cuts its runs under pytest
    os.environ["BYHAND_QUICK"] = "1" if quick else "0"
    try:
        ns = _capstone_cells(lang)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert ns["QUICK"] == quick and ns["LANG"] == lang, (ns["QUICK"], ns["LANG"])
    torch.set_num_threads(1)
    return ns


def _capstone_cells(lang: str) -> dict:
    from byhand import i18n
    from lesson_code import definitions, one_thread

    from autograder.course import read_solution, tags

    with i18n.using("zh_CN" if lang == "zh" else "en"), one_thread():
        ns = definitions(LESSON, run_plain=True)
        started = False
        for cell in read_solution(LESSON).cells:
            if cell.cell_type != "code" or "demo" not in tags(cell):
                continue
            started = started or "from byhand import corpus" in cell.source
            if not started:
                continue
            if "NBVAL_IGNORE_OUTPUT" in cell.source:
                break
            exec(compile(cell.source, f"<{LESSON} capstone cell>", "exec"), ns)
    return ns


def one_seed(ns: dict, seed: int) -> dict:
    """Held-out loss of each of the five runs, `SHORT` steps from `seed`."""
    out = {}
    for name, (lr, warmup, clip) in variants(ns["LR"]).items():
        model, _ = ns["train"](ns["SHORT"], seed=seed, lr=lr, warmup=warmup, clip=clip)
        out[name] = ns["held_out_loss"](model)
    return out


def _seeds(text: str) -> range:
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def main(argv: list[str]) -> None:
    lang, length, seeds = argv[0], argv[1], _seeds(argv[2])
    ns = capstone(lang, quick=length == "quick")
    for seed in seeds:
        started = time.time()
        row = one_seed(ns, seed)
        print(
            json.dumps(
                {
                    "lang": lang,
                    "length": length,
                    "steps": ns["SHORT"],
                    "seed": seed,
                    "seconds": round(time.time() - started, 1),
                    **{k: round(v, 4) for k, v in row.items()},
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
