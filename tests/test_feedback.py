"""What a feedback page may show of a submission (autograder/record/feedback.py), cell by cell:
`public_notebook` keeps plain text and checked images and drops everything that could run, and
`clean` leaves rendered markdown only harmless tags."""

from __future__ import annotations

import base64

import nbformat

from autograder import course
from autograder.record.public import clean, public_notebook

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _graded(source, **meta):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": 1, **meta}
    return cell


def test_hidden_tests_are_replaced_by_a_line_that_says_so():
    cell = _graded("assert f(1) == 1\n### BEGIN HIDDEN TESTS\nassert f(2) == 4\n### END HIDDEN TESTS\n")
    got = public_notebook(_nb(cell)).cells[0].source
    assert "f(2)" not in got and "hidden tests" in got, f"got {got!r}, expected the hidden part replaced"
    assert "assert f(1) == 1" in got, f"got {got!r}, expected the public test kept"


def test_an_answer_cell_keeps_its_source():
    cell = nbformat.v4.new_code_cell("def f(x):\n    return x  # ### BEGIN HIDDEN TESTS in a string")
    cell.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "a", "points": 1}
    got = public_notebook(_nb(cell)).cells[0].source
    assert got == cell.source, f"got {got!r}, expected the student's own code unchanged"


def test_outputs_keep_plain_text_and_checked_images_only():
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="\x1b[31mred\x1b[0m " + str(course.ROOT) + "/x"),
        nbformat.v4.new_output("stream", name="stdout", text="@@probe-1234 [1, 2]"),
        nbformat.v4.new_output("stream", name="<script>", text="odd stream name"),
        nbformat.v4.new_output(
            "display_data", data={"text/html": "<script>alert(1)</script>", "text/plain": "<b>plain</b>"}
        ),
        nbformat.v4.new_output("display_data", data={"application/javascript": "alert(1)"}),
        nbformat.v4.new_output("display_data", data={"image/png": PNG}),
        nbformat.v4.new_output("display_data", data={"image/png": "not base64 <svg onload=x>"}),
        nbformat.v4.new_output("error", ename="ValueError", evalue="\x1b[1mbad\x1b[0m", traceback=["long"]),
    ]
    outs = public_notebook(_nb(cell)).cells[0].outputs
    kinds = [(o.output_type, sorted(o.get("data", {}))) for o in outs]
    assert kinds == [
        ("stream", []),
        ("stream", []),
        ("display_data", ["text/plain"]),
        ("display_data", ["image/png"]),
        ("error", []),
    ], f"got {kinds}"
    assert outs[0].text == "red …/x", f"got {outs[0].text!r}, expected no ANSI codes and no host path"
    assert outs[1].name == "stdout", f"got stream name {outs[1].name!r}, expected stdout"
    assert outs[4].evalue == "bad" and outs[4].traceback == ["ValueError: bad"], f"got {outs[4]}"


def test_cell_ids_that_could_carry_markup_are_renumbered():
    cell = nbformat.v4.new_markdown_cell("text")
    cell["id"] = 'x"><script>'
    got = public_notebook(_nb(nbformat.v4.new_markdown_cell("a"), cell)).cells[1]["id"]
    assert got == "cell-1", f"got id {got!r}, expected cell-1"


def test_a_raw_cell_is_shown_as_text_that_cannot_close_its_fence():
    raw = nbformat.v4.new_raw_cell("```\n<script>alert(1)</script>\n```")
    got = public_notebook(_nb(raw)).cells[0]
    assert got.cell_type == "markdown" and got.source.startswith("```\n") and got.source.endswith("\n```")
    assert got.source.count("```") == 2, f"got {got.source!r}, expected only its own fence"


def test_clean_leaves_harmless_markup_only():
    got = clean(
        '<p onclick="x()">hi <a href="javascript:alert(1)">a</a> <a href="https://ok.example">b</a></p>'
        '<script>alert(1)</script><img src="https://tracker.example/p.png">'
        f'<img src="data:image/png;base64,{PNG}" alt="plot">'
    )
    assert "<script>" not in got and "&lt;script&gt;" in got, f"got {got!r}, expected the script as text"
    assert "onclick" not in got and "javascript:" not in got, f"got {got!r}"
    assert 'href="https://ok.example"' in got, f"got {got!r}, expected the https link kept"
    assert "tracker.example" not in got, f"got {got!r}, expected no image that loads from elsewhere"
    assert "data:image/png" in got, f"got {got!r}, expected the inline plot kept"
