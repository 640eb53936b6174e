"""The CPU cost of each catalogued mistake and of each question's reference, to choose
`make test-fast`'s sample (tests/tiers.py's `CHEAPEST`, `CHEAPEST_OF_LESSON`, `HIDDEN_COSTS`).

    .venv/bin/python tests/mistake_costs.py 10_flash_attention 11_tokenizer

prints, one line each: a question's reference (`REF`: CPU seconds of its visible check and of its
visible and hidden check) and a mistake (`MIS`: the same, and whether each failed as it should). One
thread, as the lessons run; a tool, not a test (pytest does not collect it).
"""

import contextlib
import io
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]

import byhand as checks  # noqa: E402
import torch  # noqa: E402
from byhand._core import CheckFailure  # noqa: E402

from autograder.course import answer_namespace, questions  # noqa: E402
from examples import answers_for  # noqa: E402


def _cost(module, question: str, namespace: dict, hidden: bool) -> tuple:
    """(CPU seconds, "fail" or "PASS") of one self-check."""
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the check's "all N cases pass" line
            module.check(question, namespace, hidden=hidden)
        outcome = "PASS"
    except CheckFailure:
        outcome = "fail"
    return time.process_time() - start, outcome


def main(lessons: list) -> None:
    torch.set_num_threads(1)
    for lesson in lessons:
        module = checks.for_lesson(lesson)
        reference = answer_namespace(lesson)
        for question in questions(lesson):
            visible, _ = _cost(module, question, dict(reference), False)
            hidden, _ = _cost(module, question, dict(reference), True)
            print(f"{lesson} REF {question} visible {visible:.2f} hidden {hidden:.2f}", flush=True)
        for name, spec in answers_for(lesson).MISTAKES.items():
            visible, v = _cost(module, spec["question"], answer_namespace(lesson, spec["cells"]), False)
            hidden, h = _cost(module, spec["question"], answer_namespace(lesson, spec["cells"]), True)
            print(
                f"{lesson} MIS {spec['question']} {name} visible {visible:.2f} {v} hidden {hidden:.2f} {h}",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
