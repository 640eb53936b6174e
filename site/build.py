"""Build the course site (what `make book` runs): solutions/ -> a static, fully offline website.

One step per function:

    lessons()          the lesson ids: stems of solutions/*.ipynb, in order
    site_notebook()    a solution notebook as the site shows it: reference answers behind a
                       "Show solution" toggle, hidden tests and nbgrader markers removed
    index_page()       the home page: every lesson's title and what it teaches (its first paragraph)
    translated_pages() each language's edition (translations/<lang>/): its home page and lessons,
                       under <lang>/, linked both ways with the English pages
    assemble()         lays the Sphinx source folder out under build/site-src/ (lessons, the student
                       notebooks and the wheel of their self-checks to download, a local MathJax)
    sphinx()           sphinx-build with site/conf.py into build/site/ (stored outputs: no execution)

    .venv/bin/python site/build.py [--out build/site]     then open build/site/index.html
    .venv/bin/python site/build.py --no-answers           a graded class's site: no reference answers
    .venv/bin/python site/build.py --no-answers --lessons 01 02   only these lessons (--force, --config)

Every notebook it serves and every page it renders installs the checks from `BYHAND_SOURCE` (the
wheel's URL or an index name); without it the build says loudly that they cannot.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

SITE = Path(__file__).resolve().parent
ROOT = SITE.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
MATHJAX = SITE / "node_modules" / "mathjax"

COURSE_TITLE = "Transformer building blocks, by hand"
SHOW, HIDE = "Show solution", "Hide solution"
# False for a graded class's site (`make book ANSWERS=0`, --no-answers): every reference answer is
# replaced by the student's blank cell, and the test cells' outputs (computed from the reference
# answers) are dropped; the self-learners' site (the default) keeps the answers behind a toggle.
ANSWERS = True
# `--lessons`: the lessons this site publishes (None: every lesson of solutions/)
SELECTED: list[str] | None = None
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
GRADED_NOTE = (
    "This site is for a graded class: the reference answers are not on it. Download the student "
    "notebook and work through it in Jupyter or Colab."
)

# What the site says in each translated edition (the lesson text itself is in translations/<lang>/)
EDITIONS = {
    "zh_CN": {
        "name": "简体中文",
        "title": "手撕 Transformer：一块一块亲手搭",
        "intro": (
            "一组短小、动手的课程：从 `matmul` 和 `softmax` 开始，亲手搭出 Transformer 的各个部件，"
            "并和 PyTorch 自己的算子对照检查。每一课是一个 notebook：正文讲一个想法，公式就写在计算它的"
            "代码正上方，每条结论都当场测量，每个想法以一道练习和它的自检结束。"
        ),
        "read": (
            "可以直接在这里阅读（每个参考答案都藏在 **{show}** 按钮后面），也可以下载学生版 notebook，"
            "在 Jupyter 或 Colab 里自己做。"
        ),
        "install": (
            "自检需要课程的小包 `byhand`（它会一并安装 torch、numpy、regex 和 matplotlib）：下载 {wheel} 并运行 "
            "`pip install {name}`（没有 NVIDIA 显卡的电脑先运行 `pip install torch --index-url {cpu}`，"
            "就不会下载 CUDA）。没有它，每个单元格照样能运行，只是自检会说明它们已关闭。"
        ),
        "lessons": "课程",
        "student": "学生版 notebook：",
        "work": "自己动手做",
        "download": "下载学生版 notebook {nb}（练习留空，含自检），在 Jupyter 或 Colab 里运行。",
        "try": "下面每个参考答案都藏在 **{show}** 按钮后面：先自己做练习。",
        "english": "English edition: [{title}]({href})",
        "other": "本课有简体中文版：[{title}]({href})",
        "graded": "这个网站供计分的课程使用：上面没有参考答案。请下载学生版 notebook，在 Jupyter 或 Colab 里自己做。",
    }
}
HIDDEN_TESTS = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S
)
SOLUTION_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?", re.M)


def lessons() -> list[str]:
    """Lesson ids, in order: the stems of solutions/*.ipynb (a new lesson appears by itself), or
    those of `--lessons`."""
    return [p.stem for p in sorted(SOLUTIONS.glob("*.ipynb")) if SELECTED is None or p.stem in SELECTED]


def install_source() -> str:
    """What the pages tell students to install: BYHAND_SOURCE, else the wheel's file name (the wheel
    this site serves, once downloaded)."""
    sys.path.insert(0, str(ROOT))
    from autograder.tooling import student

    given = student.install_source()
    return wheel_name() if given == student.GIT_URL or "<org>" in given else given


def with_source(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` with its setup cell installing the checks from BYHAND_SOURCE (unchanged without it)."""
    sys.path.insert(0, str(ROOT))
    from autograder.tooling.student import with_install_source

    return nbformat.reads(with_install_source(json.dumps(nb)), as_version=4)


# ---------------------------------------------------------------------------------------------
# the lesson pages


def strip_hidden_tests(source: str) -> str:
    """Drop every `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` block, markers included."""
    return HIDDEN_TESTS.sub("", source).rstrip()


def strip_solution_markers(source: str) -> str:
    """Keep the reference answer, drop the `### BEGIN/END SOLUTION` marker lines."""
    return SOLUTION_MARKER.sub("", source).rstrip()


def wheel_name() -> str:
    """The file name of the student package's wheel (its version from student/pyproject.toml)."""
    text = (ROOT / "student" / "pyproject.toml").read_text(encoding="utf-8")
    name, version = (re.search(rf'^{key} = "([^"]+)"', text, re.M).group(1) for key in ("name", "version"))
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def install_line(lang: str = "") -> str:
    """How a student installs the self-checks, linked to the wheel the site serves."""
    wheel = wheel_name()
    source = install_source()
    if lang:
        link = f"{{download}}`{wheel} </downloads/{wheel}>`"
        return EDITIONS[lang]["install"].format(wheel=link, name=source, cpu=CPU_INDEX)
    return (
        f"Its self-checks need the course's small package `byhand` (it brings torch, numpy, regex and "
        f"matplotlib): download {{download}}`{wheel} </downloads/{wheel}>` and run `pip install {source}` "
        f"(on a computer without an NVIDIA GPU, first `pip install torch --index-url {CPU_INDEX}`, so that "
        "pip never downloads CUDA). Without it every cell still runs; the self-checks say they are off."
    )


def download_note(lesson: str, lang: str = "", other: str = "") -> nbformat.NotebookNode:
    """The markdown cell that links a lesson page to its student notebook and the checks' wheel
    (in `lang`'s words for a translated edition), and to the same lesson in the other edition."""
    if not lang:
        text = (
            f"Download the student notebook {{download}}`{lesson}.ipynb </downloads/{lesson}.ipynb>` "
            "(the exercises blank, the self-checks included) and run it in Jupyter or Colab. "
            f"{install_line()} "
            + (
                f"Each reference answer below is behind a **{SHOW}** toggle: try the exercise first."
                if ANSWERS
                else GRADED_NOTE
            )
        )
        title = "Work through it yourself"
    else:
        ed = EDITIONS[lang]
        nb = f"{{download}}`{lesson}.ipynb </downloads/{lang}/{lesson}.ipynb>`"
        text = f"{ed['download'].format(nb=nb)}{install_line(lang)}" + (
            ed["try"].format(show=SHOW) if ANSWERS else ed["graded"]
        )
        title = ed["work"]
    body = f":::{{admonition}} {title}\n:class: tip\n{text}\n:::"
    if other:
        body += "\n\n" + other
    return nbformat.v4.new_markdown_cell(body)


def site_notebook(
    nb: nbformat.NotebookNode, lesson: str, student_notebook: bool, lang: str = "", other: str = ""
) -> nbformat.NotebookNode:
    """A copy of a solution notebook as the site shows it (stored outputs kept as they are); `lang`
    for a translated edition's page, `other` a line linking the same lesson in the other edition."""
    nb = with_source(nb)  # the page's first cell installs from BYHAND_SOURCE, as the download does
    if not ANSWERS:
        nb = without_answers(nb, lesson, lang)
    for cell in nb.cells:
        is_solution = bool(cell.metadata.get("nbgrader", {}).get("solution")) and ANSWERS
        if cell.cell_type == "code":
            cell.source = strip_hidden_tests(cell.source)
            if is_solution:
                cell.source = strip_solution_markers(cell.source)
                tags = cell.metadata.setdefault("tags", [])
                if "hide-input" not in tags:
                    tags.append("hide-input")
                cell.metadata["mystnb"] = {"code_prompt_show": SHOW, "code_prompt_hide": HIDE}
        elif cell.cell_type == "markdown" and is_solution:
            body = strip_solution_markers(cell.source)
            cell.source = f'<details class="solution">\n<summary>{SHOW}</summary>\n\n{body}\n\n</details>'
    if student_notebook:
        nb.cells.insert(1, download_note(lesson, lang, other))
    return nb


def without_answers(nb: nbformat.NotebookNode, lesson: str, lang: str = "") -> nbformat.NotebookNode:
    """A solution notebook with every reference answer replaced by the student notebook's cell (the
    blank stub; by cell id, notebooks/<lang>/ for an edition) and no output that a reference answer
    or a test cell printed."""
    student = NOTEBOOKS / lang / f"{lesson}.ipynb"
    blank = {}
    if student.exists():
        blank = {c.get("id"): c.source for c in nbformat.read(student, as_version=4).cells}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            stub = (
                "YOUR ANSWER HERE"
                if cell.cell_type == "markdown"
                else "# YOUR CODE HERE\nraise NotImplementedError()"
            )
            cell.source = blank.get(cell.get("id"), stub)
        if cell.cell_type == "code" and (meta.get("solution") or meta.get("grade")):
            cell.outputs, cell.execution_count = [], None
    return nb


# ---------------------------------------------------------------------------------------------
# the home page


def _blocks(markdown: str) -> list[str]:
    return [b.strip() for b in re.split(r"\n[ \t]*\n", markdown) if b.strip()]


def title_and_summary(nb: nbformat.NotebookNode) -> tuple[str, str]:
    """The lesson's title (the first `# ` heading) and what it teaches: the first paragraph after
    it, with the list that follows when the paragraph introduces one (ends with ':')."""
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    blocks = _blocks(first)
    title = next((b[2:].strip() for b in blocks if b.startswith("# ")), None)
    body = [b for b in blocks if not b.startswith("#")]
    summary = body[:1]
    if body and body[0].endswith((":", "：")) and len(body) > 1 and re.match(r"^\s*([-*+]|\d+\.)\s", body[1]):
        summary.append(body[1])
    return title or "Untitled lesson", "\n\n".join(summary)


def index_page(entries: list[tuple[str, str, str, bool]], editions: list[str] = ()) -> str:
    """MyST source of the home page; entries are (lesson, title, summary, has_student_notebook);
    `editions` the languages with a translated edition (linked at the top)."""
    lines = [
        f"# {COURSE_TITLE}",
        "",
        *[f"{EDITIONS[lang]['name']}：[{EDITIONS[lang]['title']}]({lang}/index.md)" for lang in editions],
        *([""] if editions else []),
        "Short, hands-on lessons that build the parts of a Transformer from `matmul` and "
        "`softmax` up, checked against PyTorch's own ops. Each lesson is a notebook: the text "
        "explains an idea, shows the equation right above the code that computes it, measures "
        "what it claims, and ends each idea with an exercise and its self-check.",
        "",
        (
            "Read the lessons here (every reference answer is behind a **Show solution** toggle), "
            "or download a student notebook and work through it in Jupyter or Colab. "
            if ANSWERS
            else GRADED_NOTE + " "
        )
        + install_line(),
        "",
        "## Lessons",
        "",
    ]
    for lesson, title, summary, has_student in entries:
        lines += [f"### [{title}](lessons/{lesson}.ipynb)", "", summary, ""]
        if has_student:
            lines += [f"Student notebook: {{download}}`{lesson}.ipynb </downloads/{lesson}.ipynb>`", ""]
    lines += ["```{toctree}", ":hidden:", ":maxdepth: 1", ""]
    lines += [f"lessons/{lesson}" for lesson, *_ in entries]
    lines += [f"{lang}/index" for lang in editions]
    lines += ["```", ""]
    return "\n".join(lines)


def edition_index(lang: str, entries: list[tuple[str, str, str, bool]]) -> str:
    """MyST source of a translated edition's home page (`lang`/index.md)."""
    ed = EDITIONS[lang]
    lines = [
        f"# {ed['title']}",
        "",
        ed["english"].format(title=COURSE_TITLE, href="../index.md"),
        "",
        ed["intro"],
        "",
        (ed["read"].format(show=SHOW) if ANSWERS else ed["graded"]) + install_line(lang),
        "",
        f"## {ed['lessons']}",
        "",
    ]
    for lesson, title, summary, has_student in entries:
        lines += [f"### [{title}](lessons/{lesson}.ipynb)", "", summary, ""]
        if has_student:
            lines += [f"{ed['student']}{{download}}`{lesson}.ipynb </downloads/{lang}/{lesson}.ipynb>`", ""]
    lines += ["```{toctree}", ":hidden:", ":maxdepth: 1", ""]
    lines += [f"lessons/{lesson}" for lesson, *_ in entries]
    lines += ["```", ""]
    return "\n".join(lines)


def translated_lessons(names: list[str]) -> dict[str, list[str]]:
    """{language: the lessons whose translation is current}, for every language with any."""
    from autograder.tooling import translations

    out = {}
    for lang in translations.LANGUAGES:
        done = [
            n
            for n in names
            if translations.path_for(n, lang).exists() and translations.status(n, lang).current
        ]
        if done:
            out[lang] = done
    return out


def translated_pages(src: Path, lang: str, lessons_: list[str]) -> None:
    """`lang`/index.md and `lang`/lessons/*.ipynb: the translated edition of these lessons."""
    from autograder.tooling import translations

    entries = []
    for lesson in lessons_:
        nb = translations.translate(nbformat.read(SOLUTIONS / f"{lesson}.ipynb", as_version=4), lesson, lang)
        student = NOTEBOOKS / lang / f"{lesson}.ipynb"
        english = nbformat.read(SOLUTIONS / f"{lesson}.ipynb", as_version=4)
        back = EDITIONS[lang]["english"].format(
            title=title_and_summary(english)[0], href=f"../../lessons/{lesson}.ipynb"
        )
        write_if_changed(
            src / lang / "lessons" / f"{lesson}.ipynb",
            nbformat.writes(site_notebook(nb, lesson, student.exists(), lang, back)) + "\n",
        )
        entries.append((lesson, *title_and_summary(nb), student.exists()))
    write_if_changed(src / lang / "index.md", edition_index(lang, entries))


# ---------------------------------------------------------------------------------------------
# the Sphinx source folder


def write_if_changed(path: Path, text: str) -> None:
    """Unchanged files keep their mtime, so Sphinx rebuilds only what changed."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def ensure_mathjax() -> Path:
    """MathJax 3 from npm (site/package-lock.json), installed once with `npm ci` (under a lock:
    parallel test workers may build at the same time)."""
    es5 = MATHJAX / "es5"
    with open(SITE / ".npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (es5 / "tex-chtml-full.js").exists():
            npm = shutil.which("npm")
            if npm is None:
                sys.exit("site/build.py: npm is needed once to fetch MathJax: bash .ci/install-browser.sh")
            subprocess.run(
                [npm, "ci", "--prefix", str(SITE), "--no-audit", "--no-fund", "--loglevel=error"], check=True
            )
    return es5


def assemble(src: Path) -> list[str]:
    """Lay out the Sphinx source: index.md, lessons/*.ipynb, downloads/*.ipynb, _static/mathjax."""
    names = lessons()
    if not names:
        sys.exit(f"site/build.py: no lessons in {SOLUTIONS}")
    sys.path.insert(0, str(ROOT))
    editions = translated_lessons(names)
    entries = []
    for lesson in names:
        nb = nbformat.read(SOLUTIONS / f"{lesson}.ipynb", as_version=4)
        student = NOTEBOOKS / f"{lesson}.ipynb"
        other = " ".join(
            EDITIONS[lang]["other"].format(
                title=EDITIONS[lang]["name"], href=f"../{lang}/lessons/{lesson}.ipynb"
            )
            for lang, done in editions.items()
            if lesson in done
        )
        write_if_changed(
            src / "lessons" / f"{lesson}.ipynb",
            nbformat.writes(site_notebook(nb, lesson, student.exists(), other=other)) + "\n",
        )
        entries.append((lesson, *title_and_summary(nb), student.exists()))
    for lang, done in editions.items():
        translated_pages(src, lang, done)
    for folder in ("lessons", "downloads"):  # a lesson removed from solutions/ leaves the site too
        for stale in (src / folder).glob("*.ipynb"):
            if stale.stem not in names:
                stale.unlink()
        for lang_folder in (src / folder).parent.glob(f"*/{folder}"):
            for stale in lang_folder.glob("*.ipynb"):
                if stale.stem not in editions.get(lang_folder.parent.name, ()):
                    stale.unlink()
    write_downloads(src / "downloads", names, editions)
    write_if_changed(src / "index.md", index_page(entries, list(editions)))
    es5, dest = ensure_mathjax(), src / "_static" / "mathjax"
    if not (dest / "tex-chtml-full.js").exists():
        shutil.copytree(es5, dest, dirs_exist_ok=True)
    return names


def write_downloads(downloads: Path, names: list[str], editions: dict | None = None) -> list[Path]:
    """What the site serves for students: each lesson's student notebook (as notebooks/ has it, and
    notebooks/<lang>/ for each translated edition; the setup cell's install source set by
    BYHAND_SOURCE when given) and the wheel of the self-checks they import."""
    sys.path.insert(0, str(ROOT))
    from autograder.tooling.student import with_install_source

    written = []
    for lang, lesson in [("", n) for n in names] + [
        (g, n) for g, done in (editions or {}).items() for n in done
    ]:
        student = NOTEBOOKS / lang / f"{lesson}.ipynb"
        if student.exists():
            text = with_install_source(student.read_text(encoding="utf-8"))  # BYHAND_SOURCE, if set
            write_if_changed(downloads / lang / f"{lesson}.ipynb", text)
            written.append(downloads / lang / f"{lesson}.ipynb")
    return written + [add_wheel(downloads)]


def add_wheel(downloads: Path) -> Path:
    """Build the student package's wheel into the downloads (unless the one there is up to date)."""
    wheel = downloads / wheel_name()
    sources = sorted((ROOT / "student").rglob("*.py")) + [ROOT / "student" / "pyproject.toml"]
    if wheel.exists() and all(p.stat().st_mtime <= wheel.stat().st_mtime for p in sources):
        return wheel
    sys.path.insert(0, str(ROOT))
    from autograder.tooling.student import build_wheel

    return build_wheel(downloads)


def sphinx(src: Path, out: Path, doctrees: Path) -> None:
    """HTML from the assembled source with site/conf.py; any Sphinx warning fails the build."""
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-q",
        "-W",
        "--keep-going",
        "-c",
        str(SITE),
        "-d",
        str(doctrees),
        str(src),
        str(out),
    ]
    subprocess.run(cmd, check=True)


def build(out: Path = BUILD / "site", work: Path | None = None) -> Path:
    """Assemble and render the site into `out`; return the path of its index.html."""
    work = work or out.parent / f"{out.name}-src"
    assemble(work / "source")
    sphinx(work / "source", out, work / "doctrees")
    return out / "index.html"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=BUILD / "site", help="output folder (default build/site)")
    parser.add_argument(
        "--no-answers",
        action="store_true",
        help="a graded class's site: no reference answers (default: the self-learners' site, with them)",
    )
    parser.add_argument("--lessons", nargs="*", default=None, help="only these lessons (ids or numbers)")
    parser.add_argument("--force", action="store_true", help="publish other lessons' graded answers anyway")
    parser.add_argument("--config", type=Path, default=None, help="course config: deadlines not yet passed")
    args = parser.parse_args(argv)
    global ANSWERS, SELECTED
    ANSWERS = not args.no_answers
    sys.path.insert(0, str(ROOT))
    from autograder.tooling import publish

    try:
        if args.lessons:
            SELECTED = publish.pick(args.lessons)
        if not ANSWERS:  # a graded class's site: no lesson's given code may hold another's answer
            for line in publish.check_release(lessons(), args.force, args.config):
                print(line, file=sys.stderr)
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    index = build(args.out.resolve())
    print(f"site: {index}")
    if warning := publish.source_warning("book"):
        print(warning, file=sys.stderr)


if __name__ == "__main__":
    main()
