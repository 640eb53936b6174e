"""The shape of the grading package: no import cycles, no state kept in module globals."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import autograder

PACKAGE = Path(autograder.__file__).resolve().parent
# A process pool or a Dask cluster hands a task nothing but its arguments: the station of a worker
# process (runner.Station: its slot, sandbox uid and zygote) is the one thing kept beside its tasks.
WORKER_STATE = {("autograder.pool", "_station"), ("autograder.distributed", "_here")}
MUTABLE = (list, dict, set, bytearray)


def _modules() -> dict:
    """{dotted name: path} of every module of the grading package (not its data)."""
    out = {"autograder": PACKAGE / "__init__.py"}
    for info in pkgutil.walk_packages([str(PACKAGE)], "autograder."):
        spec = importlib.util.find_spec(info.name)
        out[info.name] = Path(spec.origin)
    return out


def _imports(name: str, path: Path) -> set:
    """The autograder modules that module `name` (at `path`) imports, at any depth of the file."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                stem = f"{base}.{node.module}" if node.module else base
                out.add(stem)
                out.update(f"{stem}.{a.name}" for a in node.names)
            elif (node.module or "").startswith("autograder"):
                out.add(node.module)
                out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("autograder"))
    return out


def test_the_grading_package_has_no_import_cycle():
    modules = _modules()
    graph = {m: (_imports(m, p) & set(modules)) - {m, "autograder"} for m, p in modules.items()}
    state, cycle = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycle.append(path[path.index(n) :] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycle, "import cycles in autograder/: " + "; ".join(" -> ".join(c) for c in cycle)


def test_no_function_rebinds_a_module_global():
    """No `global` statement: state lives in objects that are handed on (runner.Station, ...)."""
    found = [
        f"{name}:{node.lineno} global {', '.join(node.names)}"
        for name, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Global)
    ]
    assert not found, f"got {found}, expected no global statement"


def test_no_module_holds_a_mutable_value():
    """Every module-level value of the grading package is immutable (tuples, frozensets, read-only
    mappings, paths, compiled patterns, functions, classes), but the worker stations."""
    found = []
    for name in _modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.startswith("__") or (name, attr) in WORKER_STATE:
                continue
            ours = type(value).__module__.startswith("autograder") and not isinstance(value, type)
            if isinstance(value, MUTABLE) or ours:
                found.append(f"{name}.{attr} = {type(value).__name__}")
    assert not found, f"got module-level mutable values {found}, expected none"


def test_the_worker_stations_are_what_the_allow_list_names():
    """The allow-list above names real names, each a station or a holder of one."""
    from autograder import distributed, pool

    assert pool._station == {} or set(pool._station) == {"here"}
    assert isinstance(distributed._here, distributed.WorkerStation)


def test_every_module_says_what_it_is_for():
    """Does every module of the grader open with a docstring (its one job, for a newcomer reading
    the tree)?"""
    missing = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.name != "__main__.py" and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert not missing, f"got modules without a docstring: {missing}"


def test_nothing_cites_a_file_outside_the_repository():
    """The course's own catalogue of mistakes is docs/mistakes.md: no file of the repository points
    to the steering folder (`shared/`) that a clone does not have."""
    root = PACKAGE.parent
    steering = "shared/" + "MISTAKES.md"  # spelled in two parts: this file is tracked too
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
    cites = [
        name
        for name in tracked.stdout.splitlines()
        if name.endswith((".py", ".md", ".ipynb", ".toml", ".cfg"))
        and (root / name).is_file()
        and steering in (root / name).read_text(encoding="utf-8", errors="replace")
    ]
    assert not cites, f"got citations of {steering} in {cites}, expected docs/mistakes.md"


def test_a_grading_process_skips_the_iri_grammars():
    """A process that imports the grader does not compile rfc3987_syntax's grammars (2-3 s each time,
    autograder/__init__.py), and nbformat still validates a notebook there. (`autograder.course`
    reads notebooks and imports nothing heavy; every worker and CLI run imports it too.)"""
    code = (
        "import sys, autograder.course, nbformat\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "print(sys.modules.get('rfc3987_syntax', 'absent'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() in ("None", "absent"), f"got {proc.stdout.strip()}, expected None"


def test_the_maintainers_commands_import_examples_without_touching_sys_path(tmp_path):
    """Does a command that needs examples/ (`examples`, `mistakes`, `bench`) import it from the
    checkout, from any folder, and leave `sys.path` as it found it (the checkout's other top-level
    folders stay unimportable by bare name)?"""
    code = (
        "import sys\n"
        "before = list(sys.path)\n"
        "from autograder.tooling.checkout import examples\n"
        "module = examples()\n"
        "from examples.build import CLASS\n"
        "assert examples() is module\n"
        "print(module.__file__, CLASS.is_dir(), sys.path == before)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = f"{PACKAGE.parent / 'examples' / '__init__.py'} True True"
    assert proc.stdout.strip() == expected, f"got {proc.stdout.strip()!r}, expected {expected!r}"
