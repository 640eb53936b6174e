"""The README and the student docs say what the product is: as many lessons as solutions/ holds (in
both languages), summary.csv's real columns, what the checks' package depends on, and no step a
student without this repository cannot take."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

from autograder.record.export import SUMMARY_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LESSONS = sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))

EN_NUMBERS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()
)
ZH_NUMBERS = "零 一 二 三 四 五 六 七 八 九 十 十一 十二 十三 十四 十五".split()


def test_the_readme_table_names_every_lesson_of_solutions():
    named = re.findall(r"^\| `(\d\d_\w+)` \|", README, re.M)
    assert named == LESSONS, f"got the README's lesson table {named}, expected solutions/ {LESSONS}"


def test_every_lesson_count_the_readme_gives_is_the_number_of_lessons():
    counts = re.findall(r"\b(\w+) lessons\b", README) + re.findall(r"all (\w+) lessons", README)
    said = [w for w in counts if w in EN_NUMBERS]
    assert said, "expected the README to say how many lessons the course has"
    wrong = [w for w in said if EN_NUMBERS.index(w) != len(LESSONS)]
    assert wrong == [], f"got the README saying {wrong} lessons, expected {EN_NUMBERS[len(LESSONS)]}"
    zh = re.findall(r"全部(\S{1,2}?)课", README)
    assert zh, "expected the Chinese part to say how many lessons there are (全部…课)"
    wrong_zh = [w for w in zh if w != ZH_NUMBERS[len(LESSONS)]]
    assert wrong_zh == [], f"got 全部{wrong_zh}课 in the README, expected 全部{ZH_NUMBERS[len(LESSONS)]}课"


def test_the_readme_gives_summary_csv_s_real_columns():
    block = README[README.index("`OUT/summary.csv`") :].split("\n- ")[0]
    columns = [re.sub(r"\s+", "", c) for c in re.findall(r"`([a-z_,\s]+)`", block)]
    named = [[c for c in cols.split(",") if c] for cols in columns if "," in cols]
    assert named[0] == list(SUMMARY_COLUMNS), f"got {named[0]}, expected {list(SUMMARY_COLUMNS)}"
    extra = [c for cols in named[1:] for c in cols if c not in SUMMARY_COLUMNS]
    assert "submissions.csv" in block or not extra, (
        f"got the README placing {extra} in summary.csv, expected only {list(SUMMARY_COLUMNS)}"
    )


def _dependencies() -> list[str]:
    meta = tomllib.loads((ROOT / "student" / "pyproject.toml").read_text(encoding="utf-8"))
    return [re.split(r"[<>=! ;\[]", d)[0] for d in meta["project"]["dependencies"]]


def test_the_docs_name_every_dependency_of_the_checks_and_no_only_torch_and_numpy():
    deps = _dependencies()
    for page in ("README.md", "docs/students.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert "torch and numpy only" not in text, f"got 'torch and numpy only' in {page}"
        line = next(ln for ln in text.splitlines() if "transformer-by-hand" in ln)
        para = text[text.index(line) : text.index(line) + 400]
        missing = [d for d in deps if d not in para]
        assert missing == [], f"got {page} not naming {missing} where it says what byhand depends on"


def test_every_lesson_s_setup_cell_names_every_dependency_of_the_checks():
    """The first cell of every lesson, both languages, as authored and as handed out, says what the
    checks' package needs (it said "only torch and numpy" while the wheel brought regex and
    matplotlib too)."""
    import json

    deps = _dependencies()
    notebooks = [
        *(ROOT / "solutions").glob("*.ipynb"),
        *(ROOT / "notebooks").glob("*.ipynb"),
        *(ROOT / "notebooks").glob("*/*.ipynb"),
    ]
    assert len(notebooks) >= 3 * len(LESSONS), (
        f"got {len(notebooks)} notebooks, expected solutions/, notebooks/ and zh_CN"
    )
    wrong = {}
    for path in notebooks:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        setup = next(c for c in cells if "setup" in c.get("metadata", {}).get("tags", []))
        line = next(
            ln for ln in "".join(setup["source"]).splitlines() if ln.startswith("#") and "`byhand`" in ln
        )
        missing = [d for d in deps if d not in line]
        if missing or "only" in line or "只" in line:
            wrong[str(path.relative_to(ROOT))] = line
    assert wrong == {}, (
        f"got setup cells not naming every dependency of the checks ({deps}): {wrong}; expected each "
        "to name them all (autograder/tooling/student.py SETUP_BLOCK, then setup-cells, make messages, make release)"
    )


def test_the_student_page_asks_for_nothing_from_this_repository_first():
    text = (ROOT / "docs" / "students.md").read_text(encoding="utf-8")
    assert "make lab" not in text, (
        "got `make lab` in docs/students.md, expected nothing that needs this repository"
    )


def test_the_benchmark_page_gives_the_example_class_s_notebook_count_today():
    n = len(list((ROOT / "examples" / "class").glob("*/*.ipynb")))
    text = (ROOT / "docs" / "benchmark.md").read_text(encoding="utf-8")
    assert f"now has {n} notebooks" in text, (
        f"expected docs/benchmark.md to say the class now has {n} notebooks"
    )


def test_the_handout_readme_s_install_figures_are_the_measured_ones():
    """The handout's README gives the CPU-only install's size and time; docs/students.md holds the
    measurement (its command and its table), in seconds."""
    from autograder.tooling.handout import HANDOUT_README

    text = (ROOT / "docs" / "students.md").read_text(encoding="utf-8")
    size = re.search(r"about ([\d.]+ GB)", HANDOUT_README).group(1)
    assert f"{size} on disk" in text, f"got the README saying {size}, which docs/students.md does not measure"
    low, high = map(int, re.search(r"took (\d+) to (\d+) minutes", HANDOUT_README).groups())
    zh = re.search(r"用了 (\d+)～(\d+) 分钟", HANDOUT_README).groups()
    assert tuple(map(int, zh)) == (low, high), f"got 用了 {zh} 分钟, expected the English {low} to {high}"
    totals = [int(s) for s in re.findall(r"\| (\d+) s \| [\d.]+ / [\d.]+ \|", text)]
    assert totals and all(low * 60 <= t <= high * 60 for t in totals), (
        f"got the README saying {low} to {high} minutes, expected it to cover the measured {totals} s"
    )
