"""The instructor's class report: `OUT/report/index.html` with plots, and the same numbers as CSV.

- per lesson: how many students submitted, mean, median, how many got full points, and the score
  distribution (a histogram of whole students);
- one row per student: points per lesson, each a link to that student's feedback page;
- pass rate per question;
- the most common mistakes, from the hints the checks fired: real mistakes first; a failure that
  only follows from a piece the question uses failing too (`Row.knock_on`, set by the judge) is a
  knock-on, counted apart;
- the notebooks that could not be graded.

Everything a submission controls (student names, messages) is escaped; the page loads nothing from
outside and runs no script (a Content-Security-Policy says so to the browser).
"""

from __future__ import annotations

import csv
import html
import re
import statistics
import textwrap
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import quote

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from byhand import fonts, i18n  # noqa: E402
from byhand.i18n import N_  # noqa: E402
from byhand.width import width as display_width  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from autograder.course import lesson_max  # noqa: E402
from autograder.outcomes import Status, safe_name  # noqa: E402
from autograder.record.feedback import CSP, FONTS  # noqa: E402


def _write_csv(path: Path, header: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def class_language(graded: list) -> str:
    """The language of the report: the class's, when every notebook that was read speaks the same
    one (a refused file, whose language nobody knows, makes no class English)."""
    langs = {g.known_language for g in graded if g.lesson and g.known_language}
    return langs.pop() if len(langs) == 1 else i18n.DEFAULT


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def numbers(graded: list) -> dict:
    scores = defaultdict(list)  # lesson -> [(student, points, max, status)]
    passes = defaultdict(lambda: [0, 0])  # (lesson, question) -> [passed, submitted]
    mistakes = Counter()  # (lesson, question, hint) -> submissions
    knock_ons = Counter()
    pending = Counter()  # lesson -> written answers waiting for a person
    ungradable = []
    said = {}  # (language, English hint) -> the hint as the feedback said it
    for g in graded:
        if not g.lesson:
            ungradable.append((g.student, "", g.rows[0].message if g.rows else ""))
            continue
        if any(r.status == "ungradable" for r in g.rows):
            ungradable.append((g.student, g.lesson, g.rows[0].message))
        status = Status.of_lesson(r.status for r in g.rows)
        mx = lesson_max(g.lesson, sum(r.max_points for r in g.rows))  # every question, written too
        scores[g.lesson].append((g.student, sum(r.points for r in g.rows), mx, status))
        for r in g.rows:
            if r.question:
                passes[(g.lesson, r.question)][1] += 1
                passes[(g.lesson, r.question)][0] += r.status == "passed"
                pending[g.lesson] += r.status == "needs grading"
        row = {r.question: r for r in g.rows}
        for question, hint, *shown in g.hints:
            if shown and g.known_language:  # the hint as the feedback said it, in the notebook's language
                said[(g.known_language, hint)] = shown[0]
            if question not in row or row[question].not_done:  # unanswered: it shows in the pass rates
                continue
            kind = knock_ons if row[question].knock_on else mistakes
            kind[(g.lesson, question, hint)] += 1
    return {
        "scores": dict(scores),
        "passes": dict(passes),
        "mistakes": mistakes,
        "knock_ons": knock_ons,
        "pending": pending,
        "ungradable": ungradable,
        "said": said,
    }


def lesson_stats(n: dict) -> list:
    """[lesson, submitted, mean, median, max points, full points] per lesson."""
    out = []
    for lesson in sorted(n["scores"]):
        pts = [p for _, p, _, _ in n["scores"][lesson]]
        mx = max(m for _, _, m, _ in n["scores"][lesson])
        full = sum(1 for _, p, m, _ in n["scores"][lesson] if m and p >= m)
        out.append([lesson, len(pts), statistics.mean(pts), statistics.median(pts), mx, full])
    return out


def _plots(
    folder: Path, n: dict, lessons: list, pass_rows: list, mistake_rows: list, lang: str = i18n.DEFAULT
) -> None:
    """The report's three charts, their words in the class's language (a CJK font when one is installed)."""
    zh = lang != i18n.DEFAULT
    if zh:
        fonts.use_cjk_font()

    def _t(text: str, **values) -> str:
        return i18n.page(text, lang, **values)

    if lessons:
        cols = min(3, len(lessons))
        rows_ = (len(lessons) + cols - 1) // cols
        fig, axes = plt.subplots(rows_, cols, figsize=(3.2 * cols, 2.4 * rows_), squeeze=False)
        for ax in axes.flat[len(lessons) :]:
            ax.axis("off")
        for ax, lesson in zip(axes.flat, lessons):
            pts = [p for _, p, _, _ in n["scores"][lesson]]
            mx = max(m for _, _, m, _ in n["scores"][lesson]) or 1
            ax.hist(pts, bins=range(0, int(mx) + 2), color="#4c72b0", edgecolor="white", align="left")
            ax.set_title(lesson, fontsize=9)
            ax.set_xlabel(_t("points (of {mx})", mx=f"{mx:g}"), fontsize=8)
            ax.set_xlim(-0.5, mx + 0.5)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # students are counted whole
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for row in axes:
            row[0].set_ylabel(_t("students"))
        fig.suptitle(_t("Score distribution per lesson"), fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "scores.png", dpi=90)
        plt.close(fig)
    if pass_rows:
        fig, ax = plt.subplots(figsize=(7, 0.28 * len(pass_rows) + 1.0))
        labels = [f"{row[0][:2]} {row[1]}" for row in pass_rows]
        rates = [float(row[4]) for row in pass_rows]
        ax.barh(range(len(rates)), rates, color=["#55a868" if r >= 0.5 else "#c44e52" for r in rates])
        ax.set_yticks(range(len(rates)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel(_t("pass rate"))
        ax.set_title(_t("Pass rate per question"), fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "pass_rates.png", dpi=90)
        plt.close(fig)
    top = mistake_rows[:12]
    stale = folder / "mistakes.png"
    if top:
        labels = [mistake_label(row, lang, n.get("said")) for row in top]
        height = 0.3 * sum(label.count("\n") + 1 for label in labels) + 1.2
        fig, ax = plt.subplots(figsize=(11, height))
        ax.barh(range(len(top)), [row[3] for row in top], color="#dd8452")
        ax.set_yticks(range(len(top)), labels, fontsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.invert_yaxis()
        ax.set_xlabel(_t("submissions"))
        ax.set_title(_t("Most common mistakes (knock-on failures not counted)"), fontsize=10)
        fig.tight_layout()
        fig.savefig(stale, dpi=90, bbox_inches="tight")  # the labels whole, however long
        plt.close(fig)
    elif stale.exists():
        stale.unlink()


def hint_in(hint: str, lang: str, said: dict | None = None) -> str:
    """A mistake's name (the English hint) in `lang`: as the grader said it in the feedback of a
    notebook in `lang` (rendered from its catalogue id), else looked up in the catalogue by its text
    (a grade saved before the grader kept what it said)."""
    if lang == i18n.DEFAULT:
        return hint
    return (said or {}).get((lang, hint)) or i18n.hint(hint, lang)


def mistake_label(row, lang: str = i18n.DEFAULT, said: dict | None = None) -> str:
    """A mistake's label on the chart: the question and the whole hint in the class's language,
    wrapped (never cut) at 60 columns: a CJK character takes two."""
    if lang == i18n.DEFAULT:
        return "\n".join(textwrap.wrap(f"{row[1]}: {row[2]}", 60, break_long_words=True))
    text = f"{row[1]}：{hint_in(row[2], lang, said)}"
    lines, line = [], ""
    # a line breaks between CJK characters or at a space, never inside a Latin word or code
    for unit in re.findall(r"[^\s\u2e80-\uffef]+|\s|.", text):
        if line and display_width(line + unit) > 60:
            lines.append(line.rstrip())
            line = unit.lstrip()
        else:
            line += unit
    return "\n".join(lines + [line])


def write_report(
    out: Path,
    graded: list,
    submissions: list | None = None,
    counted: list | None = None,
    chosen: bool = False,
) -> Path:
    """`submissions`: OUT/submissions.csv's rows (lateness, penalty), when there are any; the points
    are theirs after any penalty (one total everywhere). `counted`: the lessons the totals count
    (default every lesson in the class), `chosen` when the course config named them."""
    folder = Path(out) / "report"
    folder.mkdir(parents=True, exist_ok=True)
    n = numbers(graded)
    after = {
        (r["student"], r["lesson"]): float(r["points_after_penalty"])
        for r in submissions or []
        if r.get("lesson") and str(r.get("points_after_penalty", "")) != ""
    }
    n["scores"] = {
        le: [(s, after.get((s, le), p), m, st) for s, p, m, st in v] for le, v in n["scores"].items()
    }
    lessons = sorted(n["scores"])
    counted = sorted(lessons) if counted is None else list(counted)
    students = sorted({s for v in n["scores"].values() for s, *_ in v} | {s for s, _, _ in n["ungradable"]})
    stats = lesson_stats(n)
    # CSVs
    _write_csv(
        folder / "scores.csv",
        ["lesson", "student", "points", "max_points", "status"],
        [[le, s, f"{p:g}", f"{m:g}", st] for le in lessons for s, p, m, st in sorted(n["scores"][le])],
    )
    _write_csv(
        folder / "lessons.csv",
        ["lesson", "submitted", "mean", "median", "max_points", "full_points"],
        [[le, k, _fmt(mean), _fmt(med), f"{mx:g}", full] for le, k, mean, med, mx, full in stats],
    )
    pass_rows = [[le, q, ok, tot, f"{ok / tot:.3f}"] for (le, q), (ok, tot) in sorted(n["passes"].items())]
    _write_csv(
        folder / "pass_rates.csv", ["lesson", "question", "passed", "submitted", "pass_rate"], pass_rows
    )

    def ranked(counter):
        return [[le, q, h, c] for (le, q, h), c in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]

    mistake_rows, knock_rows = ranked(n["mistakes"]), ranked(n["knock_ons"])
    _write_csv(
        folder / "mistakes.csv",
        ["lesson", "question", "hint", "count", "kind"],
        [r + ["mistake"] for r in mistake_rows] + [r + ["knock-on"] for r in knock_rows],
    )
    # page and charts in the class's language (the CSVs above are data: their headers stay as they are)
    lang = class_language(graded)
    _plots(folder, n, lessons, pass_rows, mistake_rows, lang)
    esc = html.escape

    def _t(text: str, **values) -> str:
        return esc(i18n.page(text, lang, **values))

    def hint(h: str) -> str:
        return esc(hint_in(h, lang, n["said"]))

    parts = [
        f"<!doctype html><html lang='{'zh-CN' if lang == 'zh_CN' else esc(lang.replace('_', '-'))}'><head><meta charset='utf-8'>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<meta name='referrer' content='no-referrer'><title>{_t('Class report')}</title>",
        f"<style>body{{font-family:{FONTS};max-width:1100px;margin:2em auto;padding:0 1em}}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right}"
        "th,td.num,td:first-child{white-space:nowrap}"  # a CJK header or "3 / 5" never one character wide
        "td.needs-grading a{color:#9a6700}td.ungradable a{color:#cf222e}img{max-width:100%}"
        f".muted{{color:#57606a}}</style></head><body><h1>{_t('Class report')}</h1>",
    ]
    total = sum(len(v) for v in n["scores"].values())
    waiting = sum(n["pending"].values())
    zh = lang != i18n.DEFAULT
    comma, semi, stop, colon = ("，", "；", "。", "：") if zh else (", ", "; ", ". ", ": ")
    waiting_text = (
        semi
        + esc(
            i18n.plural(
                waiting,
                "{n} written answer waiting to be graded by hand (formgrader)",
                "{n} written answers waiting to be graded by hand (formgrader)",
                lang,
            )
        )
        if waiting
        else ""
    )
    notebooks = i18n.plural(total, "{n} graded notebook", "{n} graded notebooks", lang)
    people = i18n.plural(len(students), "{n} student", "{n} students", lang)
    parts.append(
        f"<p>{esc(notebooks)}{comma}{esc(people)}{comma}"
        f"{esc(i18n.plural(len(lessons), '{n} lesson', '{n} lessons', lang))}"
        + waiting_text
        + f"{stop}{_t('Numbers')}{colon}<a href='lessons.csv'>lessons.csv</a>, <a href='scores.csv'>scores.csv</a>, "
        "<a href='pass_rates.csv'>pass_rates.csv</a>, <a href='mistakes.csv'>mistakes.csv</a>"
        + ("。" if zh else ".")
        + "</p>"
    )
    parts.append(
        f"<h2>{_t('Per lesson')}</h2><table><tr><th>{_t('lesson')}</th><th>{_t('students')}</th><th>{_t('mean')}</th>"
        f"<th>{_t('median')}</th><th>{_t('of')}</th><th>{_t('full points')}</th><th>{_t('written answers to grade')}</th></tr>"
    )
    parts += [
        f"<tr><td>{esc(le)}</td><td class='num'>{k}</td><td class='num'>{_fmt(mean)}</td>"
        f"<td class='num'>{_fmt(med)}</td><td class='num'>{mx:g}</td><td class='num'>{full}</td>"
        f"<td class='num'>{n['pending'][le]}</td></tr>"
        for le, k, mean, med, mx, full in stats
    ]
    parts.append("</table>")
    if (folder / "scores.png").exists():
        parts.append(
            f"<h2>{_t('Score distribution')}</h2><img src='scores.png' alt='{_t('Score distribution')}'>"
        )
    # one row per student, a link to each feedback page
    late = {
        (r["student"], r["lesson"]): r for r in submissions or [] if str(r.get("late", "")).startswith("yes")
    }
    cell = {(s, le): (p, m, st) for le in lessons for s, p, m, st in n["scores"][le]}
    lesson_max_of = {
        le: lesson_max(le, max([m for _, _, m, _ in n["scores"].get(le, [])] or [0])) for le in counted
    }
    points_why = N_("Points per lesson; each links to the student's feedback page.")
    listed = ", ".join(counted)
    if chosen:
        count_why = i18n.page(
            N_("The totals count {lessons} (the course config's lessons)."), lang, lessons=listed
        )
    else:
        count_why = i18n.page(
            N_(
                "The totals count {lessons}: every lesson someone handed in, since the course config names "
                "none; name the lessons that count with {key} in the course config (or {command})."
            ),
            lang,
            lessons=listed,
            key="\x01",
            command="\x02",
        )
    outside = [le for le in lessons if le not in counted]
    if outside:
        count_why += " " + i18n.page(
            N_("Graded and shown to their students, not counted: {lessons}."),
            lang,
            lessons=", ".join(outside),
        )
    parts.append(
        f"<h2>{_t('Students')}</h2><p class='muted'>{_t(points_why)} "
        f"<i>{_t('needs grading')}</i>{colon.strip() if zh else ':'} {_t('written answers not graded yet.')}</p>"
        f"<p class='counted'>{_with_code(count_why, '<code>lessons = [...]</code>', '<code>make grade LESSONS=...</code>')}</p>"
        f"<table><tr><th>{_t('student')}</th>"
        + "".join(
            f"<th>{esc(le)}</th>"
            if le in counted
            else f"<th class='muted'>{esc(le)} ({_t('not counted')})</th>"
            for le in lessons
        )
        + f"<th>{_t('total')}</th></tr>"
    )
    for s in students:
        row = [f"<tr><td>{esc(s)}</td>"]
        tp = 0.0
        # every counted lesson, submitted or not (0 of its points): totals compare across students
        tm = sum(lesson_max_of.values())
        for le in lessons:
            if (s, le) not in cell:
                row.append("<td class='muted'>-</td>")
                continue
            p, m, st = cell[(s, le)]
            tp = tp + (p if le in counted else 0)
            href = esc(f"../feedback/{quote(safe_name(s))}/{quote(le)}.html", quote=True)
            mark = "" if st in ("passed", "failed") else f" <i>{_t(st)}</i>"
            if (s, le) in late:
                mark += f" <i class='late'>{_t('late')}</i>"
            row.append(
                f"<td class='num {esc(st.replace(' ', '-'), quote=True)}'><a href=\"{href}\">{p:g} / {m:g}</a>{mark}</td>"
            )
        row.append(f"<td class='num'>{tp:g} / {tm:g}</td></tr>")
        parts.append("".join(row))
    parts.append("</table>")
    if (folder / "pass_rates.png").exists():
        parts.append(
            f"<h2>{_t('Pass rate per question')}</h2><img src='pass_rates.png' alt='{_t('Pass rate per question')}'>"
        )
    parts.append(f"<h2>{_t('Most common mistakes')}</h2>")
    if (folder / "mistakes.png").exists():
        parts.append(f"<img src='mistakes.png' alt='{_t('Most common mistakes')}'>")
    head = (
        f"<table><tr><th>{_t('lesson')}</th><th>{_t('question')}</th><th>{_t('hint')}</th>"
        f"<th>{_t('submissions')}</th></tr>"
    )
    parts.append(
        head
        + "".join(
            f"<tr><td>{esc(le)}</td><td><code>{esc(q)}</code></td><td>{hint(h)}</td><td class='num'>{c}</td></tr>"
            for le, q, h, c in mistake_rows[:30]
        )
        + "</table>"
    )
    if knock_rows:
        knock_why = N_(
            "A question that fails because a piece it uses fails its own check in the same notebook: fixing that "
            "piece usually fixes these."
        )
        parts.append(
            f"<h2>{_t('Knock-on failures')}</h2><p class='muted'>{_t(knock_why)}</p>"
            + head
            + "".join(
                f"<tr><td>{esc(le)}</td><td><code>{esc(q)}</code></td><td>{hint(h)}</td>"
                f"<td class='num'>{c}</td></tr>"
                for le, q, h, c in knock_rows[:30]
            )
            + "</table>"
        )
    if late:
        parts.append(
            f"<h2>{_t('Late submissions')}</h2><table><tr><th>{_t('student')}</th><th>{_t('lesson')}</th>"
            f"<th>{_t('hours after the deadline')}</th><th>{_t('penalty')}</th><th>{_t('points')}</th>"
            f"<th>{_t('after the penalty')}</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(r['student'])}</td><td>{esc(r['lesson'])}</td>"
            f"<td class='num'>{esc(r['late_by_hours'] or _t('unknown (marked late by the LMS)'))}</td>"
            f"<td class='num'>{esc(str(r['penalty_percent'] or 0))}%</td><td class='num'>{esc(str(r['points']))}</td>"
            f"<td class='num'>{esc(str(r['points_after_penalty']))}</td></tr>"
            for _, r in sorted(late.items())
        ]
        parts.append("</table>")
    stopped = [(g.student, g.lesson, cell, limit) for g in graded for cell, limit in g.stopped]
    if stopped:
        stopped_why = i18n.page(
            N_(
                "Cells stopped by their time limit: the rest of the cell did not run, and the questions after "
                "it may have failed for that reason (the limit: {command}, or {key} in the course config)."
            ),
            lang,
            command="\x01",
            key="\x02",
        )
        stopped_html = _with_code(
            stopped_why, "<code>make grade CELL_TIMEOUT=...</code>", "<code>[limits]</code>"
        )
        parts.append(
            f"<h2>{_t('Stopped cells')}</h2><p class='muted'>{stopped_html}</p><table><tr><th>{_t('student')}</th>"
            f"<th>{_t('lesson')}</th><th>{_t('cell')}</th><th>{_t('limit (s)')}</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(s)}</td><td>{esc(le)}</td><td class='num'>{cell}</td><td class='num'>{limit}</td></tr>"
            for s, le, cell, limit in sorted(stopped)
        ]
        parts.append("</table>")
    parts += _set_aside_section(out, _t)
    parts += _similarity_section(out, folder, graded, _t)
    if n["ungradable"]:
        parts.append(
            f"<h2>{_t('Could not be graded')}</h2><table><tr><th>{_t('student')}</th><th>{_t('lesson')}</th>"
            f"<th>{_t('why')}</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(s)}</td><td>{esc(le)}</td><td>{esc(m)}</td></tr>" for s, le, m in n["ungradable"]
        ]
        parts.append("</table>")
    parts.append("</body></html>")
    (folder / "index.html").write_text("\n".join(parts), encoding="utf-8")
    return folder / "index.html"


def _with_code(text: str, first: str, second: str) -> str:
    """`text` escaped, its fields \\x01 and \\x02 (code: a config key, a command) as the HTML given."""
    return html.escape(text).replace("\x01", first).replace("\x02", second)


def _set_aside_section(out: Path, _t) -> list:
    """Hand grades set aside because the answer they graded changed (folders.set_aside_stale): that
    answer waits in formgrader again."""
    import json

    path = Path(out) / ".state" / "hand" / "history.json"
    try:
        history = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    except (OSError, ValueError):
        history = []
    if not history:
        return []
    esc = html.escape
    why = N_(
        "The answer a hand grade was given to changed (a resubmission): the grade and its comment were "
        "set aside and the answer waits in formgrader again. All of them: hand_grades_set_aside.csv."
    )
    parts = [
        f"<h2>{_t('Hand grades set aside')}</h2><p class='muted'>{_t(why)}</p><table><tr><th>{_t('student')}</th>"
        f"<th>{_t('lesson')}</th><th>{_t('question')}</th><th>{_t('points')}</th><th>{_t('set aside at')}</th></tr>"
    ]
    parts += [
        f"<tr><td>{esc(str(h.get('student', '')))}</td><td>{esc(str(h.get('lesson', '')))}</td>"
        f"<td><code>{esc(str(h.get('question', '')))}</code></td><td class='num'>{esc(str(h.get('manual_score', '')))}</td>"
        f"<td>{esc(str(h.get('set_aside_at', '')))}</td></tr>"
        for h in history
        if isinstance(h, dict)
    ]
    parts.append("</table>")
    return parts


def _similarity_section(out: Path, folder: Path, graded: list, _t) -> list:
    """Pairs of students whose code answers are alike beyond what the exercise forces
    (similarity.py), each with a side-by-side page; for the instructor (this report) only."""
    from autograder.record import similarity

    pages = folder / "similarity"
    if pages.exists():
        for stale in pages.glob("*.html"):
            stale.unlink()
    pairs = similarity.class_pairs(out, graded)
    _write_csv(
        folder / "similarity.csv",
        ["lesson", "student_a", "student_b", "likeness"],
        [[p.lesson, p.a, p.b, f"{p.likeness:.2f}"] for p in pairs],
    )
    esc = html.escape
    why = N_(
        "Pairs whose code answers are alike beyond what the exercise forces (names, order of lines, "
        "the skeleton, the reference and the idioms most students write discounted): a reason to "
        "look, not a verdict. Only in this report, never on a student's page."
    )
    parts = [f"<h2>{_t('Similar answers')}</h2><p class='muted'>{_t(why)}</p>"]
    if not pairs:
        parts.append(f"<p>{_t('No pair above the threshold.')}</p>")
        return parts
    pages.mkdir(exist_ok=True)
    parts.append(
        f"<table><tr><th>{_t('lesson')}</th><th>{_t('student')}</th><th>{_t('student')}</th>"
        f"<th>{_t('likeness')}</th></tr>"
    )
    for p in pairs:
        name = f"{safe_name(p.lesson)}__{safe_name(p.a)}__{safe_name(p.b)}.html"
        (pages / name).write_text(similarity.side_by_side(p), encoding="utf-8")
        href = esc(f"similarity/{quote(name)}", quote=True)
        parts.append(
            f"<tr><td>{esc(p.lesson)}</td><td>{esc(p.a)}</td><td>{esc(p.b)}</td>"
            f"<td class='num'><a href=\"{href}\">{p.likeness:.2f}</a></td></tr>"
        )
    parts.append("</table>")
    return parts
