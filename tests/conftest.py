import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# nbgrader's gradebook runs the `alembic` command from the venv
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
