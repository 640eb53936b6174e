"""Run the draft lesson with its self-checks on. The checks now live in the student package as
`byhand.moe` (student/byhand/moe/), not yet in `byhand.LESSONS`; `register()` imports them for the
draft's scripts (check_answers.py, mutation_draft.py, student_trial/run_trial.py), then runs the
percent script given, as a script. Usage: python load.py lesson.py"""

from __future__ import annotations

import importlib
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def register():
    """The lesson's checks, byhand.moe."""
    return importlib.import_module("byhand.moe")


if __name__ == "__main__":
    register()
    runpy.run_path(sys.argv[1], run_name="__main__")
