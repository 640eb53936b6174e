"""Where a grading run keeps its folder: room for its unix sockets whatever TMPDIR is."""

import socket
import tempfile
from pathlib import Path

import pytest

from autograder.run import workdirs


@pytest.fixture
def tmpdir_set_to(monkeypatch):
    def _set(path: Path) -> None:
        monkeypatch.setenv("TMPDIR", str(path))
        monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches what it found

    return _set


def test_a_short_tmpdir_holds_the_run(tmpdir_set_to):
    """Does the run's folder go in TMPDIR when TMPDIR is short enough?"""
    short = Path(tempfile.mkdtemp(prefix="tbb-s-", dir="/tmp"))
    try:
        tmpdir_set_to(short)
        with workdirs.grading_dir() as run:
            assert run.parent == short, f"got the run in {run.parent}, expected {short}"
    finally:
        short.rmdir()


def test_a_deep_tmpdir_still_leaves_room_for_the_sockets(tmp_path, tmpdir_set_to):
    """With a TMPDIR too deep for unix sockets (a CI's, pytest-xdist's): does the run go in /tmp,
    and can the deepest socket a run binds (the forkserver's listener) be bound there?"""
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    tmpdir_set_to(deep)
    with workdirs.grading_dir() as run:
        assert run.parent == Path("/tmp"), f"got the run in {run.parent}, expected /tmp"
        listener = run / "pymp-abcdefgh" / "listener-abcdefgh"
        listener.parent.mkdir()
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(listener))  # OSError: AF_UNIX path too long, were the run under `deep`
        assert len(str(listener)) <= workdirs.SOCKET_PATH_MAX
    with pytest.raises(OSError, match="too long"), socket.socket(socket.AF_UNIX) as s:
        s.bind(str(deep / "tbb-grade-abcdefgh" / "pymp-abcdefgh" / "listener-abcdefgh"))
