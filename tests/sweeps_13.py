"""The sweep behind lesson 13's section 6 ("Trained"), shared by tests/test_claims_13.py and runnable
by hand to re-measure what the lesson states (one thread; about 1 minute of one thread per seed):

    OMP_NUM_THREADS=1 .venv/bin/python tests/sweeps_13.py full 0-19 > tests/sweeps_13.jsonl
    OMP_NUM_THREADS=1 .venv/bin/python tests/sweeps_13.py quick 0     # the test runner's length

It prints one JSON line per seed: the held-out loss of each of the notebook's four runs, and for the
two MoE runs each layer's share of the held-out assignments per routed expert every `EVERY` steps.
The experiment code is the lesson's own: its setup and answer cells, then section 6's cells up to the
one that trains (the first marked NBVAL_IGNORE_OUTPUT), taken from the solution notebook.
"""

from __future__ import annotations

import json
import os
import sys
import time

LESSON = "13_mixture_of_experts"


def trained_section(quick: bool) -> dict:
    """The lesson's namespace with section 6's definitions, at the test length (`quick`) or the
    notebook's (STEPS = 300)."""
    import torch

    from autograder.course import answer_namespace, read_solution, tags

    saved = {k: os.environ.get(k) for k in ("PYTEST_CURRENT_TEST", "BYHAND_QUICK")}
    if not quick:
        os.environ.pop("PYTEST_CURRENT_TEST", None)  # the notebook cuts its runs under pytest
    os.environ["BYHAND_QUICK"] = "1" if quick else "0"
    before = torch.get_num_threads()
    try:
        ns = answer_namespace(LESSON)
        started = False
        for cell in read_solution(LESSON).cells:
            if cell.cell_type != "code" or "demo" not in tags(cell):
                continue
            started = started or "from byhand import corpus" in cell.source
            if not started:
                continue
            if "NBVAL_IGNORE_OUTPUT" in cell.source:
                break
            exec(compile(cell.source, f"<{LESSON} section 6 cell>", "exec"), ns)
    finally:
        torch.set_num_threads(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert ns["QUICK"] == quick, ns["QUICK"]
    return ns


def one_seed(ns: dict, seed: int) -> dict:
    """The notebook's four runs from `seed`: held-out loss, and the MoE runs' shares over training."""
    out = {}
    for name, (loss, history) in ns["trained"](seed).items():
        out[name] = {"heldout_loss": round(loss, 4)}
        if history and history[0][1]:
            out[name]["shares"] = [
                [step, [[round(v, 4) for v in s.tolist()] for s in layers]] for step, layers in history
            ]
    return out


def _seeds(text: str) -> range:
    a, _, b = text.partition("-")
    return range(int(a), int(b or a) + 1)


def main(argv: list[str]) -> None:
    import torch

    length, seeds = argv[0], _seeds(argv[1])
    ns = trained_section(quick=length == "quick")
    torch.set_num_threads(1)
    for seed in seeds:
        started = time.time()
        row = one_seed(ns, seed)
        line = {
            "length": length,
            "steps": ns["STEPS"],
            "seed": seed,
            "seconds": round(time.time() - started, 1),
        }
        print(json.dumps(line | row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
