"""Collect: turn a folder or zip of submissions into (student, lesson, file) items.

Accepted layouts:
- the contract's `<student>/<lesson>.ipynb` (extra files and `.ipynb_checkpoints` ignored);
- an LMS export: flat files whose names match `--pattern` (default: `<student>_<id>_<lesson>.ipynb`,
  Canvas style, with an optional `_LATE`);
- a zip of either (with or without one enclosing folder).

A browser's rename (`01_attention (1).ipynb`, `01_attention-Copy1.ipynb`, `Attention.ipynb`) maps to
its lesson when exactly one lesson fits. Every student folder yields at least one item, so no
student is ever silently dropped.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LMS_PATTERN = r"^(?P<student>.+?)_(?:LATE_|late_)?\d+(?:_\d+)?_(?P<lesson>.+)\.ipynb$"
MAX_ZIP_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Submission:
    student: str
    lesson: str  # "" when no lesson could be recognised
    path: Path | None  # None when there is nothing to grade
    note: str = ""  # why a file was chosen or why there is nothing (shown to the student)

    @property
    def key(self) -> str:
        return f"{self.student}/{self.lesson}"


def lesson_of(filename: str, lessons: list) -> str:
    """The lesson a file name stands for, or "" when none or several fit."""
    stem = filename[:-6] if filename.lower().endswith(".ipynb") else filename
    if stem in lessons:
        return stem
    norm = re.sub(r"(\s*\(\d+\)|[-_ ]?copy\d*|[-_ ]?\d{4}-\d\d-\d\d.*)+$", "", stem.strip(), flags=re.I)
    norm = re.sub(r"[\s\-]+", "_", norm).lower()
    exact = [lesson for lesson in lessons if lesson.lower() == norm]
    if exact:
        return exact[0]
    topic = [
        lesson
        for lesson in lessons
        if lesson.split("_", 1)[-1].lower() == norm
        or norm.startswith(lesson.lower())
        or (len(norm) >= 4 and lesson.split("_", 1)[-1].lower().startswith(norm))
    ]
    return topic[0] if len(topic) == 1 else ""


def unpack(source: Path, into: Path, pattern: str = DEFAULT_LMS_PATTERN) -> Path:
    """Extract a zip safely (no absolute paths, no `..`, bounded size) and return the class root."""
    total = 0
    with zipfile.ZipFile(source) as zf:
        for info in zf.infolist():
            name = info.filename
            if name.startswith("/") or ".." in Path(name).parts or name.startswith("__MACOSX"):
                continue
            total += info.file_size
            if total > MAX_ZIP_BYTES:
                raise ValueError(f"{source} unpacks to more than {MAX_ZIP_BYTES >> 30} GiB")
            zf.extract(info, into)
    root = into
    children = [c for c in root.iterdir() if not c.name.startswith(".")]
    rx = re.compile(pattern)

    def is_class(folder: Path) -> bool:  # student folders, or LMS-named files: not one student
        return any(c.is_dir() for c in folder.iterdir()) or any(rx.match(c.name) for c in folder.iterdir())

    while len(children) == 1 and children[0].is_dir() and is_class(children[0]):
        root = children[0]
        children = [c for c in root.iterdir() if not c.name.startswith(".")]
    return root


def collect(
    source: Path, lessons: list, pattern: str = DEFAULT_LMS_PATTERN, workdir: Path | None = None
) -> list:
    """All submissions under `source` (a folder or a .zip), sorted by student then lesson."""
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"no such folder or zip: {source}")
    if source.is_file():
        if not zipfile.is_zipfile(source):
            raise ValueError(f"{source} is neither a folder nor a zip file")
        workdir = Path(workdir or tempfile.mkdtemp(prefix="tbb-unzip-"))
        source = unpack(source, workdir, pattern)
    items: list = []
    rx = re.compile(pattern)
    flat: dict = {}
    for entry in sorted(source.iterdir()):
        if entry.name.startswith(".") or entry.name == "__MACOSX":
            continue
        if entry.is_dir():
            items += _from_student_folder(entry, lessons)
        elif entry.suffix.lower() == ".ipynb":
            m = rx.match(entry.name)
            if m:
                flat.setdefault(m.group("student"), []).append((m.group("lesson"), entry))
    for student, files in sorted(flat.items()):
        items += _choose(student, [(lesson_of(name + ".ipynb", lessons), path) for name, path in files])
    return sorted(items, key=lambda s: (s.student, s.lesson))


def _from_student_folder(folder: Path, lessons: list) -> list:
    files = [
        p
        for p in sorted(folder.rglob("*.ipynb"))
        if ".ipynb_checkpoints" not in p.parts
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]
    found = _choose(folder.name, [(lesson_of(p.name, lessons), p) for p in files])
    if not found:
        names = ", ".join(p.name for p in files) or "no .ipynb file"
        return [
            Submission(
                folder.name,
                "",
                None,
                f"no notebook of a known lesson found ({names}); name it like 01_attention.ipynb",
            )
        ]
    return found


def _choose(student: str, candidates: list) -> list:
    by_lesson: dict = {}
    for lesson, path in candidates:
        if lesson:
            by_lesson.setdefault(lesson, []).append(path)
    out = []
    for lesson, paths in sorted(by_lesson.items()):
        exact = [p for p in paths if p.stem == lesson]
        chosen = exact[0] if exact else sorted(paths, key=lambda p: (len(p.name), p.name))[0]
        note = ""
        if chosen.stem != lesson:
            note = f"graded {chosen.name} as {lesson}"
        if len(paths) > 1:
            others = ", ".join(p.name for p in paths if p != chosen)
            note = (note + "; " if note else "") + f"also found {others}: graded {chosen.name}"
        out.append(Submission(student, lesson, chosen, note))
    return out
