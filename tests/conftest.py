import os
import sys
from pathlib import Path

import pytest
from shared_class import SHARED_GROUP, shared_class  # noqa: F401 - the one graded class, a session fixture

ROOT = Path(__file__).resolve().parent.parent
# the venv's commands (nbgrader's own Gradebook() runs its `alembic`; the CLI tools) for every test
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

# The layers of the suite, by what they cost: a whole file here, single tests by their own marker.
# `make test-fast` runs everything that is none of these (the checks, the wire format, verdicts,
# collection, translations, the package's shape).
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


def pytest_configure(config):
    for name, why in [
        ("e2e", "grades notebooks end to end through the sandboxed pipeline"),
        ("browser", "drives a real Chromium"),
        ("cluster", "starts PostgreSQL and a Dask cluster"),
        ("nbval", "re-executes a solution notebook and compares its stored outputs"),
        ("claims", "trains the lessons' models to measure what a lesson claims (test_claims_*.py)"),
        ("slow", "seconds of real work: regenerating the release, nbgrader's exchange, a zip bomb"),
        ("full", "only in `make test-full`: coverage the gate (`make test`) holds elsewhere or can wait"),
        ("gate", "in `make test` although its layer is `full`"),
    ]:
        config.addinivalue_line("markers", f"{name}: {why}")


# tryfirst: the markers must be on the items before pytest-xdist reads `xdist_group`
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        layer = LAYERS.get(item.path.name) or (
            "claims" if item.path.name.startswith("test_claims_") else None
        )
        if layer:
            item.add_marker(getattr(pytest.mark, layer))
        elif item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)
            # a notebook's cells run in order in one kernel: one process takes them all
            item.add_marker(pytest.mark.xdist_group(f"nbval-{item.path.name}"))
        if layer in FULL_LAYERS and not item.get_closest_marker("gate"):
            item.add_marker(pytest.mark.full)
        if "shared_class" in getattr(item, "fixturenames", ()):
            # one process grades the shared class and runs every test that reads it
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUP))
