"""`make mutation` for the draft, until the lesson lands: the same mutants (autograder's
`mutants_of` on each answer cell of lesson.py, one change each), run in process through the
draft's checks of the questions that read that cell, the visible check first, then the hidden one.
Prints each survivor and each mutant only the hidden check kills, then the counts.
Usage: python mutation_draft.py [answer cell id ...]"""

from __future__ import annotations

import sys
from collections import Counter

import load
from byhand._core import CheckFailure

from autograder.tooling.authoring import parse
from autograder.tooling.mutation import mutants_of

SETUP = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
# the questions whose checks call what each answer cell defines
READERS = {
    "route_answer": ["route", "moe_forward"],
    "moe_forward_answer": ["moe_forward"],
    "expert_capacity_answer": ["expert_capacity", "capacity_keep"],
    "load_balancing_loss_answer": ["load_balancing_loss", "router_z_loss"],
}


def answer_cells() -> dict:
    nb = parse((load.HERE / "lesson.py").read_text(encoding="utf-8"))
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    }


def verdict(checks, namespace, questions) -> str:
    for hidden in (False, True):
        for q in questions:
            try:
                checks.check(q, namespace, hidden=hidden)
            except CheckFailure:
                return "hidden only" if hidden else "visible"
            except Exception:  # noqa: BLE001 - a mutant that breaks the check's own call is killed
                return "visible"
    return "survived"


def main(only: list) -> int:
    checks = load.register()
    cells = answer_cells()
    counts, bad = Counter(), 0
    for cell, source in cells.items():
        if only and cell not in only:
            continue
        for m in mutants_of("13_mixture_of_experts", cell, source):
            ns: dict = {}
            exec(SETUP, ns)
            try:
                for other, src in cells.items():
                    exec(compile(m.source if other == cell else src, other, "exec"), ns)
                outcome = verdict(checks, ns, READERS[cell])
            except Exception:  # noqa: BLE001 - the cell itself raises: killed, as in a notebook
                outcome = "visible"
            counts[outcome] += 1
            if outcome != "visible":
                bad += 1
                print(f"{outcome}: {cell} line {m.where}: {m.change} in {m.statement!r}", flush=True)
    print(dict(counts))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
