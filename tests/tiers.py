"""Which entries of the catalogue each target runs: `make test-fast` a sample, the rest by marker.

The catalogue (examples/answers) holds hundreds of mistakes. A change to a check most often breaks
its own question, so `make test-fast` keeps the first mistake of each question (or the first entry
of each lesson), and the others carry a marker: `breadth` (the gate, `make test`, still runs them)
or `full` (only `make test-full`). The test ids are `<lesson>-<name>` whatever the tier.
"""

from __future__ import annotations

import pytest

from examples import answers_for, catalogued


def tiered(attr: str, *, first_of: str = "question", rest=pytest.mark.breadth, beyond_question=None) -> list:
    """pytest params (lesson, name) of every entry of `MISTAKES` or `ALTERNATIVES` (attr), in
    catalogue order. The first entry of each `first_of` ("question" or "lesson"; an alternative has
    no question of its own, so its lesson) has no mark; the others are marked `rest`, and those
    after the first of their question `beyond_question` instead, when it is given."""
    seen, params = set(), []
    for lesson, name in catalogued(attr):
        question = (lesson, answers_for(lesson).MISTAKES[name]["question"]) if attr == "MISTAKES" else None
        group = question if first_of == "question" and question else (lesson,)
        if group not in seen:
            marks = ()
        elif beyond_question is not None and question in seen:
            marks = (beyond_question,)
        else:
            marks = (rest,)
        seen.update({group, question} - {None})
        params.append(pytest.param(lesson, name, marks=marks, id=f"{lesson}-{name}"))
    return params
