"""Mutation testing of the checks (docs/mutation.md): the mutator itself in the gate; every lesson's
mutants run through its checks in `make test-full` (a survivor not listed as equivalent in
tests/mutation_equivalents.toml, or a mutant only the hidden check kills, fails it)."""

import ast

import pytest

from autograder import course
from autograder.tooling import mutation

CELL = '''def f(x, temperature=1.0, flag=False):
    """A docstring is not mutated."""
    y = x * 2 + 1
    ### BEGIN SOLUTION
    assert x is not None, "asserts are not mutated"
    z = torch.softmax(x, dim=-1) / temperature
    if flag and z.sum() < 3:
        z = z - 1
    z += y
    out.append(z)
    return z[:, 1:]
    ### END SOLUTION
'''


def _changes(mutants):
    return {(m.operator, m.change) for m in mutants}


def test_the_mutator_makes_one_change_per_mutant_inside_the_solution_only():
    """Does each operator make its mutants, only between BEGIN and END SOLUTION (the defaults
    aside), one change each, none twice?"""
    mutants = mutation.mutants_of("lesson", "f_answer", CELL)
    changes = _changes(mutants)
    for expected in [
        ("swap", "torch.softmax(x, dim=-1) -> torch.log_softmax(x, dim=-1)"),
        ("dim", "dim=-1 -> dim=-2"),
        ("dim", "dim=-1 -> dim=0"),
        ("arithmetic", "torch.softmax(x, dim=-1) / temperature -> torch.softmax(x, dim=-1) * temperature"),
        ("comparison", "z.sum() < 3 -> z.sum() <= 3"),
        ("boolean", "flag and z.sum() < 3 -> flag or z.sum() < 3"),
        ("constant", "z.sum() < 3 -> z.sum() < 4"),
        ("constant", "z[:, 1:] -> z[:, 2:]"),
        ("drop", "z = z - 1 -> pass"),
        ("drop", "z += y -> pass"),
        ("drop", "out.append(z) -> pass"),
        ("default", "temperature=1.0 -> temperature=0.0"),
        ("default", "temperature=1.0 -> temperature=2.0"),
        ("default", "flag=False -> flag=True"),
    ]:
        assert expected in changes, f"no mutant {expected}; made: {sorted(changes)}"
    # the given code before BEGIN SOLUTION, the docstring and the assert are left alone
    assert not [m for m in mutants if m.statement.startswith(("y = x", "assert"))]
    assert not [m for m in mutants if "docstring" in m.change]
    reference = ast.dump(ast.parse(CELL))
    sources = [m.source for m in mutants]
    assert len(set(sources)) == len(sources), "the same mutant twice"
    for m in mutants:
        assert ast.dump(ast.parse(m.source)) != reference, f"{m.key} changes nothing"
    assert len({(m.cell, m.key) for m in mutants}) == len(mutants), "two mutants with one name"


def test_a_mutant_name_survives_reformatting():
    """Is a mutant named by what it changes, not by where the line is or how it is spaced?"""
    spaced = CELL.replace(
        "z = torch.softmax(x, dim=-1) / temperature", "z = torch.softmax(x,dim = -1)/temperature"
    )
    moved = CELL.replace("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n\n\n    # a comment\n")
    keys = {m.key for m in mutation.mutants_of("lesson", "f_answer", CELL)}
    assert {m.key for m in mutation.mutants_of("lesson", "f_answer", spaced)} == keys
    assert {m.key for m in mutation.mutants_of("lesson", "f_answer", moved)} == keys


def test_the_runner_kills_a_wrong_mask_and_passes_the_reference():
    """Does the runner report the reference answers as passing, a swapped tril as killed by the
    visible check, and a mutant that only the hidden cases see as hidden-only?"""
    runner = mutation.LessonRunner("01_attention")
    assert runner.run(None)[0] == "survived"
    by_change = {m.change: m for m in mutation.lesson_mutants("01_attention")}
    triu = next(m for c, m in by_change.items() if "torch.triu(" in c)
    verdict, question, _ = runner.run(triu)
    assert (verdict, question) == ("visible", "causal_mask")


def test_unlisted_survivors_and_hidden_only_kills_fail():
    """Does the summary fail a survivor not listed, a hidden-only kill and a stale listing, and
    accept a listed survivor?"""
    m = [mutation.Mutant("L", "c", "f", "s", "constant", f"{i} -> {i + 1}", "") for i in range(4)]
    outcomes = [
        mutation.Outcome(m[0], "visible"),
        mutation.Outcome(m[1], "survived"),
        mutation.Outcome(m[2], "survived"),
        mutation.Outcome(m[3], "hidden", "q", "wrong"),
    ]
    listed = {("L", "c", m[1].key): "same result", ("L", "c", m[0].key): "stale", ("L", "c", "gone"): "x"}
    s = mutation.summarize("L", outcomes, listed)
    assert (s.mutants, s.visible, s.hidden, s.equivalent) == (4, 1, 1, 1)
    assert [o.mutant for o in s.survived] == [m[2]]
    found = mutation.problems([s])
    assert len(found) == 4, found
    assert any(m[2].key in f and f.startswith("survived") for f in found)
    assert any("hidden" in f and m[3].key in f for f in found)
    assert sum("listed as equivalent" in f for f in found) == 2
    assert "| L | 4 | 1 | 1 | 1 | 1 |" in mutation.table([s])


@pytest.mark.slow  # makes every mutant of each listed lesson
def test_every_listed_equivalent_has_a_reason():
    """Does every entry of the reviewed list name a lesson, an answer cell and a mutant the mutator
    makes today, with a reason?"""
    listed = mutation.read_equivalents()
    made = {}
    for lesson, cell, key in listed:
        if lesson not in made:
            made[lesson] = {(m.cell, m.key) for m in mutation.lesson_mutants(lesson)}
        assert (cell, key) in made[lesson], f"no such mutant: {lesson} {cell} {key}"
    assert all(reason.strip() for reason in listed.values())


@pytest.mark.full  # every mutant of a lesson through its checks (seconds to a minute a lesson)
@pytest.mark.slow
@pytest.mark.parametrize("lesson", course.lessons())
def test_every_survivor_is_listed_as_equivalent(lesson):
    """Does every mutant of the lesson's reference answers fail its visible self-check, or is it
    listed, with a reason, as equivalent? And does no mutant fail only the hidden check?"""
    start_listed = mutation.read_equivalents()
    outcomes = mutation.run_lesson(lesson)
    summary = mutation.summarize(lesson, outcomes, start_listed)
    found = mutation.problems([summary])
    assert not found, "\n".join(found)
