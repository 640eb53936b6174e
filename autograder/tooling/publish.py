"""What every way of publishing the course checks first: `make book`, `make handout`, `make exchange`
and `make release`.

- Where the notebooks install the checks from (`BYHAND_SOURCE`): without it they name the
  repository's placeholder git URL, which installs nothing; each command then says so loudly, and how
  to fix it (`source_warning`).
- Which lessons (`LESSONS=...`, `pick`), and whether the release hands out a graded answer as given
  code: a later lesson builds on an earlier one's answer (lesson 12's given code holds lesson 09's
  `SwiGLU` answer verbatim). A release whose given code holds the answer of a lesson not in it, or of
  a lesson whose deadline (the course config's `[deadlines]` or `deadline`) has not passed, is refused
  unless forced (`check_release`), naming both lessons.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import nbformat

from autograder import course
from autograder.tooling.student import GIT_URL, install_source

# an answer block of lesson K counts as handed out by lesson L when at least this share of its
# lines (and at least MIN_LINES of them) are in L's given code: one shared line is a coincidence
# (`self.n_heads = n_heads`), a function body is a leak
SHARE, MIN_LINES, MIN_CHARS = 0.5, 2, 12
SOLUTION_BLOCK = re.compile(r"### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", re.M | re.S)


class ReleaseRefused(ValueError):
    """A release that would hand out graded answers (the CLI says it and exits 2)."""


def source_warning(command: str) -> str | None:
    """The loud line a publishing command prints when its notebooks cannot install the checks (no
    `BYHAND_SOURCE`, or the placeholder), else None."""
    given = install_source()
    if given != GIT_URL and "<org>" not in given:
        return None
    return (
        f"WARNING: BYHAND_SOURCE is not set: the notebooks {command} publishes install the checks from "
        f"the placeholder {GIT_URL}, which installs nothing; in Colab every self-check stays off. "
        f"Give the checks' wheel URL or index name: make {command} "
        "BYHAND_SOURCE=https://<your site>/downloads/<the wheel> (make wheel builds it; make book serves it)"
    )


def pick(spec: str | list | None) -> list[str]:
    """The lessons of `LESSONS=...`: ids or their numbers, separated by spaces or commas ("09 12",
    "09_modern_block,12_training"); all lessons when empty. An unknown one is an error."""
    words = spec.replace(",", " ").split() if isinstance(spec, str) else list(spec or [])
    if not words:
        return course.lessons()
    out = []
    for word in words:
        found = [n for n in course.lessons() if n == word or n.split("_")[0] == word.zfill(2)]
        if len(found) != 1:
            raise ReleaseRefused(f"LESSONS: no lesson {word!r} (the lessons: {' '.join(course.lessons())})")
        out.append(found[0])
    return sorted(set(out))


def _lines(text: str) -> set:
    return {
        ln.strip()
        for ln in text.splitlines()
        if len(ln.strip()) > MIN_CHARS and not ln.strip().startswith("#")
    }


def answer_blocks(lesson: str) -> list[set]:
    """Each reference answer of `lesson` (a `### BEGIN/END SOLUTION` block of a code cell) as its
    lines, less the lines its own student notebook gives (signatures, docstrings)."""
    given = given_lines(lesson)
    blocks = []
    for cell in course.read_solution(lesson).cells:
        if cell.cell_type == "code":
            for m in SOLUTION_BLOCK.finditer(cell.source):
                lines = _lines(m.group(1)) - given
                if lines:
                    blocks.append(lines)
    return blocks


def given_lines(lesson: str) -> set:
    """Every code line a student of `lesson` is given (its student notebook's code cells)."""
    nb = nbformat.read(course.NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    return set().union(*(_lines(c.source) for c in nb.cells if c.cell_type == "code"))


def handed_out(lesson: str, other: str) -> int:
    """How many lines of `other`'s reference answers `lesson`'s given code holds (0: none of its
    answers counts as handed out)."""
    given = given_lines(lesson)
    n = 0
    for block in answer_blocks(other):
        shared = len(block & given)
        if shared >= MIN_LINES and shared >= SHARE * len(block):
            n += shared
    return n


def _deadline(config: Path | None, lesson: str) -> dt.datetime | None:
    if config is None:
        return None
    from autograder.collect import lateness

    cfg = lateness.load(Path(config))
    return cfg.deadlines.get(lesson, cfg.deadline)


def leaks(selected: list[str], config: Path | None = None, now: dt.datetime | None = None) -> list[str]:
    """One line per graded answer the release of `selected` would hand out as given code: an answer
    of a lesson whose deadline (in `config`) has not passed at `now`, or, without a deadline for it,
    of a lesson not in the release. An answer whose deadline has passed is handed out freely."""
    now = now or dt.datetime.now(dt.timezone.utc)
    out = []
    for lesson in selected:
        for other in course.lessons():
            if other == lesson:
                continue
            deadline = _deadline(config, other)
            if deadline is not None and deadline <= now:
                continue  # its answers are due: handing them out now is what a course does
            if deadline is not None:
                why = f"{other}'s deadline ({deadline.isoformat()}) has not passed"
            elif other not in selected:
                why = f"{other} is not in this release and has no deadline in the course config"
            else:
                continue
            n = handed_out(lesson, other)
            if n:
                out.append(f"{lesson} hands out {n} lines of {other}'s graded answer as given code ({why})")
    return out


def check_release(
    selected: list[str], force: bool = False, config: Path | None = None, now: dt.datetime | None = None
) -> list[str]:
    """Refuse (ReleaseRefused) a release that hands out graded answers, unless `force`; the lines
    to print (the answers a forced release hands out)."""
    found = leaks(selected, config, now)
    if found and not force:
        raise ReleaseRefused(
            "refused: "
            + "; ".join(found)
            + ". Release those lessons together once their deadlines have passed, or force it (FORCE=1)."
        )
    return [f"WARNING (forced): {line}" for line in found]
