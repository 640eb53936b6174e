"""Answers that are alike beyond what the exercise forces: pairs of students to look at, for the
instructor only (the class report; never a student's feedback page).

How two answers are compared (MOSS's idea, fingerprints of normalised code, written for Python):

- each answer cell is cut into statements (Python's tokenizer); comments, blank lines and layout
  are dropped, and every name the answer binds (locals, parameters of its own helpers) becomes
  `V`, so renaming hides nothing; the names it uses from outside (torch's functions, methods,
  attributes) stay, since choosing `masked_fill` over `where` is what tells two answers apart;
- a statement's fingerprints are its k-grams of tokens (k = 5; a shorter statement is one), taken
  within the statement, so reordering statements hides nothing either;
- a fingerprint that is also in the given skeleton or the reference answer counts nothing, and
  one many students share counts little: its weight is log(n / students who have it), the
  idiomatic solution (what most write) weighs about nothing, what only two share weighs most;
- two students' likeness on a lesson is the weight they share over the smaller of their two
  totals (1: one's answers are all in the other's, idioms aside). A pair at or above `THRESHOLD`
  is listed, with each answer cell side by side and its own likeness.

What this was measured on, and what it found: docs/grading.md ("Similar answers"),
tests/test_similarity.py. The library copydetect (MOSS-style winnowing) was measured on the same
class first: it turns every name into `V`, methods and torch functions included, and its
fingerprints run across line ends, so reordered lines break them; its copy scored 0.71 with an
independent pair at 0.47 (a thin margin), this one's scores are in the docs.
"""

from __future__ import annotations

import builtins
import html
import io
import keyword
import math
import token
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

K = 5  # tokens per fingerprint
THRESHOLD = 0.85  # likeness at which a pair is listed (measured: docs/grading.md)
MIN_WEIGHT = 8.0  # a pair must share at least this much weight: a few rare tokens are no evidence
OUTSIDE = frozenset(dir(builtins)) | {"torch", "nn", "F", "math", "np", "self", "super"}


def statements(source: str) -> list[tuple]:
    """The source's statements as tuples of normalised tokens (see the module's docstring)."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [tuple(line.split()) for line in source.splitlines() if line.strip()]
    bound = _bound(source)
    out, current, prev = [], [], None
    for t in toks:
        if t.type in (token.NEWLINE, token.ENDMARKER):
            if current:
                out.append(tuple(current))
            current = []
        elif t.type in (token.COMMENT, token.NL, token.INDENT, token.DEDENT, token.ENCODING):
            continue
        elif t.type == token.NAME:
            after_dot = prev is not None and prev.string == "."
            current.append("V" if t.string in bound and not after_dot else t.string)
        elif t.type == token.STRING:
            current.append("S" if len(t.string) > 40 else t.string)  # a docstring is not evidence
        else:
            current.append(t.string)
        if t.type not in (token.NL, token.COMMENT):
            prev = t
    return out


def _bound(source: str) -> set:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if n not in OUTSIDE and not keyword.iskeyword(n)}


def fingerprints(source: str) -> set:
    out = set()
    for st in statements(source):
        if len(st) <= K:
            out.add(st)
        else:
            out.update(st[i : i + K] for i in range(len(st) - K + 1))
    return out


@dataclass
class Pair:
    lesson: str
    a: str
    b: str
    likeness: float
    shared: float  # the weight they share
    cells: list = field(default_factory=list)  # (cell, likeness, source a, source b)


def similar_pairs(lesson: str, answers: dict, given: list, threshold: float = THRESHOLD) -> list:
    """`answers`: student -> {cell: source} (one lesson's code answers); `given`: the sources every
    student got or could know (the skeleton's cells, the reference answers). The pairs at or above
    `threshold`, most alike first."""
    students = sorted(s for s, cells in answers.items() if any(src.strip() for src in cells.values()))
    if len(students) < 2:
        return []
    free = set().union(*(fingerprints(g) for g in given)) if given else set()
    per_cell = {s: {c: fingerprints(src) - free for c, src in answers[s].items()} for s in students}
    whole = {s: set().union(*per_cell[s].values()) for s in students}
    df = Counter(f for s in students for f in whole[s])
    n = len(students)

    def weight(fs) -> float:
        return sum(math.log(n / df[f]) for f in fs if df[f])

    totals = {s: weight(whole[s]) for s in students}
    pairs = []
    for i, a in enumerate(students):
        for b in students[i + 1 :]:
            shared = weight(whole[a] & whole[b])
            smaller = min(totals[a], totals[b])
            if smaller <= 0 or shared < MIN_WEIGHT:
                continue
            likeness = shared / smaller
            if likeness < threshold:
                continue
            cells = []
            for cell in answers[a]:
                fa, fb = per_cell[a].get(cell, set()), per_cell[b].get(cell, set())
                small = min(weight(fa), weight(fb))
                cells.append(
                    (
                        cell,
                        weight(fa & fb) / small if small > 0 else 0.0,
                        answers[a][cell],
                        answers[b].get(cell, ""),
                    )
                )
            pairs.append(Pair(lesson, a, b, likeness, shared, cells))
    return sorted(pairs, key=lambda p: (-p.likeness, p.a, p.b))


def likeness_of_all(lesson: str, answers: dict, given: list) -> list:
    """Every pair's likeness (for measuring): [(likeness, a, b)], most alike first."""
    return [(p.likeness, p.a, p.b) for p in similar_pairs(lesson, answers, given, threshold=-1.0)]


# ---------------------------------------------------------------------------------------------
# from a grading output folder


def code_answers(nb, lesson: str) -> dict:
    """A notebook's code answer cells: {grade_id: source}, in the lesson's order."""
    from autograder import course

    wanted = [
        course.nbgrader_meta(c)["grade_id"]
        for c in course.read_solution(lesson).cells
        if course.nbgrader_meta(c).get("solution") and c.cell_type == "code"
    ]
    have = {course.nbgrader_meta(c).get("grade_id"): c.source for c in nb.cells if c.cell_type == "code"}
    return {gid: have.get(gid, "") for gid in wanted}


def given_sources(lesson: str) -> list:
    """What no student is to be suspected for sharing: the skeleton of every edition, the reference."""
    import nbformat

    from autograder import course

    out = [c.source for c in course.read_solution(lesson).cells if course.nbgrader_meta(c).get("solution")]
    for path in [course.NOTEBOOKS / f"{lesson}.ipynb", *course.NOTEBOOKS.glob(f"*/{lesson}.ipynb")]:
        if path.exists():
            out += [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return out


def class_pairs(out: Path, graded: list) -> list:
    """The pairs to look at in a graded class (OUT/submitted/<student>/<lesson>/<lesson>.ipynb)."""
    import nbformat

    by_lesson: dict = {}
    for g in graded:
        path = Path(out) / "submitted" / g.student / g.lesson / f"{g.lesson}.ipynb"
        if not g.lesson or not path.is_file():
            continue
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - not a notebook: nothing to compare
            continue
        by_lesson.setdefault(g.lesson, {})[g.student] = code_answers(nb, g.lesson)
    pairs = []
    for lesson, answers in sorted(by_lesson.items()):
        pairs += similar_pairs(lesson, answers, given_sources(lesson))
    return pairs


def side_by_side(pair: Pair) -> str:
    """A page for the instructor: the two students' answer cells side by side."""
    esc = html.escape
    rows = "".join(
        f"<h2><code>{esc(cell)}</code> <span class='muted'>likeness {like:.2f}</span></h2>"
        f"<div class='pair'><pre>{esc(a)}</pre><pre>{esc(b)}</pre></div>"
        for cell, like, a, b in pair.cells
    )
    from autograder.record.feedback import CSP

    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(pair.a)} / {esc(pair.b)}: {esc(pair.lesson)}</title><style>"
        "body{font-family:system-ui,sans-serif;max-width:1300px;margin:2em auto;padding:0 1em}"
        ".pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}pre{background:#f6f8fa;padding:8px;"
        "overflow-x:auto;font-size:12px;white-space:pre-wrap}.muted{color:#57606a;font-size:0.8em}</style></head><body>"
        f"<h1>{esc(pair.lesson)}: {esc(pair.a)} and {esc(pair.b)}</h1>"
        f"<p>Likeness {pair.likeness:.2f} (1: one's code answers are all in the other's, renamed "
        "names, reordered lines and the idioms most students write aside). For the instructor: a "
        "reason to look, not a verdict.</p>"
        f"<div class='pair'><b>{esc(pair.a)}</b><b>{esc(pair.b)}</b></div>{rows}</body></html>"
    )
