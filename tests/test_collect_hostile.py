"""Hostile submission trees: collection opens only regular files inside the submissions folder.

Symlinks (absolute, through /proc/self/cwd, relative climbs, linked folders), hard links to a file
outside the tree, FIFOs, devices, sockets, oversized files, and zip entries that are links, absolute
or climb out, or whose headers lie, are refused with an `ungradable` row and a message, never
followed. The end-to-end tests grade such folders with `python -m autograder grade` (run from the
repository root, so that /proc/self/cwd/solutions/... *is* the reference solution) and check that no
linked reference solution scores a point.
"""

import csv
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import course
from autograder.collect.submissions import collect
from autograder.collect.tree import CollectError
from examples.build import CLASS

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "01_attention.ipynb"
BLANK = CLASS / "bob" / "01_attention.ipynb"
LESSONS = course.lessons()


def _rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _grade(source: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(source),
        "--out",
        str(out),
        "--workers",
        "1",
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _student(folder: Path, name: str) -> Path:
    d = folder / name
    d.mkdir(parents=True)
    return d


def _hostile_folder(tmp_path: Path) -> Path:
    """A class folder holding one honest (blank) student and one of each hostile entry."""
    root = tmp_path / "class"
    shutil.copyfile(BLANK, _student(root, "honest") / "01_attention.ipynb")
    os.symlink(SOLUTION, _student(root, "abs_link") / "01_attention.ipynb")
    os.symlink(
        "/proc/self/cwd/solutions/01_attention.ipynb", _student(root, "proc_link") / "01_attention.ipynb"
    )
    rel = _student(root, "rel_link")
    os.symlink(os.path.relpath(SOLUTION, rel), rel / "01_attention.ipynb")
    os.symlink(SOLUTION.parent, root / "dir_link")  # a "student folder" that is the solutions folder
    inner = _student(root, "inner_link")
    os.symlink(SOLUTION.parent, inner / "work")  # a subfolder that is the solutions folder
    hard = _student(root, "hard_link")
    try:
        os.link(SOLUTION, hard / "01_attention.ipynb")
    except OSError:  # another file system: a file outside the tree stands for the solution
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        shutil.copyfile(SOLUTION, outside / "01_attention.ipynb")
        os.link(outside / "01_attention.ipynb", hard / "01_attention.ipynb")
    os.mkfifo(_student(root, "fifo") / "01_attention.ipynb")
    big = _student(root, "big")
    (big / "01_attention.ipynb").write_bytes(b" " * (2 << 20) + BLANK.read_bytes())
    os.symlink(SOLUTION, root / "top_link.ipynb")
    try:
        os.mknod(_student(root, "device") / "01_attention.ipynb", stat.S_IFCHR | 0o644, os.makedev(1, 3))
    except (PermissionError, OSError):
        pass
    return root


EXPECTED = {  # student -> words its message must hold
    "abs_link": "symbolic link",
    "proc_link": "symbolic link",
    "rel_link": "symbolic link",
    "dir_link": "symbolic link",
    "inner_link": "symbolic link",
    "hard_link": "hard link",
    "fifo": "named pipe",
    "big": "larger than the 1 MB limit",
    "top_link.ipynb": "symbolic link",
    "device": "device",
}


def test_hostile_folder_collects_rows_and_reads_nothing_outside(tmp_path):
    """In process: does every hostile entry become an ungradable item with its reason, and is the
    only file copied for grading the honest student's?"""
    root = _hostile_folder(tmp_path)
    subs = collect(root, LESSONS, workdir=tmp_path / "work", max_file_mb=1)
    by = {s.student: s for s in subs}
    expected = {k: v for k, v in EXPECTED.items() if (root / k).exists() or (root / k).is_symlink()}
    assert set(by) == set(expected) | {"honest"}, sorted(by)
    for student, words in expected.items():
        assert by[student].path is None, student
        assert words in by[student].note, (student, by[student].note)
    assert by["honest"].path.read_bytes() == BLANK.read_bytes()
    staged = [p for p in (tmp_path / "work").rglob("*") if p.is_file()]
    assert [p.read_bytes() for p in staged] == [BLANK.read_bytes()]


@pytest.mark.e2e
def test_hostile_folder_graded_end_to_end_scores_nothing(tmp_path):
    """`python -m autograder grade` on the hostile folder: a row per hostile student, status
    ungradable with its message, the honest blank student graded, and not one point anywhere."""
    root = _hostile_folder(tmp_path)
    out = tmp_path / "out"
    proc = _grade(root, out, "--max-submission-mb", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = {r["student"]: r for r in _rows(out / "summary.csv")}
    grades = _rows(out / "grades.csv")
    expected = {k: v for k, v in EXPECTED.items() if (root / k).exists() or (root / k).is_symlink()}
    for student, words in expected.items():
        assert summary[student]["status"] == "ungradable", (student, summary[student])
        (row,) = [r for r in grades if r["student"] == student]
        assert row["status"] == "ungradable" and words in row["message"], row
    lesson_max = sum(course.questions("01_attention").values()) + sum(
        course.manual_questions("01_attention").values()
    )
    assert summary["honest"]["status"] == "failed" and float(summary["honest"]["max_points"]) == lesson_max
    assert sum(float(r["points"]) for r in grades) == 0, [r for r in grades if float(r["points"])]
    questions = set(course.questions("01_attention")) | set(course.manual_questions("01_attention"))
    assert {r["question"] for r in grades if r["student"] == "honest"} == questions


def _zip_with(path: Path, entries: list) -> Path:
    """entries: (name, bytes, mode or None)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 3, 1, 12, 0, 0))
            if mode is not None:
                info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


@pytest.mark.e2e
def test_hostile_zip_graded_end_to_end(tmp_path):
    """A zip whose entries are a symlink to the solution, an absolute path and `../` climbs: refused
    with rows, nothing written outside the grader's folder, no point scored."""
    blank = BLANK.read_bytes()
    archive = _zip_with(
        tmp_path / "export.zip",
        [
            ("class/honest/01_attention.ipynb", blank, stat.S_IFREG | 0o644),
            ("class/mallory/01_attention.ipynb", str(SOLUTION).encode(), stat.S_IFLNK | 0o777),
            ("class/trudy/../../escape/01_attention.ipynb", SOLUTION.read_bytes(), None),
            ("/abs/01_attention.ipynb", SOLUTION.read_bytes(), None),
            ("class/eve/dev", b"", stat.S_IFCHR | 0o644),
        ],
    )
    out = tmp_path / "out"
    proc = _grade(archive, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = {r["student"]: r for r in _rows(out / "summary.csv")}
    messages = {r["student"]: r["message"] for r in _rows(out / "grades.csv") if r["status"] == "ungradable"}
    assert "symbolic link" in messages["mallory"], messages
    assert "leads out of the folder" in messages["trudy"], messages
    assert "leads out of the folder" in messages["abs"], messages
    assert "device" in messages["eve"], messages
    assert summary["honest"]["status"] == "failed"
    assert not (tmp_path / "escape").exists() and not Path("/abs").exists()
    assert sum(float(r["points"]) for r in _rows(out / "grades.csv")) == 0


@pytest.mark.slow
def test_zip_bomb_is_refused_before_extraction(tmp_path):
    """A zip whose declared size passes the cap: a clear error (exit 2), nothing graded."""
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("class/a/01_attention.ipynb", b"\0" * (3 << 20))
    with pytest.raises(CollectError, match="more than the 2 MB limit"):
        collect(archive, LESSONS, workdir=tmp_path / "w", max_zip_mb=2)
    proc = _grade(archive, tmp_path / "out", "--max-zip-mb", "2")
    assert proc.returncode == 2 and "error:" in proc.stderr and "--max-zip-mb" in proc.stderr, proc.stderr


def test_zip_whose_header_understates_the_size(tmp_path):
    """An entry whose central directory claims 1,000 bytes but holds 2 MB: no more than the declared
    bytes are ever extracted, and the entry is refused (its checksum fails)."""
    archive = tmp_path / "liar.zip"
    payload = b"{" + b" " * (2 << 20) + b"}"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("class/liar/01_attention.ipynb", payload)
        zf.writestr("class/honest/01_attention.ipynb", BLANK.read_bytes())
    data = bytearray(archive.read_bytes())
    cd = data.rfind(b"PK\x01\x02", 0, data.rfind(b"PK\x01\x02"))  # the first central directory record
    assert struct.unpack_from("<I", data, cd + 24)[0] == len(payload)
    struct.pack_into("<I", data, cd + 24, 1000)  # uncompressed size, as the reader trusts it
    archive.write_bytes(bytes(data))
    subs = {s.student: s for s in collect(archive, LESSONS, workdir=tmp_path / "w")}
    assert subs["liar"].path is None and "could not be unzipped" in subs["liar"].note, subs["liar"].note
    assert subs["honest"].path.read_bytes() == BLANK.read_bytes()
    assert max(p.stat().st_size for p in (tmp_path / "w").rglob("*") if p.is_file()) <= len(
        BLANK.read_bytes()
    )


def test_sockets_and_links_inside_the_tree(tmp_path):
    """A socket is refused; a hard link whose every link is inside the tree (two students sharing
    one file) is read, since nothing outside is reachable through it."""
    root = tmp_path / "c"
    a, b, c = (_student(root, n) for n in ("ann", "ben", "sock"))
    shutil.copyfile(BLANK, a / "01_attention.ipynb")
    os.link(a / "01_attention.ipynb", b / "01_attention.ipynb")
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(c / "01_attention.ipynb"))
        subs = {x.student: x for x in collect(root, LESSONS, workdir=tmp_path / "w")}
    finally:
        s.close()
    assert "socket" in subs["sock"].note and subs["sock"].path is None
    assert subs["ann"].path.read_bytes() == subs["ben"].path.read_bytes() == BLANK.read_bytes()
