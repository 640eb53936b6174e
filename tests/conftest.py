import itertools
import json
import os
import re
import sys
from pathlib import Path

import pytest

import autograder  # noqa: F401 - imported first: it skips jsonschema's IRI grammars (3-6 s a process)

try:  # pytest's own parser of `-m` (private; pinned with pytest): without it every file is collected
    from _pytest.mark.expression import Expression
except ImportError:  # pragma: no cover
    Expression = None
import breadth
from shared_class import SHARED_GROUP, shared_class  # noqa: F401 - the one graded class, a session fixture

ROOT = Path(__file__).resolve().parent.parent
# the venv's commands (nbgrader's own Gradebook() runs its `alembic`; the CLI tools) for every test
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

# The layers of the suite, by what they cost: a whole file here, single tests by their own marker.
# `make test-fast` runs everything that is none of these, nor `slow`, `breadth` or `full` (the checks,
# the wire format, verdicts, collection, translations, the package's shape): docs/testing.md.
LAYERS = {
    "test_grading.py": "e2e",
    "test_class_grading.py": "e2e",
    "test_adversarial.py": "e2e",
    "test_zh_class.py": "e2e",
    "test_site.py": "browser",
    "test_lab.py": "browser",
    "test_formgrader.py": "browser",
    "test_feedback_layout.py": "browser",
    "test_distributed.py": "cluster",
}

# The gate (`make test`, what CI runs) is everything but `full`; `make test-full` runs everything.
# These layers are `full` as a whole, except a test marked `gate` (one browser check stays in the
# gate); other tests are marked `full` in their own files, each with the reason it can wait.
FULL_LAYERS = {"browser", "cluster", "claims"}

# Solution notebooks whose nbval runs in `make test-full` only: their training demos took 353 s of the
# gate's 581 s of nbval (docs/testing.md). What nbval caught in the gate, stored outputs left stale by
# a changed check or an edited notebook, the gate catches without executing anything:
# tests/test_authoring.py::test_the_committed_tree_is_refreshed compares every notebook and its checks
# with refresh.json. What is left to nbval, outputs that do not reproduce, is rare breakage.
NBVAL_IN_FULL = {
    "04_pre_post_ln",
    "06_transformer_block",
    "07_decoder",
    "09_modern_block",
    "10_flash_attention",  # 40 s of nbval in the gate (its timing cells), moved 2026-12-07
    "11_tokenizer",  # 61 s (training BPE on the corpus), moved 2026-12-07
    "12_training",
}


def pytest_addoption(parser):
    parser.addoption(
        "--skip-verified-breadth",
        action="store_true",
        help="leave out the `breadth` tests of the lessons tests/breadth_verified.json records at their "
        "digest now (the gate; tests/breadth.py)",
    )
    parser.addoption(
        "--shared-class",
        choices=("whole", "gate"),
        default="whole",
        help="how much of the example class the shared graded class holds (tests/shared_class.py): "
        "all of it, or the gate's part (make test)",
    )
    parser.addoption(
        "--record-breadth",
        action="store_true",
        help="write build/breadth-passed.json: the lessons whose breadth tests all ran and passed "
        "(make breadth, then tests/breadth.py --merge)",
    )


def _breadth_lesson(item_or_report, lessons):
    """The lesson of a `breadth` test of a file whose results tests/breadth.py records, else None."""
    path = item_or_report.nodeid.split("::")[0]
    if Path(path).name not in breadth.CACHED or "breadth" not in item_or_report.keywords:
        return None
    return breadth.lesson_of(item_or_report.nodeid, lessons)


def _lessons():
    from autograder import course

    return course.lessons()


def pytest_report_header(config):
    if config.getoption("skip_verified_breadth"):
        lessons = _lessons()
        ok = breadth.verified(lessons)
        stale = [lesson for lesson in lessons if lesson not in ok]
        return [
            f"breadth verified at its digest, left out (tests/breadth_verified.json): {len(ok)} lessons; "
            f"run here: {', '.join(stale) or 'none'}"
        ]
    return []


def pytest_configure(config):
    for name, why in [
        ("e2e", "grades notebooks end to end through the sandboxed pipeline"),
        ("browser", "drives a real Chromium"),
        ("cluster", "starts PostgreSQL and a Dask cluster"),
        ("nbval", "re-executes a solution notebook and compares its stored outputs"),
        ("claims", "trains the lessons' models to measure what a lesson claims (test_claims_*.py)"),
        ("slow", "seconds of real work: regenerating the release, nbgrader's exchange, a zip bomb"),
        (
            "breadth",
            "the rest of a sweep whose sample `make test-fast` runs (tests/tiers.py): `make test` runs it",
        ),
        ("full", "only in `make test-full`: coverage the gate (`make test`) holds elsewhere or can wait"),
        (
            "fast",
            "only in `make test-fast` (and test-full): a cheaper stand-in for a test the gate runs whole",
        ),
        ("gate", "in `make test` although its layer is `full`"),
    ]:
        config.addinivalue_line("markers", f"{name}: {why}")


def _layer_of(path: Path):
    return LAYERS.get(path.name) or ("claims" if path.name.startswith("test_claims_") else None)


def pytest_ignore_collect(collection_path, config):
    """A whole layer's file that `-m` deselects whatever else its tests are marked is not imported
    (`make test-fast`: the end-to-end and claims files cost seconds of imports in each process)."""
    layer = _layer_of(collection_path)
    expression = config.getoption("markexpr", "")
    if not layer or not expression or Expression is None:
        return None
    try:
        compiled = Expression.compile(expression)
    except Exception:  # noqa: BLE001 - pytest reports a bad expression itself, at selection
        return None
    names = sorted(set(re.findall(r"[\w.:+-]+", expression)) - {"and", "or", "not", "True", "False", layer})
    if len(names) > 12:
        return None
    for bits in itertools.product((False, True), repeat=len(names)):
        marked = {layer} | {name for name, bit in zip(names, bits) if bit}
        if compiled.evaluate(lambda name, *args, marked=marked, **kwargs: name in marked):
            return None  # some test of this file could be selected
    return True


def _sets_up_once(item) -> bool:
    """Whether the test asks for a module- or session-wide fixture of its own file; a test already
    in a group (a notebook's cells, the shared class's readers) keeps it."""
    if item.get_closest_marker("xdist_group"):
        return False
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    own = item.nodeid.split("::")[0]
    return any(
        d.scope in ("module", "session") and d.baseid == own
        for defs in info.name2fixturedefs.values()
        for d in defs
    )


# tryfirst: the markers must be on the items before pytest-xdist reads `xdist_group`
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        layer = _layer_of(item.path)
        if layer:
            item.add_marker(getattr(pytest.mark, layer))
        elif item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)
            # a notebook's cells run in order in one kernel: one process takes them all
            item.add_marker(pytest.mark.xdist_group(f"nbval-{item.path.name}"))
            if item.path.stem in NBVAL_IN_FULL:
                item.add_marker(pytest.mark.full)
        if layer in FULL_LAYERS and not item.get_closest_marker("gate"):
            item.add_marker(pytest.mark.full)
        if "shared_class" in getattr(item, "fixturenames", ()):
            # one process grades the shared class and runs every test that reads it
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUP))
        elif item.get_closest_marker("full") and _sets_up_once(item):
            # `make test-full` in two processes: what a file sets up once (a claim's sweep, the
            # catalogue graded in kernels, a clean venv, a browser) is set up in one of them only
            item.add_marker(pytest.mark.xdist_group(f"file-{item.path.name}"))
    if config.getoption("skip_verified_breadth"):
        lessons = _lessons()
        ok = breadth.verified(lessons)
        keep, left = [], []
        for item in items:
            (left if _breadth_lesson(item, lessons) in ok else keep).append(item)
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = keep


# `--record-breadth`: the lessons of this run's breadth reports, and whether all of them passed
_breadth_results: dict = {}


def pytest_runtest_logreport(report):
    """`--record-breadth` (set up in `pytest_sessionstart`): a lesson's breadth is verified when
    every one of its reports passed."""
    lessons = _breadth_results.get("lessons")
    if lessons is None:
        return
    lesson = _breadth_lesson(report, lessons)
    if lesson is None:
        return
    ok = report.passed or (report.when != "call" and not report.failed and not report.skipped)
    state = _breadth_results.setdefault("state", {})
    state[lesson] = state.get(lesson, True) and ok


def pytest_sessionstart(session):
    config = session.config
    if config.getoption("record_breadth") and not hasattr(config, "workerinput"):
        selection = (
            config.getoption("keyword"),
            config.getoption("markexpr"),
            sorted(Path(a).name for a in config.args),
        )
        if selection != ("", breadth.MARKS, sorted(breadth.CACHED)):
            # a partial run (-k, another -m, other files) would record lessons it did not run whole
            raise pytest.UsageError(
                f"--record-breadth records only the whole run: -m {breadth.MARKS!r} {' '.join(breadth.CACHED)}"
            )
        _breadth_results["lessons"] = _lessons()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if "lessons" not in _breadth_results or exitstatus not in (0, 1):
        return  # not recording, or an interrupted run (it did not run every lesson whole)
    state = _breadth_results.get("state", {})
    passed = {lesson: breadth.digest(lesson) for lesson, ok in state.items() if ok}
    breadth.RESULTS.parent.mkdir(parents=True, exist_ok=True)
    breadth.RESULTS.write_text(json.dumps(passed, indent=1) + "\n", encoding="utf-8")
    config.get_terminal_writer().line(
        f"breadth passed: {', '.join(sorted(passed)) or 'no lesson'} ({breadth.RESULTS})"
    )


_MAIN = sys.modules["__main__"]
_MAIN_SPEC = getattr(_MAIN, "__spec__", None)


@pytest.fixture(autouse=True)
def _main_module_kept():
    """Puts pytest's `__main__` back after a test that replaced it (running code as a script does:
    the replacement has no `__spec__`, and multiprocessing's forkserver, which the shared class's
    pool uses, then fails in whichever later test starts one, far from the cause)."""
    yield
    if sys.modules.get("__main__") is not _MAIN:
        sys.modules["__main__"] = _MAIN
    if not hasattr(_MAIN, "__spec__"):
        _MAIN.__spec__ = _MAIN_SPEC
