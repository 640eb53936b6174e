"""Run the draft's answer catalogue through its self-checks, as tests/test_lessons.py does for a
landed lesson (the catalogue is examples/answers/a13_mixture_of_experts.py now): every mistake fails the visible check and the hidden one with a hint holding its
word, every alternative passes every check. Usage: python check_answers.py (prints one line each)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: examples.answers

import load  # noqa: E402
from byhand._core import CheckFailure  # noqa: E402

from examples.answers import a13_mixture_of_experts as answers  # noqa: E402

SETUP = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def namespace(cells: dict) -> dict:
    ns: dict = {}
    exec(SETUP, ns)
    for cell, code in {**answers.ALL_OK, **cells}.items():
        exec(compile(code, cell, "exec"), ns)
    return ns


def failure(check, question, ns, hidden):
    try:
        check(question, ns, hidden=hidden)
    except CheckFailure as exc:
        return str(exc)
    return None


def main() -> int:
    checks = load.register()
    bad = 0
    for name, spec in answers.MISTAKES.items():
        ns = namespace(spec["cells"])
        seen = failure(checks.check, spec["question"], ns, False)
        text = failure(checks.check, spec["question"], ns, True)
        ok = seen is not None and text is not None and spec["hint"] in text
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} mistake {name}: {(text or 'passed').splitlines()[-1][:150]}")
    for name, cells in answers.ALTERNATIVES.items():
        ns = namespace(cells)
        texts = [failure(checks.check, q, ns, True) for q in checks.QUESTIONS]
        wrong = [t for t in texts if t is not None]
        bad += bool(wrong)
        print(f"{'ok  ' if not wrong else 'FAIL'} alternative {name}" + (f": {wrong[0]}" if wrong else ""))
    print(f"{bad} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
