"""Which of a lesson's own plain code cells grading may leave out: those nothing graded reads.

A lesson's untagged code cells (worked examples, measurements, asserts of its claims) run when a
student runs the notebook; at grading most of them only cost time (a notebook's slowest cells are
usually these). A cell is left out only when all of these hold:

* its text is the lesson's own (a cell the student changed or added always runs);
* no cell that runs (the setup, the answers, the test cells, the student's own cells, the cells
  kept by this rule) and none of the names the checks look up reads a name it assigns;
* it changes no global state another cell could see (seeds, default dtype or device, ...).

Names are found with `ast` at the top level and inside functions alike (over-counting only keeps
more cells). Where that cannot be trusted, everything runs: a running cell that the parser cannot
read (IPython magics), or one of the student's that reaches names by string (`globals()`, `eval`,
`exec`, `import *`, ...).
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import symtable

from autograder.course import nbgrader_meta, tags

DYNAMIC = frozenset(
    {"globals", "locals", "vars", "eval", "exec", "compile", "__import__", "get_ipython", "importlib"}
)
# attributes that reach a namespace by string (the name is then read as `__dict__` and the like)
DYNAMIC_ATTRIBUTES = frozenset(
    {"__dict__", "__globals__", "f_globals", "f_locals", "user_ns", "modules", "__builtins__"}
)
BUILTINS = frozenset(dir(builtins))
# calls on a module (torch.manual_seed, np.random.seed, torch.set_default_dtype, ...) that change
# what later cells compute; a Generator's own manual_seed does not
GLOBAL_STATE = re.compile(
    r"manual_seed(_all)?|seed|setstate|set_rng_state|set_\w+|use_\w+|enable_\w+|disable_\w+"
)


@functools.lru_cache(maxsize=4096)
def _names(source: str):
    """(names the cell binds at the top level; names it reads from other cells: at the top level
    before it binds them itself, as globals inside its functions it does not bind, or as objects
    whose attributes it sets; (name, function) of every call of an attribute of a name,
    `torch.manual_seed` -> ("torch", "manual_seed")), or None when it cannot be read whole."""
    try:
        table = symtable.symtable(source, "<cell>", "exec")
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
        return None  # names nobody can list
    stores = set()
    for sym in table.get_symbols():
        if sym.is_assigned() or sym.is_imported():
            stores.add(sym.get_name())
    deferred = set()  # what functions and classes read when they run
    todo = list(table.get_children())
    while todo:
        scope = todo.pop()
        todo += scope.get_children()
        for sym in scope.get_symbols():
            if sym.is_declared_global() and sym.is_assigned():
                stores.add(sym.get_name())
            elif (
                sym.is_global() or sym.is_declared_global() or (sym.is_free() and scope.get_type() == "class")
            ):
                deferred.add(sym.get_name())
    loads, bound, calls = set(), set(), set()
    for statement in tree.body:  # in order: a name this cell binds before reading it is its own
        mine = set()
        for node in _walk_here(statement):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load) and node.id not in bound:
                    loads.add(node.id)
                elif not isinstance(node.ctx, ast.Load):
                    mine.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                mine.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mine.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
                base = node.value  # x.attr = ... changes x where it lives
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name):
                    loads.add(base.id)
        bound |= mine
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRIBUTES:
            loads.add("globals")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                calls.add((base.id, node.func.attr))
        elif isinstance(node, ast.Name) and node.id in DYNAMIC:
            loads.add(node.id)
    return frozenset(stores), frozenset(loads | (deferred - stores)), frozenset(calls)


def _walk_here(node):
    """The nodes of a statement that run when it runs (not the bodies of its functions, lambdas
    and classes: their reads are `deferred`); comprehensions included."""
    todo = [node]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            # only what runs where it is defined: decorators, defaults, base classes
            args = getattr(node, "args", None)
            todo += [
                *getattr(node, "decorator_list", []),
                *getattr(node, "bases", []),
                *getattr(node, "keywords", []),
            ]
            todo += [
                *getattr(args, "defaults", []),
                *[d for d in getattr(args, "kw_defaults", []) if d is not None],
            ]
            continue
        todo += list(ast.iter_child_nodes(node))


def check_names(cases: dict) -> set:
    """Every name the checks look up in the student's namespace: graded names, helpers, classes."""
    found = set(cases)

    def walk(value):
        if isinstance(value, dict):
            for key in ("graded", "helper", "cls"):
                if isinstance(value.get(key), str):
                    found.add(value[key])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for question_cases in cases.values():
        for case in question_cases:
            walk(case.steps)
    return found


def skippable(nb, skip: set, source, needed: set) -> set:
    """Indices of the lesson's own plain cells in `nb` that grading may leave out (see above).
    `skip`: cells already left out (demo cells); `needed`: `check_names()` of the lesson."""
    lesson_text = {
        c.get("id"): c.source
        for c in source.cells
        if c.cell_type == "code" and not nbgrader_meta(c) and not ({"setup", "demo"} & set(tags(c)))
    }
    modules = {n for c in nb.cells if c.cell_type == "code" for n in _imported(c.source)}
    candidates, reads = {}, dict.fromkeys(needed, len(nb.cells))  # name -> last cell that reads it
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or i in skip:
            continue
        meta = nbgrader_meta(cell)
        names = _names(cell.source)
        if not meta and lesson_text.get(cell.get("id")) == cell.source and names is not None:
            if not any(root in modules and GLOBAL_STATE.fullmatch(fn) for root, fn in names[2]):
                candidates[i] = names
                continue
        if names is None:
            return set()
        loads = names[1]
        if (meta.get("grade") and not meta.get("solution")) or "setup" in tags(cell):
            loads = loads - DYNAMIC  # the lesson's own: checks.check(name, globals()) reads `needed`
        elif loads & DYNAMIC:
            return set()
        reads.update(dict.fromkeys(loads, i))
    # from the last cell up: a cell is kept when a later cell that runs reads a name it binds, or
    # reads what it reads (it may have changed it: x.append(...)), modules (GLOBAL_STATE's),
    # builtins and graded names (a demo calls them, nothing it runs defines them again) aside
    kept = set()
    for i in sorted(candidates, reverse=True):
        stores, loads, _ = candidates[i]
        touched = (loads - modules - needed - BUILTINS) | stores
        if any(reads.get(name, -1) > i for name in touched):
            kept.add(i)
            for name in loads:
                reads[name] = max(reads.get(name, -1), i)
    return set(candidates) - kept


def _imported(source: str) -> set:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
