"""The course config (`make grade CONFIG=course.toml`) is checked before anything is graded: a typo
is an error naming the file, the line and the key, never a silent change of grades (issue 52)."""

from __future__ import annotations

import pytest

from autograder import __main__ as cli
from autograder import course
from autograder.collect import lateness


def _load(tmp_path, text):
    path = tmp_path / "course.toml"
    path.write_text(text, encoding="utf-8")
    return lateness.load(path)


@pytest.mark.parametrize(
    "text, line, key, words",
    [
        (
            'deadline = "2026-03-01 23:59"\n[late_policy]\npercent_per_dya = 10\n',
            3,
            "late_policy.percent_per_dya",
            "unknown key",
        ),
        (
            'deadline = "2026-03-01 23:59"\n[deadlines]\n"02_layernrom" = "2026-03-08"\n',
            3,
            "deadlines.02_layernrom",
            "no lesson",
        ),
        ('[extensions]\n"smith/01_atention" = 2\n', 2, "extensions.smith/01_atention", "no lesson"),
        ('\n\n[lms.columns]\n"13_moe" = "Lesson 13"\n', 4, "lms.columns.13_moe", "no lesson"),
        ('timezone = "UTC"\ndeadline = "March 1st"\n', 2, "deadline", "not a date"),
        ('[deadlines]\n"01_attention" = "2026-13-45 23:59"\n', 2, "deadlines.01_attention", "not a date"),
        ("colour = 1\n", 1, "colour", "unknown key"),
    ],
)
def test_a_typo_in_the_course_config_names_file_line_and_key(tmp_path, text, line, key, words):
    with pytest.raises(lateness.ConfigError) as err:
        _load(tmp_path, text)
    said = str(err.value)
    expected = f"{tmp_path / 'course.toml'}, line {line}: {key}: "
    assert said.startswith(expected) and words in said, f"got: {said!r}\nexpected: {expected!r}... {words!r}"


def test_an_extension_for_a_student_not_in_the_class_stops_grading(tmp_path, capsys):
    """An extension for someone neither in the class nor the roster is an error, exit non-zero, and
    nothing is graded (no grades.csv)."""
    lesson = course.lessons()[0]
    sub = tmp_path / "class" / "alice"
    sub.mkdir(parents=True)
    (sub / f"{lesson}.ipynb").write_bytes((course.NOTEBOOKS / f"{lesson}.ipynb").read_bytes())
    (tmp_path / "course.toml").write_text(
        'deadline = "2026-03-01 23:59"\n[extensions]\n"alcie" = 2\n', encoding="utf-8"
    )
    out = tmp_path / "out"
    rc = cli.main(
        ["grade", str(tmp_path / "class"), "--out", str(out), "--config", str(tmp_path / "course.toml")]
    )
    err = capsys.readouterr().err
    assert rc != 0, f"got exit {rc}, expected non-zero; stderr: {err}"
    assert (
        f"{tmp_path / 'course.toml'}, line 3: extensions.alcie: " in err
        and "alice" not in err.split("alcie")[0]
    ), err
    assert not (out / "grades.csv").exists(), "expected no grading, got a grades.csv"
    assert not (out / ".state" / "course.toml").exists(), "a refused config was saved for later regrades"


def test_make_grade_lessons_refuses_a_lesson_that_does_not_exist(tmp_path, capsys):
    """`make grade LESSONS=...` (--lessons) is checked like the config's `lessons`."""
    (tmp_path / "class" / "alice").mkdir(parents=True)
    out = tmp_path / "out"
    rc = cli.main(
        ["grade", str(tmp_path / "class"), "--out", str(out), "--lessons", "01_attention", "13_moe"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "--lessons: there is no lesson '13_moe'" in err, f"got exit {rc}, stderr {err!r}"
    assert not (out / "grades.csv").exists()
