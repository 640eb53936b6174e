"""Run the student trial answers (one module per answer in this folder) through the draft's visible
and hidden checks, as check_answers.py does: the reference cells first, then the answer's code on top.
Usage: python student_trial/run_trial.py [name ...] (prints one JSON line per answer)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[2]))  # the repository: examples.answers

import load  # noqa: E402
from byhand._core import CheckFailure  # noqa: E402

from examples.answers import a13_mixture_of_experts as answers  # noqa: E402

SETUP = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def failure(check, question, ns, hidden):
    try:
        check(question, ns, hidden=hidden)
    except CheckFailure as exc:
        return str(exc)
    except Exception as exc:  # a crash of the check itself is a finding too
        return f"CRASH {type(exc).__name__}: {exc}"
    return None


def main(names) -> int:
    checks = load.register()
    files = sorted(HERE.glob("[wr][0-9]*.py"))
    for path in files:
        if names and path.stem not in names:
            continue
        text = path.read_text()
        meta = text.split('"""')[1].splitlines()
        question, kind, desc = meta[0].split(": ")[1], meta[1].split(": ")[1], meta[2]
        ns: dict = {}
        exec(SETUP, ns)
        for cell, code in answers.ALL_OK.items():
            exec(compile(code, cell, "exec"), ns)
        exec(compile(text, str(path), "exec"), ns)
        row = {"name": path.stem, "question": question, "kind": kind, "desc": desc}
        if kind == "wrong":
            row["visible"] = failure(checks.check, question, ns, False)
            row["hidden"] = failure(checks.check, question, ns, True)
        else:
            row["failures"] = {
                q: t
                for q in checks.QUESTIONS
                for t in [failure(checks.check, q, ns, False) or failure(checks.check, q, ns, True)]
                if t
            }
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
