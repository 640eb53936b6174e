"""Reading a submissions tree (a folder or a zip) without trusting it.

Safety (the grader runs as root): collection opens only regular files inside the submissions tree.
Every directory is opened with O_NOFOLLOW and every file with O_NOFOLLOW | O_NONBLOCK relative to its
directory's descriptor, checked with fstat on the opened descriptor and read through it into a private
staging folder; grading reads only those copies. Symlinks, devices, FIFOs, sockets, hard-linked files
whose other links are outside the tree, zip entries that are links, absolute or climb out with `..`,
and files over the size cap are refused with a row (status `ungradable`) and a message, never followed.
A zip's declared total size is checked before anything is extracted and the bytes are counted while
extracting (headers can lie).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from byhand.i18n import N_, msg

MAX_FILE_MB = 64  # one submitted file (a notebook with many plots is a few MB)
MAX_ZIP_MB = 2048  # a zip's total uncompressed size
MAX_ENTRIES = 200_000  # files in one zip or folder tree
MAX_DEPTH = 12


class CollectError(ValueError):
    """The submissions as a whole cannot be read (not a zip, a zip over the cap): a clear CLI error."""


@dataclass
class Entry:
    parts: tuple  # path inside the submissions, as components
    staged: Path | None = None  # the private copy (notebooks and receipts only)
    refused: str = ""  # why it was not read (a byhand.i18n.Msg: shown in the notebook's language)
    mtime: float | None = None
    time_source: str = ""
    inode: tuple | None = None
    nlink: int = 1
    size: int = 0

    @property
    def name(self) -> str:
        return self.parts[-1]


def _wanted(name: str) -> bool:
    """Files whose bytes collection reads: notebooks, and Blackboard receipts (small)."""
    low = name.lower()
    return low.endswith(".ipynb") or (low.endswith(".txt") and "_attempt_" in name)


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX" or name == ".ipynb_checkpoints"


class _Stager:
    def __init__(self, stage: Path, max_file: int):
        self.stage, self.max_file, self.n = stage, max_file, 0
        stage.mkdir(parents=True, exist_ok=True)
        os.chmod(stage, 0o700)

    def new_path(self, name: str) -> Path:
        self.n += 1
        folder = self.stage / f"{self.n:06d}"
        folder.mkdir(mode=0o700)
        safe = "".join(ch if ch.isalnum() or ch in "-_. ()" else "_" for ch in name)[-200:] or "file"
        return folder / safe

    def copy_from(self, read, limit: int, name: str) -> tuple:
        """(staged path, bytes) or (None, bytes read when it passed `limit`); `read(n)` returns bytes."""
        path = self.new_path(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        total = 0
        try:
            while True:
                chunk = read(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    os.close(fd)
                    fd = -1
                    path.unlink()
                    return None, total
                os.write(fd, chunk)
        finally:
            if fd >= 0:
                os.close(fd)
        return path, total


def _refuse_type(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return N_("is a symbolic link, which the grader never follows; submit the notebook file itself")
    if stat.S_ISFIFO(mode):
        return N_("is a named pipe (FIFO), not a file")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return N_("is a device, not a file")
    if stat.S_ISSOCK(mode):
        return N_("is a socket, not a file")
    return N_("is not a regular file")


def _walk_folder(root: Path, stager: _Stager) -> list:
    """Every entry under `root`, without following any link; notebooks copied through their fd."""
    entries: list = []
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # the instructor's own path may be a link

    def walk(dir_fd: int, prefix: tuple, depth: int):
        with os.scandir(dir_fd) as it:
            names = sorted(e.name for e in it)
        for name in names:
            if _skipped(name):
                continue
            if len(entries) >= MAX_ENTRIES:
                raise CollectError(f"more than {MAX_ENTRIES} files in the submissions folder")
            parts = prefix + (name,)
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError as exc:
                entries.append(Entry(parts, refused=msg("could not be read ({error})", error=exc.strerror)))
                continue
            if stat.S_ISDIR(st.st_mode):
                if depth >= MAX_DEPTH:
                    entries.append(
                        Entry(parts, refused=msg("is nested more than {n} folders deep", n=MAX_DEPTH))
                    )
                    continue
                try:
                    sub_fd = os.open(name, flags_dir, dir_fd=dir_fd)
                except OSError as exc:  # replaced by a link since the stat: refused, not followed
                    entries.append(
                        Entry(parts, refused=msg("could not be opened safely ({error})", error=exc.strerror))
                    )
                    continue
                try:
                    walk(sub_fd, parts, depth + 1)
                finally:
                    os.close(sub_fd)
                continue
            if not stat.S_ISREG(st.st_mode):
                entries.append(Entry(parts, refused=_refuse_type(st.st_mode)))
                continue
            if not _wanted(name):
                entries.append(Entry(parts, size=st.st_size))  # named in messages, never read
                continue
            entries.append(_read_file(dir_fd, name, parts, stager))

    try:
        walk(root_fd, (), 0)
    finally:
        os.close(root_fd)
    # hard links: a file whose link count is higher than the links found inside the tree is also
    # reachable from elsewhere (possibly a reference solution): refused, whatever its content
    seen: dict = {}
    for e in entries:
        if e.inode is not None:
            seen[e.inode] = seen.get(e.inode, 0) + 1
    for e in entries:
        if e.inode is not None and e.nlink > seen[e.inode]:
            if e.staged is not None:
                e.staged.unlink(missing_ok=True)
            e.staged = None
            e.refused = N_(
                "is a hard link to a file outside the submissions folder, which the grader does not "
                "read; submit a copy of the notebook"
            )
    return entries


def _read_file(dir_fd: int, name: str, parts: tuple, stager: _Stager) -> Entry:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError as exc:  # ELOOP: it became a link since the stat
        return Entry(parts, refused=msg("could not be opened safely ({error})", error=exc.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Entry(parts, refused=_refuse_type(st.st_mode))
        limit = stager.max_file
        if st.st_size > limit:
            return Entry(parts, refused=_too_big(st.st_size, limit))
        os.set_blocking(fd, True)
        path, n = stager.copy_from(lambda k: os.read(fd, k), limit, name)
        if path is None:
            return Entry(parts, refused=_too_big(n, limit))
        return Entry(
            parts,
            staged=path,
            mtime=st.st_mtime,
            time_source="file mtime",
            inode=(st.st_dev, st.st_ino),
            nlink=st.st_nlink,
            size=n,
        )
    finally:
        os.close(fd)


def _too_big(size: int, limit: int) -> str:
    return msg(
        "is larger than the {limit} MB limit for one file ({size} MB or more)",
        limit=limit >> 20,
        size=f"{size / 2**20:.1f}",
    )


def _unzip(source: Path, stager: _Stager, max_total: int) -> list:
    """Entries of a zip: regular files only, names inside the folder, sizes checked and counted."""
    entries: list = []
    try:
        zf = zipfile.ZipFile(source)
    except zipfile.BadZipFile as exc:
        raise CollectError(f"{source} is not a readable zip file ({exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ENTRIES:
            raise CollectError(f"{source} holds more than {MAX_ENTRIES} entries")
        declared = sum(i.file_size for i in infos)
        if declared > max_total:
            raise CollectError(
                f"{source} unpacks to {declared / 2**20:.0f} MB, more than the {max_total >> 20} MB limit "
                "(--max-zip-mb)"
            )
        total = 0
        for info in infos:
            raw = info.filename.replace("\\", "/")
            parts = tuple(p for p in raw.split("/") if p not in ("", ".", ".."))
            if not parts or any(_skipped(p) for p in parts):
                continue
            mode = (info.external_attr >> 16) & 0xFFFF
            climbs = raw.startswith("/") or re.match(r"^[A-Za-z]:", raw) or ".." in raw.split("/")
            if info.is_dir() and not climbs and not stat.S_ISLNK(mode) and not stat.S_ISREG(mode):
                continue
            if climbs:
                entries.append(Entry(parts, refused=N_("is a zip entry whose path leads out of the folder")))
                continue
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits (writestr, DOS): a file
                entries.append(Entry(parts, refused=_refuse_type(mode)))
                continue
            if not _wanted(parts[-1]):
                entries.append(Entry(parts, size=info.file_size))
                continue
            when = dt.datetime(*info.date_time).timestamp()
            limit = min(stager.max_file, max_total - total)
            if info.file_size > stager.max_file:
                entries.append(Entry(parts, refused=_too_big(info.file_size, stager.max_file)))
                continue
            try:
                with zf.open(info) as f:
                    path, n = stager.copy_from(f.read, limit, parts[-1])
            except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, ValueError) as exc:
                entries.append(
                    Entry(
                        parts,
                        refused=msg("could not be unzipped ({error})", error=f"{type(exc).__name__}: {exc}"),
                    )
                )
                continue
            if path is None:
                if limit < stager.max_file:
                    raise CollectError(
                        f"{source} unpacks to more than the {max_total >> 20} MB limit (--max-zip-mb); "
                        "its headers understate the sizes"
                    )
                entries.append(Entry(parts, refused=_too_big(n, stager.max_file)))
                continue
            total += n
            entries.append(Entry(parts, staged=path, mtime=when, time_source="zip entry time", size=n))
    return entries


def read_tree(
    source: Path, stage: Path, max_file_mb: int = MAX_FILE_MB, max_zip_mb: int = MAX_ZIP_MB
) -> tuple[list, bool]:
    """The entries of `source` (a folder or a .zip), the notebooks and receipts among them copied
    into `stage`, and whether it was a zip."""
    stager = _Stager(stage, max_file_mb << 20)
    if source.is_dir():
        return _walk_folder(source, stager), False
    if source.is_file() and zipfile.is_zipfile(source):
        return _unzip(source, stager, max_zip_mb << 20), True
    raise CollectError(f"{source} is neither a folder nor a zip file")
