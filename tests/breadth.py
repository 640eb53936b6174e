"""Which lessons' catalogue breadth the gate may leave out: the record of a green run, by digest.

The breadth of the catalogue (every catalogued mistake and alternative past `make test-fast`'s
sample, `tests/tiers.py`, in the files of `CACHED`) was most of the gate's time: about 1,900 tests,
15 of its 28 minutes on 2 cores. Each of those tests is a function of files the repository holds:
the lesson's checks and what every check runs on, its catalogue entry and solution notebook, the
messages, the grader's code, the tests themselves, and the torch pin. `make breadth` runs them all
and records, for each lesson whose tests all passed, the digest of those files in `RECORD`
(committed, as refresh.json is). The gate (`make test`, `--skip-verified-breadth`) leaves out a
lesson's breadth tests only while its digest is the recorded one: change any input of a lesson
(its checks, its answers, a message, the grader) and the gate runs that lesson's breadth again
until `make breadth` records it. `make test-full` always runs everything.

    python tests/breadth.py            # which lessons are verified, which are stale
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script (`python tests/breadth.py`), autograder from this tree

from autograder.tooling.refresh import check_packages, digest_content  # noqa: E402

# BREADTH_RECORD: another record, for tests/test_gate.py (tests never write into the checkout)
RECORD = Path(os.environ.get("BREADTH_RECORD") or ROOT / "tests" / "breadth_verified.json")
# what `make breadth` writes before its results are merged into RECORD (build/ is not committed)
RESULTS = ROOT / "build" / "breadth-passed.json"
# the test files whose `breadth` tests are parametrized by lesson and depend only on `inputs(lesson)`
CACHED = ("test_lessons.py", "test_verdict.py", "test_zh_output.py")
# the selection `make breadth` runs in those files
MARKS = "breadth and not full"
# the tests' own helpers those files import (a change to any of them changes every lesson's digest)
TEST_HELPERS = ("conftest.py", "tiers.py", "zh_messages.py", "zh_latin.py", "breadth.py")


def _lesson_packages() -> dict:
    sys.path.insert(0, str(ROOT / "student"))
    import byhand

    return dict(byhand.LESSONS)


def inputs(lesson: str) -> list[Path]:
    """The files a breadth test of `lesson` reads, directly or through what it runs: everything of
    the checks but the other lessons' packages, the lesson's catalogue entry and notebook, the
    catalogue's code, the grader, and the tests."""
    packages = _lesson_packages()
    student = ROOT / "student" / "byhand"
    # another lesson's package is no input unless the lesson's checks import it (check_packages)
    others = {student / pkg for pkg in packages.values()} - set(check_packages(lesson))
    checks = [p for p in student.rglob("*") if p.is_file() and not any(o in p.parents for o in others)]
    return sorted(
        {
            *(p for p in checks if "__pycache__" not in p.parts),
            *(ROOT / "autograder").rglob("*.py"),
            *(ROOT / "examples").glob("*.py"),
            ROOT / "examples" / "answers" / f"a{lesson}.py",
            ROOT / "solutions" / f"{lesson}.ipynb",
            ROOT / "docs" / "mistakes.md",
            ROOT / "requirements.txt",
            *(ROOT / "tests" / name for name in (*CACHED, *TEST_HELPERS)),
        }
    )


def digest(lesson: str, overrides: dict | None = None) -> str:
    """sha256 over `inputs(lesson)`, their paths and contents (`overrides`: path -> bytes in place of
    a file's, for the tests of this module)."""
    overrides = overrides or {}
    h = hashlib.sha256()
    for p in inputs(lesson):
        # byhand's version line left out (digest_content): `make refresh` bumps it for any check's
        # change, which would make every lesson stale where only one lesson's checks changed
        if p in overrides or p.exists():
            data = digest_content(p, overrides.get(p))
        else:
            data = b"<none>"
        if p.suffix == ".ipynb" and data != b"<none>":
            # its cells' code and text only: a re-execution changes the outputs, not what a test reads
            cells = json.loads(data).get("cells", [])
            data = json.dumps([(c.get("cell_type"), c.get("source")) for c in cells]).encode()
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def recorded() -> dict:
    return json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}


def verified(lessons) -> set:
    """The lessons whose recorded digest is their digest now."""
    record = recorded()
    return {lesson for lesson in lessons if record.get(lesson) == digest(lesson)}


def lesson_of(nodeid: str, lessons) -> str | None:
    """The lesson a parametrized test id names first (`...[<lesson>-<name>]`), if one."""
    m = re.search(r"\[([^\]]*)\]$", nodeid)
    if not m:
        return None
    return next((lesson for lesson in lessons if m.group(1).startswith(lesson + "-")), None)


def merge_results() -> list[str]:
    """RESULTS (the lessons whose breadth passed in `make breadth`, with their digests then) into
    RECORD; a lesson whose digest moved since is not recorded. What was recorded, line by line."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    record = recorded()
    said = []
    for lesson, value in sorted(results.items()):
        if value != digest(lesson):
            said.append(f"{lesson}: changed during the run, not recorded")
            continue
        record[lesson] = value
        said.append(f"{lesson}: breadth passed, recorded")
    RECORD.write_text(json.dumps(dict(sorted(record.items())), indent=1) + "\n", encoding="utf-8")
    return said


def main(argv: list[str]) -> int:
    from autograder import course

    if argv[1:] == ["--merge"]:
        print("\n".join(merge_results()))
        return 0
    lessons = course.lessons()
    ok = verified(lessons)
    for lesson in lessons:
        print(
            f"{lesson}: {'verified' if lesson in ok else 'stale: the gate runs its breadth (make breadth)'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
