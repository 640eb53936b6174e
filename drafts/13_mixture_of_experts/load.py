"""Run the draft lesson with its self-checks on: registers `mixture_of_experts/` as the package
`byhand.mixture_of_experts` (where it goes when the lesson lands) without moving it, then runs the
percent script given, as a script. Usage: python load.py lesson.py"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def register():
    """Import the draft checks as byhand.mixture_of_experts; returns the module."""
    import byhand

    name = "byhand.mixture_of_experts"
    if name in sys.modules:
        return sys.modules[name]
    package = HERE / "mixture_of_experts"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    byhand.mixture_of_experts = module
    return module


if __name__ == "__main__":
    register()
    runpy.run_path(sys.argv[1], run_name="__main__")
