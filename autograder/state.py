"""OUT/.state: what a class run keeps between runs, so the next one resumes and still writes the
whole class. One JSON file per student x lesson (the grade, its fingerprint, the submission's
metadata), the course config last given, and the manual grades last seen (`manual.json`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from autograder.collect import lateness
from autograder.outcomes import Graded, Row, safe_name


def saved_path(state: Path, sub) -> Path:
    return state / f"{safe_name(sub.student)}__{safe_name(sub.lesson)}.json"


def saved_parts(state: Path, sub) -> dict | None:
    """The fingerprint parts the saved grade of `sub` was made under ({} when it kept none; None
    when there is no saved grade)."""
    saved = saved_path(state, sub)
    if not saved.exists():
        return None
    try:
        return json.loads(saved.read_text()).get("parts", {})
    except ValueError:
        return {}


def reuse(state: Path, sub, fp: str):
    """The saved grade of `sub` when its fingerprint is `fp` (nothing that decides it changed), else None."""
    saved = saved_path(state, sub)
    if not saved.exists():
        return None
    data = json.loads(saved.read_text())
    if data.get("fingerprint") != fp:
        return None
    if data.get("submission") != sub.meta():  # e.g. a new mtime: same grades
        saved.write_text(json.dumps({**data, "submission": sub.meta()}))
    return from_json(data)


def save(saved: Path, fp: str, g: Graded, sub, parts: dict | None = None) -> None:
    saved.write_text(
        json.dumps({"fingerprint": fp, **to_json(g), "submission": sub.meta(), "parts": parts or {}})
    )


def course_config(state: Path, config, save: bool = True) -> lateness.Config | None:
    """The course config given now (saved in OUT/.state for later partial regrades), else the saved one."""
    saved = state / "course.toml"
    if config:
        cfg = lateness.load(Path(config))
        if save:
            save_config(state, config, cfg)
        return cfg
    if saved.exists():
        base = state / "course.base"
        return lateness.parse(
            saved.read_text(encoding="utf-8"), Path(base.read_text()) if base.exists() else None, saved
        )
    return None


def save_config(state: Path, config, cfg: lateness.Config) -> None:
    """Keep the config given now for later partial regrades (once it has been checked)."""
    (state / "course.toml").write_text(cfg.source, encoding="utf-8")
    (state / "course.base").write_text(str(Path(config).resolve().parent), encoding="utf-8")


def known_students(state: Path) -> set:
    """Every label, LMS id and name of a student graded into this OUT before."""
    out: set = set()
    for path in state.glob("*.json"):
        try:
            meta = json.loads(path.read_text()).get("submission", {})
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(meta, dict):
            out |= {str(meta.get(k)) for k in ("student", "lms_id", "name") if meta.get(k)}
    return out


def whole_class(state: Path, subs: list, results: dict) -> list:
    """[(Graded, submission meta)] for every student x lesson graded into this OUT so far, sorted.

    This run's results win; a student in this run who now has lessons loses an old "no notebook
    found" row; everyone else keeps what their saved state says."""
    entries: dict = {}
    for path in sorted(state.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "rows" not in data:  # other state (manual.json), not a result
            continue
        entries[(data["student"], data["lesson"])] = (
            from_json(data),
            data.get("submission", {}),
            path,
        )
    this_run = {(s.student, s.lesson) for s in subs}
    for student in {s.student for s in subs}:
        old = entries.get((student, ""))
        if old and (student, "") not in this_run:
            old[2].unlink(missing_ok=True)
            del entries[(student, "")]
    for s in subs:
        entries[(s.student, s.lesson)] = (results[s.key], s.meta(), None)
    return [
        (g, {**meta, "student": g.student, "lesson": g.lesson})
        for g, meta, _ in (entries[k] for k in sorted(entries))
    ]


def to_json(g: Graded) -> dict:
    return {
        "student": g.student,
        "lesson": g.lesson,
        "rows": [asdict(r) for r in g.rows],
        "seconds": g.seconds,
        "hints": g.hints,
        **({"stopped": g.stopped} if g.stopped else {}),
        # only when a notebook was read: a refused file's row counts in no language (the report's)
        **({"language": g.known_language} if g.known_language else {}),
    }


def from_json(d: dict) -> Graded:
    return Graded(
        d["student"],
        d["lesson"],
        [Row.from_dict(r) for r in d["rows"]],
        "",
        d.get("seconds", 0),
        [tuple(h) for h in d.get("hints", [])],
        lang=d.get("language", ""),
        stopped=[list(x) for x in d.get("stopped", [])],
    )
