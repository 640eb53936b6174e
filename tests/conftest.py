import os
import sys
from pathlib import Path

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
    "test_distributed.py": "cluster",
}


def pytest_configure(config):
    for name, why in [
        ("e2e", "grades notebooks end to end through the sandboxed pipeline"),
        ("browser", "drives a real Chromium"),
        ("cluster", "starts PostgreSQL and a Dask cluster"),
        ("nbval", "re-executes a solution notebook and compares its stored outputs"),
        ("claims", "trains the lessons' models to measure what a lesson claims (test_claims_*.py)"),
        ("slow", "seconds of real work: regenerating the release, nbgrader's exchange, a zip bomb"),
    ]:
        config.addinivalue_line("markers", f"{name}: {why}")


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        layer = LAYERS.get(item.path.name) or (
            "claims" if item.path.name.startswith("test_claims_") else None
        )
        if layer:
            item.add_marker(getattr(pytest.mark, layer))
        elif item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)
