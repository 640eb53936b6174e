"""`python -m autograder COMMAND`: what the Makefile calls.

grade [SUBMISSIONS] --out DIR     grade a folder or zip (default: the bundled example class)
release [LESSON ...]              regenerate notebooks/ from solutions/ (nbgrader)
handout [--out ZIP] [LESSON ...]  a zip of the student notebooks for an LMS (--force, --config)
exchange [LESSON ...]             nbgrader release_assignment into the exchange (course id set;
                                  English and Chinese; --force, --config)
execute [LESSON ...]              re-run solution notebooks in place (stored outputs)
examples                          regenerate the bundled example class
wheel [--out DIR]                 the student package (byhand) as a wheel (default build/wheel)
setup-cells [LESSON ...]          put the canonical checks import into the lessons' setup cells
score-cells [LESSON ...]          add or update each lesson's last cell, the score, with its output
bench                             the grading benchmark table
mutation [LESSON ...]             mutate the reference answers, run the checks on each mutant, print the table
new-exercise LESSON NAME --points N  a new graded exercise in every file it lives in (docs/authoring-lessons.md)
refresh [--all] [--no-bump]       redo everything derived from the sources (make refresh)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import course
from autograder.collect.submissions import MAX_FILE_MB, MAX_ZIP_MB
from autograder.run import sandbox
from autograder.tooling import handout, nbgrader_course, publish, release
from autograder.tooling.checkout import examples

EXAMPLE_CLASS = course.ROOT / "examples" / "class"


def _grade(args) -> int:
    from autograder.classroom import grade_class
    from autograder.collect.lateness import ConfigError
    from autograder.collect.tree import CollectError
    from autograder.outcomes import GradingStopped
    from autograder.record.export import table

    limits = sandbox.Limits(
        memory_mb=args.memory_mb,
        cpu_seconds=args.cpu_seconds,
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        question_timeout=args.question_timeout,
        max_processes=args.max_processes,
        max_file_mb=args.max_file_mb,
        disk_mb=args.disk_mb,
        shm_mb=args.shm_mb,
        isolate=not args.no_isolation,
        warm_kernels=not args.cold_kernels,
    )
    source = Path(args.submissions)
    if not source.exists():
        print(f"error: no such folder or zip: {source}", file=sys.stderr)
        return 2
    try:
        result = grade_class(
            source,
            args.out,
            workers=args.workers,
            limits=limits,
            pattern=args.pattern,
            db_url=args.db_url,
            quiet=args.quiet,
            resume=not args.no_resume,
            scheduler=args.scheduler,
            only=args.only,
            config=args.config,
            max_file_mb=args.max_submission_mb,
            max_zip_mb=args.max_zip_mb,
            lesson_map=args.map,
            lessons=args.lessons,
        )
    except (CollectError, ConfigError, ValueError) as exc:  # unreadable submissions or course config: say so
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except GradingStopped as exc:  # a lost scheduler or mismatched workers: say so, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(table(result["graded"], result.get("submissions")))
    print("\n" + done_line(result, Path(args.out)))
    print(f"class report: {Path(args.out) / 'report' / 'index.html'}")
    aside = result.get("set_aside") or []
    if aside:  # before, only the report and the CSV said it
        who = ", ".join(
            sorted({f"{h.get('student')}/{h.get('lesson')}" for h in aside if isinstance(h, dict)})
        )
        print(
            f"{len(aside)} hand grade(s) set aside: the answer changed after it was graded by hand ({who}); "
            f"they wait in formgrader again -> {Path(args.out) / 'hand_grades_set_aside.csv'}"
        )
    return 0


def done_line(result: dict, out: Path) -> str:
    """The last words of `grade`: how many notebooks this run graded and how many it reused (an
    unchanged re-run grades none and says so), and what it wrote."""
    n, reused = result.get("graded_now", 0), result.get("reused", 0)
    whole = len({g.student for g in result["graded"]})
    if n == 0:
        said = f"nothing changed: 0 graded, {reused} reused in {result['seconds']:.1f} s"
    else:
        said = f"graded {n} notebooks, {reused} reused, in {result['seconds']:.1f} s"
    return (
        f"{said} -> {out / 'grades.csv'}, summary.csv, submissions.csv, students.csv, feedback/, lms/ "
        f"(the class so far: {whole} students)"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m autograder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grade", help="grade a class")
    g.add_argument(
        "submissions",
        nargs="?",
        default=str(EXAMPLE_CLASS),
        help="folder of <student>/<lesson>.ipynb, an LMS folder, or a .zip of either",
    )
    g.add_argument("--out", default="grading-out", help="output folder (grades.csv, summary.csv, feedback/)")
    g.add_argument("--workers", type=int, default=0, help="parallel workers (default: number of cores)")
    g.add_argument(
        "--pattern",
        default=None,
        help="regex for another LMS's file names, with (?P<student>) and (?P<lesson>), optionally (?P<id>)",
    )
    g.add_argument(
        "--only",
        nargs="+",
        default=None,
        metavar="STUDENT",
        help="grade only these students (label, LMS id or name) into OUT, keeping everyone else's results",
    )
    g.add_argument(
        "--config",
        default=None,
        metavar="TOML",
        help="course config: deadlines, extensions, late policy, LMS columns and roster (autograder/collect/lateness.py)",
    )
    g.add_argument(
        "--lessons",
        nargs="+",
        default=None,
        metavar="LESSON",
        help="the lessons the totals count (max_total); others are graded and shown to their students "
        "(default: the course config's `lessons`, else every lesson handed in)",
    )
    g.add_argument(
        "--map",
        action="append",
        default=None,
        metavar="FILE=LESSON",
        help="the lesson of a file whose name does not say (a name or path, wildcards allowed), "
        "LESSON alone for a whole export of one assignment, or a CSV with file,lesson columns; repeatable",
    )
    g.add_argument(
        "--max-submission-mb",
        type=int,
        default=MAX_FILE_MB,
        help=f"refuse a submitted file larger than this (default {MAX_FILE_MB})",
    )
    g.add_argument(
        "--max-zip-mb",
        type=int,
        default=MAX_ZIP_MB,
        help=f"refuse a zip that unpacks to more than this (default {MAX_ZIP_MB})",
    )
    g.add_argument("--db-url", default=None, help="gradebook database URL (default: sqlite in --out)")
    g.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="grade on a Dask cluster, e.g. tcp://host:8786 (docs/scaling.md)",
    )
    g.add_argument("--memory-mb", type=int, default=sandbox.Limits.memory_mb)
    g.add_argument("--cpu-seconds", type=int, default=sandbox.Limits.cpu_seconds)
    g.add_argument(
        "--cell-timeout",
        type=int,
        default=None,
        help=f"seconds a cell may run before it is stopped (default: the course config's [limits], else {sandbox.Limits.cell_timeout})",
    )
    g.add_argument(
        "--notebook-timeout",
        type=int,
        default=None,
        help=f"seconds a whole notebook may run (default: the course config's [limits], else {sandbox.Limits.notebook_timeout})",
    )
    g.add_argument(
        "--question-timeout",
        type=int,
        default=None,
        help=f"seconds the grader's probe may spend calling one question's code before it is stopped (default: the course config's [limits], else {sandbox.Limits.question_timeout})",
    )
    g.add_argument("--max-processes", type=int, default=sandbox.Limits.max_processes)
    g.add_argument("--max-file-mb", type=int, default=sandbox.Limits.max_file_mb)
    g.add_argument(
        "--disk-mb",
        type=int,
        default=sandbox.Limits.disk_mb,
        help="what a kernel may write to its home and /tmp together (a private tmpfs)",
    )
    g.add_argument(
        "--shm-mb", type=int, default=sandbox.Limits.shm_mb, help="size of a kernel's private /dev/shm"
    )
    g.add_argument("--no-isolation", action="store_true", help="no namespaces / separate user (limits only)")
    g.add_argument(
        "--cold-kernels",
        action="store_true",
        help="start every kernel from scratch instead of forking a pre-imported one",
    )
    g.add_argument("--no-resume", action="store_true", help="re-grade everything, ignoring saved results")
    g.add_argument("--quiet", action="store_true")
    r = sub.add_parser("release", help="regenerate notebooks/ from solutions/")
    r.add_argument("lessons", nargs="*")
    h = sub.add_parser("handout", help="a zip of the student notebooks for an LMS")
    h.add_argument("--out", default=None, help="zip path (default build/handout/<course>-notebooks.zip)")
    x = sub.add_parser("exchange", help="release lessons into nbgrader's exchange")
    for cmd in (h, x):
        cmd.add_argument("lessons", nargs="*", help="lesson ids or numbers (default: every lesson)")
        cmd.add_argument(
            "--force", action="store_true", help="hand out graded answers of other lessons anyway"
        )
        cmd.add_argument("--config", type=Path, default=None, help="course config: deadlines not yet passed")
    e = sub.add_parser("execute", help="execute solution notebooks in place")
    e.add_argument("lessons", nargs="*")
    sub.add_parser("examples", help="regenerate the bundled example class")
    sub.add_parser("mistakes", help="regenerate docs/mistakes.md from the answer catalogues")
    t = sub.add_parser("translations", help="how current each lesson's translation is")
    t.add_argument("--lang", default="zh_CN")
    t.add_argument("--update", action="store_true", help="add TODO entries for new and changed cells")
    ms = sub.add_parser("messages", help="extract the pages' words and compile the gettext catalogues")
    ms.add_argument("--new", metavar="LANG", help="start the catalogue of a new language")
    rv = sub.add_parser("review", help="a lesson and its translation side by side (build/review/NN.html)")
    rv.add_argument("lessons", nargs="*")
    rv.add_argument("--lang", default="zh_CN")
    w = sub.add_parser("wheel", help="build the student package's wheel")
    w.add_argument("--out", type=Path, default=course.BUILD / "wheel")
    s = sub.add_parser("setup-cells", help="rewrite the lessons' setup cells (checks import block)")
    s.add_argument("lessons", nargs="*")
    sc = sub.add_parser(
        "score-cells", help="add or update the lessons' last cell, the score (with its output)"
    )
    sc.add_argument("lessons", nargs="*")
    b = sub.add_parser("bench", help="grading benchmark")
    b.add_argument("--students", type=int, default=0, help="also a generated class of N students (long)")
    b.add_argument("--copies", type=int, default=12, help="copies of lesson 01 graded against nbgrader")
    b.add_argument("--lessons", nargs="*", default=None)
    b.add_argument("--skip-nbgrader", action="store_true")
    b.add_argument(
        "--isolation", action="store_true", help="only: what isolation costs a notebook (interleaved)"
    )
    b.add_argument("--rounds", type=int, default=3, help="with --isolation: rounds over the notebooks")
    m = sub.add_parser("mutation", help="mutation testing of the lessons' checks (docs/mutation.md)")
    m.add_argument("lessons", nargs="*")
    m.add_argument("--quiet", action="store_true", help="only the table and the problems")
    n = sub.add_parser("new-exercise", help="scaffold a graded exercise (docs/authoring-lessons.md)")
    n.add_argument("lesson", help="the lesson id, e.g. 05_init")
    n.add_argument("name", help="the graded name: a function's, in snake_case")
    n.add_argument("--points", type=int, required=True, help="what the exercise is worth (at least 1)")
    rf = sub.add_parser("refresh", help="redo everything derived from the sources, what changed only")
    rf.add_argument("--all", action="store_true", help="redo every step, changed or not")
    rf.add_argument(
        "--no-bump", action="store_true", help="record the current version's fingerprint, never bump it"
    )
    args = p.parse_args(argv)
    if args.cmd == "new-exercise":
        from autograder.tooling import scaffold

        try:
            written = scaffold.new_exercise(args.lesson, args.name, args.points)
        except scaffold.Refused as exc:
            print(f"error: {exc}; nothing written", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path.relative_to(course.ROOT)}")
        print(scaffold.NEXT.format(lesson=args.lesson, name=args.name, NAME=args.name.upper()))
        return 0
    if args.cmd == "refresh":
        from autograder.tooling.refresh import refresh

        refresh(everything=args.all, allow_bump=not args.no_bump)
        return 0
    if args.cmd == "grade":
        from autograder.collect.submissions import DEFAULT_LMS_PATTERN

        args.pattern = args.pattern or DEFAULT_LMS_PATTERN
        return _grade(args)
    if args.cmd == "release":
        for path in release.release(args.lessons or None):
            print(f"wrote {path.relative_to(course.ROOT)}")
        if warning := publish.source_warning("release"):
            print(warning, file=sys.stderr)
        return 0
    if args.cmd in ("handout", "exchange"):
        try:
            selected = publish.pick(args.lessons)
            for line in publish.check_release(selected, args.force, args.config):
                print(line, file=sys.stderr)
            if args.cmd == "handout":
                print(f"wrote {handout.handout(Path(args.out) if args.out else None, selected, True)}")
                if publish.source_warning("handout"):
                    print(handout.NO_SOURCE, file=sys.stderr)
            else:
                for line in nbgrader_course.release_to_exchange(selected):
                    print(line)
        except ValueError as exc:  # a refused release, an unknown lesson, an unreadable config
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.cmd == "execute":
        from autograder.tooling.execute import main as execute_main

        execute_main(args.lessons or None)
        return 0
    if args.cmd == "examples":
        examples()
        from examples.build import build

        build()
        return 0
    if args.cmd == "mistakes":
        examples()
        from examples import catalogue

        print(f"wrote {catalogue.write().relative_to(course.ROOT)}")
        return 0
    if args.cmd == "translations":
        from autograder.tooling import translations

        if args.update:
            for lesson in course.lessons():
                print(f"wrote {translations.update_skeleton(lesson, args.lang).relative_to(course.ROOT)}")
        print(translations.report(args.lang))
        return 0
    if args.cmd == "messages":
        from autograder.tooling import messages

        pot = messages.template()  # extracted once, for the update and the count
        for path in messages.update(args.new, new=bool(args.new), pot=pot):
            print(f"wrote {path.relative_to(course.ROOT)}")
        untranslated = {lang: messages.untranslated(lang, pot) for lang in messages.languages()}
        for lang, ids in untranslated.items():
            print(f"{lang}: {len(ids)} ids to translate" + "".join(f"\n  {i!r}" for i in ids))
        return 1 if any(untranslated.values()) else 0
    if args.cmd == "review":
        from autograder.tooling import review

        for lesson in args.lessons or course.lessons():
            path = review.write(lesson, args.lang)
            print(f"wrote {path.relative_to(course.ROOT)}")
        return 0
    if args.cmd == "wheel":
        from autograder.tooling.student import build_wheel

        print(f"wrote {build_wheel(args.out)}")
        return 0
    if args.cmd == "setup-cells":
        from autograder.tooling.student import rewrite_setup_cells

        for path in rewrite_setup_cells(args.lessons or None):
            print(f"rewrote the setup cell of {path.relative_to(course.ROOT)}")
        return 0
    if args.cmd == "score-cells":
        from autograder.tooling.student import rewrite_score_cells

        for path in rewrite_score_cells(args.lessons or None):
            print(f"wrote the score cell of {path.relative_to(course.ROOT)}")
        return 0
    if args.cmd == "mutation":
        from autograder.tooling.mutation import main as mutation_main

        return mutation_main(args.lessons or None, quiet=args.quiet)
    if args.cmd == "bench":
        examples()
        if args.isolation:
            from autograder.tooling.bench_isolation import main as isolation_main

            return isolation_main(args.rounds)
        from autograder.tooling.bench import main as bench_main

        return bench_main(args.students, args.lessons, args.skip_nbgrader, args.copies)
    return 2


if __name__ == "__main__":
    sys.exit(main())
