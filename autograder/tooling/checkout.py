"""What the maintainers' commands read from a checkout of the repository beside the package.

The example class, its expected grades and the answer catalogue live in `examples/`, next to
`autograder/` and not in the installed package. `examples()` imports that folder as the package
`examples` by its path, without putting the checkout on `sys.path` (where its other top-level
folders, `build/`, `student/`, `tests/`, would become importable under their bare names too).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from autograder.course import ROOT


def examples() -> ModuleType:
    """The `examples` package of this checkout, imported once (`examples.build` and the other
    submodules then import as usual); exits with a sentence when there is no checkout around."""
    if "examples" in sys.modules:
        return sys.modules["examples"]
    init = ROOT / "examples" / "__init__.py"
    if not init.exists():
        raise SystemExit(f"no examples/ in {ROOT}: this command needs a checkout of the course repository")
    spec = importlib.util.spec_from_file_location(
        "examples", init, submodule_search_locations=[str(init.parent)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["examples"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["examples"]
        raise
    return module
