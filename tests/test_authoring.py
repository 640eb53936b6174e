"""Does the percent-script format give the nbgrader cells a lesson needs, with stable ids?"""

from autograder.tooling.authoring import parse

LESSON = """\
# %% [markdown]
# # Title
#
# Some $x$.

# %% [setup]
import torch

# %% [answer] id=f_answer
def f(x):
    ### BEGIN SOLUTION
    return x
    ### END SOLUTION

# %% [tests] id=f points=2
checks.check("f", globals())

# %% [demo]
print("plot")

# %%
y = 1
"""


def test_roles_become_nbgrader_metadata_and_tags():
    """Are answer, tests, setup and demo cells marked the way nbgrader and the grader read them?"""
    cells = parse(LESSON).cells
    kinds = [c.cell_type for c in cells]
    assert kinds == ["markdown", "code", "code", "code", "code", "code"]
    md, setup, answer, tests, demo, plain = cells
    assert md.source == "# Title\n\nSome $x$."
    assert setup.metadata["tags"] == ["setup"] and demo.metadata["tags"] == ["demo"]
    assert answer.metadata["nbgrader"]["solution"] is True and answer.metadata["nbgrader"]["grade"] is False
    assert tests.metadata["nbgrader"] == {
        "grade": True,
        "grade_id": "f",
        "locked": True,
        "points": 2,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    assert "nbgrader" not in plain.metadata and "tags" not in plain.metadata


def test_ids_are_stable_across_runs():
    """Does parsing twice give the same cell ids (graded ones named after their grade_id)?"""
    ids = [c["id"] for c in parse(LESSON).cells]
    assert ids == [c["id"] for c in parse(LESSON).cells]
    assert ids[2:4] == ["f_answer", "f"] and ids[0] == "cell-000"


def test_text_before_the_first_header_is_ignored():
    """Is a preamble above the first `# %%` left out of the notebook?"""
    nb = parse("preamble = 1\n" + LESSON)
    assert "preamble" not in "".join(c.source for c in nb.cells)
