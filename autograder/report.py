"""The instructor's class report: `OUT/report/index.html` with plots, and the same numbers as CSV.

- score distribution per lesson (histogram of each student's points)
- pass rate per question
- the most common mistakes the class made, from the hints the checks fired
"""

from __future__ import annotations

import csv
import html
from collections import Counter, defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _write_csv(path: Path, header: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def numbers(graded: list) -> dict:
    scores = defaultdict(list)  # lesson -> [(student, points, max)]
    passes = defaultdict(lambda: [0, 0])  # (lesson, question) -> [passed, submitted]
    mistakes = Counter()  # (lesson, question, hint) -> count
    ungradable = []
    for g in graded:
        if not g.lesson:
            ungradable.append((g.student, "", g.rows[0].message if g.rows else ""))
            continue
        if any(r.status == "ungradable" for r in g.rows):
            ungradable.append((g.student, g.lesson, g.rows[0].message))
        scores[g.lesson].append((g.student, sum(r.points for r in g.rows), sum(r.max_points for r in g.rows)))
        for r in g.rows:
            if r.question:
                passes[(g.lesson, r.question)][1] += 1
                passes[(g.lesson, r.question)][0] += r.status == "passed"
        for question, hint in g.hints:
            if hint != "not done":  # unanswered is not a mistake: it shows in the pass rates
                mistakes[(g.lesson, question, hint)] += 1
    return {"scores": dict(scores), "passes": dict(passes), "mistakes": mistakes, "ungradable": ungradable}


def write_report(out: Path, graded: list) -> Path:
    folder = Path(out) / "report"
    folder.mkdir(parents=True, exist_ok=True)
    n = numbers(graded)
    lessons = sorted(n["scores"])
    # CSVs
    _write_csv(
        folder / "scores.csv",
        ["lesson", "student", "points", "max_points"],
        [[les, s, f"{p:g}", f"{m:g}"] for les in lessons for s, p, m in sorted(n["scores"][les])],
    )
    pass_rows = [[les, q, ok, tot, f"{ok / tot:.3f}"] for (les, q), (ok, tot) in sorted(n["passes"].items())]
    _write_csv(
        folder / "pass_rates.csv", ["lesson", "question", "passed", "submitted", "pass_rate"], pass_rows
    )
    mistake_rows = [
        [les, q, h, c] for (les, q, h), c in sorted(n["mistakes"].items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    _write_csv(folder / "mistakes.csv", ["lesson", "question", "hint", "count"], mistake_rows)
    # plots
    if lessons:
        cols = min(3, len(lessons))
        rows_ = (len(lessons) + cols - 1) // cols
        fig, axes = plt.subplots(rows_, cols, figsize=(3.2 * cols, 2.4 * rows_), squeeze=False)
        for ax in axes.flat[len(lessons) :]:
            ax.axis("off")
        for ax, lesson in zip(axes.flat, lessons):
            pts = [p for _, p, _ in n["scores"][lesson]]
            mx = max(m for _, _, m in n["scores"][lesson]) or 1
            ax.hist(pts, bins=range(0, int(mx) + 2), color="#4c72b0", edgecolor="white", align="left")
            ax.set_title(lesson, fontsize=9)
            ax.set_xlabel(f"points (of {mx:g})", fontsize=8)
            ax.set_xlim(-0.5, mx + 0.5)
        for row in axes:
            row[0].set_ylabel("students")
        fig.suptitle("Score distribution per lesson", fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "scores.png", dpi=90)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(7, 0.28 * len(pass_rows) + 1.0))
        labels = [f"{les[:2]} {q}" for les, q, *_ in pass_rows]
        rates = [float(r[4]) for r in pass_rows]
        ax.barh(range(len(rates)), rates, color=["#55a868" if r >= 0.5 else "#c44e52" for r in rates])
        ax.set_yticks(range(len(rates)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("pass rate")
        ax.set_title("Pass rate per question", fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "pass_rates.png", dpi=90)
        plt.close(fig)
    top = mistake_rows[:12]
    if top:
        fig, ax = plt.subplots(figsize=(9, 0.35 * len(top) + 1.0))
        ax.barh(range(len(top)), [r[3] for r in top], color="#dd8452")
        ax.set_yticks(range(len(top)), [f"{r[1]}: {r[2]}"[:60] for r in top], fontsize=7)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.invert_yaxis()
        ax.set_xlabel("submissions")
        ax.set_title("Most common mistakes (hints fired)", fontsize=10)
        fig.tight_layout()
        fig.subplots_adjust(left=0.5)
        fig.savefig(folder / "mistakes.png", dpi=90)
        plt.close(fig)
    # page
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Class report</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
        "img{max-width:100%}</style></head><body><h1>Class report</h1>",
    ]
    total = sum(len(v) for v in n["scores"].values())
    parts.append(
        f"<p>{total} graded notebooks, {len({s for v in n['scores'].values() for s, _, _ in v})} "
        f"students, {len(lessons)} lessons. Numbers: <a href='scores.csv'>scores.csv</a>, "
        "<a href='pass_rates.csv'>pass_rates.csv</a>, <a href='mistakes.csv'>mistakes.csv</a>.</p>"
    )
    for png, title in [
        ("scores.png", "Score distribution"),
        ("pass_rates.png", "Pass rate per question"),
        ("mistakes.png", "Most common mistakes"),
    ]:
        if (folder / png).exists():
            parts.append(f"<h2>{title}</h2><img src='{png}' alt='{title}'>")
    parts.append(
        "<h2>Hints fired, by count</h2><table><tr><th>lesson</th><th>question</th><th>hint</th>"
        "<th>submissions</th></tr>"
    )
    parts += [
        f"<tr><td>{esc(les)}</td><td><code>{esc(q)}</code></td><td>{esc(h)}</td><td>{c}</td></tr>"
        for les, q, h, c in mistake_rows[:30]
    ]
    parts.append("</table>")
    if n["ungradable"]:
        parts.append(
            "<h2>Could not be graded</h2><table><tr><th>student</th><th>lesson</th><th>why</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(s)}</td><td>{esc(les)}</td><td>{esc(m)}</td></tr>" for s, les, m in n["ungradable"]
        ]
        parts.append("</table>")
    parts.append("</body></html>")
    (folder / "index.html").write_text("\n".join(parts), encoding="utf-8")
    return folder / "index.html"
