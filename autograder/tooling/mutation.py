"""Mutation testing of the lessons' checks (`make mutation`, `python -m autograder mutation [LESSON ...]`).

How strong is a self-check? As strong as the wrong answers it fails. This tool makes them: one small
change at a time to a reference answer (a mutant: an operator, a constant, a dim, a function swapped
for its sibling, an update dropped, a default value), runs the lesson's test cells on it, visible
check first, then the hidden one, and says which mutants every check let through.

Why not a mutation library (mutmut, cosmic-ray, mutatest): they mutate files on disk and rerun a
test command per mutant. Our answers live in notebook cells between `### BEGIN SOLUTION` and
`### END SOLUTION`, only that code may be mutated (the signature around it is given to the student,
its default values aside), and a lesson's checks run in well under a second in process, where a test
command would spend seconds importing torch for every mutant. So: a small AST mutator over the
answer cells, and a forked worker per lesson that runs the setup cells once and then each mutant,
with a time limit per mutant (a mutant that loops forever is stopped and counted as killed: the
notebook's cell would never finish).

A mutant is named by what it changes, not where: the function it sits in, the statement (as
`ast.unparse` writes it, so reformatting the cell does not rename it), the operator and the change.
That name keys the reviewed list of equivalent mutants, `tests/mutation_equivalents.toml`.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import multiprocessing
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from autograder import course

EQUIVALENTS = course.ROOT / "tests" / "mutation_equivalents.toml"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SOFT_LIMIT_S = 20  # per mutant, in the worker: a Python loop that never ends is interrupted
HARD_LIMIT_S = 60  # per mutant, from outside: a worker stuck in C is killed and started again

# The operators, each with a name the docs list (docs/mutation.md)
BINOPS = {
    ast.Add: [ast.Sub],
    ast.Sub: [ast.Add],
    ast.Mult: [ast.Div],
    ast.Div: [ast.Mult, ast.FloorDiv],
    ast.FloorDiv: [ast.Div],
    ast.Mod: [ast.FloorDiv],
    ast.Pow: [ast.Mult],
    ast.MatMult: [ast.Mult],
}
CMPOPS = {
    ast.Lt: [ast.LtE],
    ast.LtE: [ast.Lt],
    ast.Gt: [ast.GtE],
    ast.GtE: [ast.Gt],
    ast.Eq: [ast.NotEq],
    ast.NotEq: [ast.Eq],
    ast.Is: [ast.IsNot],
    ast.IsNot: [ast.Is],
    ast.In: [ast.NotIn],
    ast.NotIn: [ast.In],
}
BOOLOPS = {ast.And: ast.Or, ast.Or: ast.And}
# functions and methods a student mixes up with a sibling (called by that name, or as an attribute)
SWAPS = {
    "softmax": "log_softmax",
    "log_softmax": "softmax",
    "sum": "mean",
    "mean": "sum",
    "tril": "triu",
    "triu": "tril",
    "max": "min",
    "min": "max",
    "amax": "amin",
    "amin": "amax",
    "argmax": "argmin",
    "argmin": "argmax",
    "sqrt": "rsqrt",
    "rsqrt": "sqrt",
    "sin": "cos",
    "cos": "sin",
    "exp": "log",
    "log": "exp",
    "zeros": "ones",
    "ones": "zeros",
    "zeros_": "ones_",
    "ones_": "zeros_",
    "zeros_like": "ones_like",
    "ones_like": "zeros_like",
    "cat": "stack",
    "stack": "cat",
    "relu": "gelu",
    "gelu": "relu",
    "GELU": "ReLU",
    "ReLU": "GELU",
    "var": "std",
    "std": "var",
    "normal_": "uniform_",
    "uniform_": "normal_",
    "reshape": "view",
}
DIM_KEYWORDS = {"dim", "axis", "dim0", "dim1", "start_dim", "end_dim"}
OPERATORS = {
    "arithmetic": "+ <-> -, * -> /, / -> * and //, // -> /, % -> //, ** -> *, @ -> *",
    "unary": "-x -> x, not x -> x, ~x -> x",
    "comparison": "< <-> <=, > <-> >=, == <-> !=, is <-> is not, in <-> not in",
    "boolean": "and <-> or",
    "constant": "an int n -> n + 1 and n - 1; a float f -> 0.0 (f != 0) and f + 1.0; True <-> False",
    "dim": "the same, on a dim/axis argument (dim=-1 -> dim=0 and dim=-2; transpose(1, 2) -> transpose(0, 2) ...)",
    "swap": "a function or method for its sibling: " + ", ".join(f"{a}->{b}" for a, b in SWAPS.items()),
    "drop": "a statement dropped: an augmented assignment (x += ...), a re-assignment of a name "
    "already bound (x = x / t), a call whose value is unused (nn.init.zeros_(...), a list append)",
    "default": "a keyword default in a signature (temperature=1.0 -> 0.0 and 2.0, is_causal=False -> True)",
}


@dataclass(frozen=True)
class Mutant:
    lesson: str
    cell: str  # the answer cell's grade_id
    where: str  # the function or method it is in (Class.method), or "<cell>"
    statement: str  # the statement it changes, unparsed (its header for if/for/while/def)
    operator: str  # one of OPERATORS
    change: str  # "before -> after"
    source: str  # the mutated cell
    nth: int = 1  # the n-th mutant with the same name in the cell (a statement written twice)

    @property
    def key(self) -> str:
        name = f"{self.where}: {self.statement} :: {self.change}"
        return name if self.nth == 1 else f"{name} #{self.nth}"


@dataclass
class Outcome:
    mutant: Mutant
    verdict: str  # "visible", "hidden" (killed only by the hidden check), "survived", "timeout"
    question: str = ""  # the test cell that killed it
    detail: str = ""  # the first line of what the check said


# ---------------------------------------------------------------------------------------------
# The mutator


def _solution_lines(source: str) -> list[tuple[int, int]]:
    """The line ranges (1-based, inclusive) between BEGIN and END SOLUTION of a cell."""
    ranges, start = [], None
    for i, line in enumerate(source.splitlines(), 1):
        if BEGIN in line:
            start = i
        elif END in line and start is not None:
            ranges.append((start, i))
            start = None
    return ranges


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _header(stmt: ast.stmt) -> str:
    """A statement as a name: simple ones whole, compound ones by their header line."""
    if isinstance(stmt, (ast.If, ast.While)):
        return f"{'if' if isinstance(stmt, ast.If) else 'while'} {ast.unparse(stmt.test)}:"
    if isinstance(stmt, ast.For):
        return f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}:"
    if isinstance(stmt, ast.With):
        return f"with {', '.join(ast.unparse(i) for i in stmt.items)}:"
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def {stmt.name}({ast.unparse(stmt.args)}):"
    if isinstance(stmt, ast.ClassDef):
        return f"class {stmt.name}:"
    if isinstance(stmt, ast.Try):
        return "try:"
    return _short(ast.unparse(stmt))


def _number(node) -> float | int | bool | None:
    """The value of a number literal (-1 included), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    return None


def _literal(value) -> ast.expr:
    if isinstance(value, bool) or value >= 0:
        return ast.Constant(value)
    return ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _number_changes(value) -> list:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1]
    out = [0.0] if value != 0 else []
    return out + [value + 1.0]


class _Points(ast.NodeVisitor):
    """Walks a cell and lists every mutation point: (path to the node, operator, change, a function
    that returns the replacement node, the enclosing function and statement)."""

    def __init__(self, ranges):
        self.ranges = ranges
        self.points: list = []
        self.scope: list[str] = []
        self.stmt: list[ast.stmt] = []
        self.bound: list[set] = [set()]

    def inside(self, node) -> bool:
        line = getattr(node, "lineno", None)
        return line is not None and any(a < line < b for a, b in self.ranges)

    def add(self, node, operator, change, make):
        where = ".".join(self.scope) or "<cell>"
        stmt = _header(self.stmt[-1]) if self.stmt else ""
        self.points.append((node, operator, change, make, where, stmt))

    # scopes and statements
    def visit_ClassDef(self, node):
        self.stmt.append(node)
        self.scope.append(node.name)
        for child in node.body:
            self.visit(child)
        self.scope.pop()
        self.stmt.pop()

    def visit_FunctionDef(self, node):
        self.stmt.append(node)
        self.scope.append(node.name)
        self._defaults(node)
        self.bound.append({a.arg for a in node.args.args + node.args.kwonlyargs})
        for child in node.body:
            self.visit(child)
        self.bound.pop()
        self.scope.pop()
        self.stmt.pop()

    def _defaults(self, node):
        args = node.args
        pos = args.args[len(args.args) - len(args.defaults) :]
        pairs = list(zip(pos, args.defaults)) + [
            (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d
        ]
        for arg, default in pairs:
            value = _number(default)
            if value is None:
                continue
            for new in _number_changes(value):
                self.add(
                    default,
                    "default",
                    f"{arg.arg}={ast.unparse(default)} -> {arg.arg}={ast.unparse(_literal(new))}",
                    lambda new=new: _literal(new),
                )

    def generic_visit(self, node):
        if isinstance(node, ast.stmt):
            self.stmt.append(node)
            self._statement(node)
            super().generic_visit(node)
            self.stmt.pop()
        else:
            super().generic_visit(node)

    def visit_Assert(self, node):  # an assert guards bad arguments: mutating it says nothing of the check
        return

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant):  # a docstring
            return
        self.generic_visit(node)

    # dropped statements
    def _statement(self, node):
        if not self.inside(node):
            self._bind(node)
            return
        drop = None
        if isinstance(node, ast.AugAssign):
            drop = "drop"
        elif isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id in self.bound[-1] for t in node.targets
        ):
            drop = "drop"
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            drop = "drop"
        if drop:
            self.add(node, "drop", f"{_short(ast.unparse(node), 60)} -> pass", lambda: ast.Pass())
        self._bind(node)

    def _bind(self, node):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    self.bound[-1].add(n.id)

    # expressions
    def visit_BinOp(self, node):
        if self.inside(node):
            for new in BINOPS.get(type(node.op), []):
                before = ast.unparse(node)
                after = ast.unparse(ast.BinOp(node.left, new(), node.right))
                self.add(
                    node, "arithmetic", f"{_short(before, 50)} -> {_short(after, 50)}", _binop(node, new)
                )
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        value = _number(node)
        if value is not None:
            self._number(node, value)
            return
        if self.inside(node) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
            self.add(
                node,
                "unary",
                f"{_short(ast.unparse(node), 50)} -> {_short(ast.unparse(node.operand), 50)}",
                lambda node=node: copy.deepcopy(node.operand),
            )
        self.generic_visit(node)

    def visit_Compare(self, node):
        if self.inside(node):
            for i, op in enumerate(node.ops):
                for new in CMPOPS.get(type(op), []):
                    ops = list(node.ops)
                    ops[i] = new()
                    after = ast.Compare(node.left, ops, node.comparators)
                    self.add(
                        node,
                        "comparison",
                        f"{_short(ast.unparse(node), 50)} -> {_short(ast.unparse(after), 50)}",
                        lambda after=after: copy.deepcopy(after),
                    )
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        if self.inside(node):
            after = ast.BoolOp(BOOLOPS[type(node.op)](), node.values)
            self.add(
                node,
                "boolean",
                f"{_short(ast.unparse(node), 50)} -> {_short(ast.unparse(after), 50)}",
                lambda after=after: copy.deepcopy(after),
            )
        self.generic_visit(node)

    def visit_Constant(self, node):
        value = _number(node)
        if value is not None:
            self._number(node, value)

    def _number(self, node, value):
        if not self.inside(node):
            return
        keyword = getattr(node, "_keyword", None)
        kind = "dim" if keyword in DIM_KEYWORDS or getattr(node, "_dim_arg", False) else "constant"
        # shown in the expression around it (kv_cache[0][0] -> kv_cache[1][0]), so the name says
        # which of a statement's equal constants changed
        context = getattr(node, "_context", None)
        for new in _number_changes(value):
            if keyword:
                change = f"{keyword}={ast.unparse(node)} -> {keyword}={ast.unparse(_literal(new))}"
            elif context is not None:
                after = _Replace(node, _literal(new)).visit(copy.deepcopy(context, {id(node): node}))
                change = f"{_short(ast.unparse(context), 60)} -> {_short(ast.unparse(after), 60)}"
            else:
                change = f"{ast.unparse(node)} -> {ast.unparse(_literal(new))}"
            self.add(node, kind, change, lambda new=new: _literal(new))

    def visit_Call(self, node):
        if self.inside(node):
            name = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else node.func.id
                if isinstance(node.func, ast.Name)
                else None
            )
            new = SWAPS.get(name)
            if new:
                after = _swap(node, new)()
                change = f"{_short(ast.unparse(node), 60)} -> {_short(ast.unparse(after), 60)}"
                self.add(node, "swap", change, _swap(node, new))
            for kw in node.keywords:
                if kw.arg:
                    kw.value._keyword = kw.arg
            if name in (
                "transpose",
                "swapaxes",
                "movedim",
                "split",
                "softmax",
                "log_softmax",
                "cat",
                "stack",
            ):
                for a in node.args[1:] if name == "split" else node.args:
                    a._dim_arg = True
        self.generic_visit(node)


def _binop(node, new):
    def make():
        out = copy.deepcopy(node)
        out.op = new()
        return out

    return make


def _swap(node, new):
    def make():
        out = copy.deepcopy(node)
        if isinstance(out.func, ast.Attribute):
            out.func.attr = new
        else:
            out.func.id = new
        return out

    return make


class _Replace(ast.NodeTransformer):
    def __init__(self, target, replacement):
        self.target, self.replacement = target, replacement

    def visit(self, node):
        if node is self.target:
            return self.replacement
        return super().visit(node)


def _mark_contexts(tree) -> None:
    """Each number literal's nearest enclosing expression (a subscript, call, operation; not a bare
    slice or tuple), the context its mutant is shown in."""
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(tree):
        if _number(node) is None or id(node) in parents and _number(parents[id(node)]) is not None:
            continue
        up = parents.get(id(node))
        while isinstance(up, (ast.Slice, ast.Tuple, ast.keyword, ast.Starred)):
            up = parents.get(id(up))
        if isinstance(up, ast.expr):
            node._context = up


def mutants_of(lesson: str, cell: str, source: str) -> list[Mutant]:
    """Every mutant of one answer cell (one change each), without duplicates."""
    tree = ast.parse(source)
    _mark_contexts(tree)
    points = _Points(_solution_lines(source))
    points.visit(tree)
    out, seen, names = [], {ast.unparse(tree)}, {}
    for node, operator, change, make, where, stmt in points.points:
        twin = copy.deepcopy(tree)
        # the same node in the copy: the n-th node of a walk is the same in both
        index = next(i for i, n in enumerate(ast.walk(tree)) if n is node)
        target = next(n for i, n in enumerate(ast.walk(twin)) if i == index)
        mutated = ast.fix_missing_locations(_Replace(target, make()).visit(twin))
        text = ast.unparse(mutated)
        if text in seen:
            continue
        seen.add(text)
        base = (where, stmt, change)
        names[base] = names.get(base, 0) + 1
        out.append(Mutant(lesson, cell, where, stmt, operator, change, text, names[base]))
    return out


def lesson_cells(lesson: str) -> list[tuple[str, str, object]]:
    """The lesson's code cells that matter, in order: ("setup", source, None), ("answer", source,
    grade_id) and ("test", question, None)."""
    out = []
    for cell in course.read_solution(lesson).cells:
        if cell.cell_type != "code":
            continue
        meta = course.nbgrader_meta(cell)
        if meta.get("solution"):
            out.append(("answer", cell.source, meta["grade_id"]))
        elif meta.get("grade"):
            out.append(("test", meta["grade_id"], None))
        elif "setup" in course.tags(cell):
            out.append(("setup", cell.source, None))
    return out


def lesson_mutants(lesson: str) -> list[Mutant]:
    return [
        m for kind, src, gid in lesson_cells(lesson) if kind == "answer" for m in mutants_of(lesson, gid, src)
    ]


# ---------------------------------------------------------------------------------------------
# Running a mutant


class _TimeUp(BaseException):
    """Raised by the alarm: a BaseException, so the checks' `except Exception` cannot swallow it."""


def _on_alarm(signum, frame):
    raise _TimeUp()


class LessonRunner:
    """In one process: the lesson's setup cells run once; then each mutant's answers are executed
    into a copy of that namespace and the test cells after the mutated cell are checked, visible
    first, then hidden."""

    def __init__(self, lesson: str):
        import byhand

        self.lesson = lesson
        self.module = byhand.for_lesson(lesson)
        self.cells = lesson_cells(lesson)
        self.setup: dict = {"__name__": f"lesson_{lesson}"}
        with contextlib.redirect_stdout(io.StringIO()):
            for kind, src, _ in self.cells:
                if kind == "setup":
                    exec(compile(src, f"<{lesson}:setup>", "exec"), self.setup)

    def namespace(self, override: Mutant | None) -> dict:
        ns = dict(self.setup)
        for kind, src, gid in self.cells:
            if kind == "answer":
                code = override.source if override is not None and override.cell == gid else src
                exec(compile(code, f"<{self.lesson}:{gid}>", "exec"), ns)
        return ns

    def questions_after(self, cell: str | None) -> list[str]:
        seen = cell is None
        out = []
        for kind, src, gid in self.cells:
            if kind == "answer" and gid == cell:
                seen = True
            elif kind == "test" and seen:
                out.append(src)
        return out

    def first_failure(self, ns, questions, hidden) -> tuple[str, str] | None:
        for q in questions:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    self.module.check(q, ns, hidden=hidden)
            except _TimeUp:
                raise
            except Exception as exc:  # noqa: BLE001 - a check failure or the answer's own error
                return q, (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return None

    def run(self, mutant: Mutant | None) -> tuple[str, str, str]:
        """(verdict, question, detail) for a mutant (None: the reference answers, which must pass)."""
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, SOFT_LIMIT_S)
        try:
            try:
                ns = self.namespace(mutant)
            except _TimeUp:
                raise
            except Exception as exc:  # noqa: BLE001 - the mutated cell does not even run
                return "visible", "(the cell)", f"{type(exc).__name__}: {exc}"[:200]
            questions = self.questions_after(None if mutant is None else mutant.cell)
            fail = self.first_failure(ns, questions, hidden=False)
            if fail:
                return ("visible", *fail)
            fail = self.first_failure(ns, questions, hidden=True)
            if fail:
                return ("hidden", *fail)
            return "survived", "", ""
        except _TimeUp:
            return "timeout", "", f"over {SOFT_LIMIT_S} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _worker(lesson: str, mutants: list, conn) -> None:
    import torch

    torch.set_num_threads(1)
    try:
        runner = LessonRunner(lesson)
        conn.send(("ready", runner.run(None)))
        while True:
            index = conn.recv()
            if index is None:
                return
            conn.send(("done", runner.run(mutants[index])))
    except Exception:  # noqa: BLE001 - say what broke instead of dying silently
        conn.send(("error", traceback.format_exc()))


class _Worker:
    def __init__(self, lesson: str, mutants: list):
        ctx = multiprocessing.get_context("fork")  # the mutants reach the child as they are, unpickled
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(lesson, mutants, child), daemon=True)
        self.proc.start()
        child.close()

    def ask(self, index, timeout):
        if index is not None:
            self.conn.send(index)
        if not self.conn.poll(timeout):
            return None
        try:
            return self.conn.recv()
        except EOFError:
            return None

    def stop(self):
        with contextlib.suppress(Exception):
            self.conn.send(None)
        self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


def run_lesson(lesson: str, progress=None, limit: int | None = None) -> list[Outcome]:
    """Every mutant of `lesson` run through its checks in a forked worker; `progress(done, total,
    outcome)` after each."""
    mutants = lesson_mutants(lesson)[:limit]
    outcomes: list[Outcome] = []
    worker = None

    def start():
        w = _Worker(lesson, mutants)
        reply = w.ask(None, 300)
        if reply is None or reply[0] != "ready":
            w.stop()
            raise RuntimeError(f"{lesson}: the mutation worker did not start: {reply and reply[1]}")
        verdict = reply[1]
        if verdict[0] != "survived":
            w.stop()
            raise RuntimeError(f"{lesson}: the reference answers fail their own checks: {verdict}")
        return w

    try:
        for i, mutant in enumerate(mutants):
            if worker is None:
                worker = start()
            reply = worker.ask(i, HARD_LIMIT_S)
            if reply is None:  # stuck where the alarm cannot reach (inside a C call), or died
                worker.proc.kill()
                worker.stop()
                worker = None
                outcome = Outcome(mutant, "timeout", "", f"no answer in {HARD_LIMIT_S} s")
            elif reply[0] == "error":
                raise RuntimeError(f"{lesson}: the mutation worker failed:\n{reply[1]}")
            else:
                outcome = Outcome(mutant, *reply[1])
            outcomes.append(outcome)
            if progress:
                progress(i + 1, len(mutants), outcome)
    finally:
        if worker is not None:
            worker.stop()
    return outcomes


# ---------------------------------------------------------------------------------------------
# The reviewed list of equivalent mutants, and the table


def read_equivalents(path: Path = EQUIVALENTS) -> dict:
    """(lesson, cell, key) -> reason, from the reviewed TOML list."""
    if not path.exists():
        return {}
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {(e["lesson"], e["cell"], e["mutant"]): e["reason"] for e in data.get("equivalent", [])}


@dataclass
class Summary:
    lesson: str
    mutants: int = 0
    visible: int = 0
    hidden: int = 0
    equivalent: int = 0
    survived: list = field(default_factory=list)  # not listed as equivalent
    hidden_only: list = field(default_factory=list)
    stale: list = field(default_factory=list)  # listed, but killed now (or no such mutant)
    seconds: float = 0.0


def summarize(lesson: str, outcomes: list[Outcome], equivalents: dict, seconds: float = 0.0) -> Summary:
    s = Summary(lesson, mutants=len(outcomes), seconds=seconds)
    listed = {k for k in equivalents if k[0] == lesson}
    for o in outcomes:
        key = (lesson, o.mutant.cell, o.mutant.key)
        if o.verdict in ("visible", "timeout"):
            s.visible += 1
        elif o.verdict == "hidden":
            s.hidden += 1
            s.hidden_only.append(o)
        elif key in equivalents:
            s.equivalent += 1
        else:
            s.survived.append(o)
        if key in listed and o.verdict != "survived":
            s.stale.append(key)
        listed.discard(key)
    s.stale += sorted(listed)  # listed mutants the mutator no longer makes
    return s


def table(summaries: list[Summary]) -> str:
    head = "| lesson | mutants | killed by the visible check | killed only by the hidden | equivalent (listed) | survived | s |"
    rows = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    total = Summary("total")
    for s in summaries:
        rows.append(
            f"| {s.lesson} | {s.mutants} | {s.visible} | {s.hidden} | {s.equivalent} | {len(s.survived)} | {s.seconds:.0f} |"
        )
        total.mutants += s.mutants
        total.visible += s.visible
        total.hidden += s.hidden
        total.equivalent += s.equivalent
        total.survived += s.survived
        total.seconds += s.seconds
    if len(summaries) > 1:
        rows.append(
            f"| total | {total.mutants} | {total.visible} | {total.hidden} | {total.equivalent} | "
            f"{len(total.survived)} | {total.seconds:.0f} |"
        )
    return "\n".join(rows)


def problems(summaries: list[Summary]) -> list[str]:
    """What fails `make mutation`: survivors not listed, hidden-only kills, stale list entries."""
    out = []
    for s in summaries:
        for o in s.survived:
            out.append(f"survived: {s.lesson} {o.mutant.cell} [{o.mutant.operator}] {o.mutant.key}")
        for o in s.hidden_only:
            out.append(
                f"killed only by the hidden check ({o.question}): {s.lesson} {o.mutant.cell} "
                f"[{o.mutant.operator}] {o.mutant.key}\n    {o.detail}"
            )
        for key in s.stale:
            out.append(f"listed as equivalent but killed, or no longer made: {key[0]} {key[1]} {key[2]}")
    return out


def main(lessons: list[str] | None = None, limit: int | None = None, quiet: bool = False) -> int:
    lessons = lessons or course.lessons()
    equivalents = read_equivalents()
    summaries = []
    for lesson in lessons:
        start = time.monotonic()

        def progress(done, total, outcome, lesson=lesson):
            if quiet:
                return
            if outcome.verdict in ("survived", "hidden") or done == total or done % 25 == 0:
                mark = {"survived": "SURVIVED", "hidden": "HIDDEN ONLY"}.get(outcome.verdict, "")
                line = f"{lesson} {done}/{total}"
                if mark:
                    line += f" {mark}: {outcome.mutant.cell} [{outcome.mutant.operator}] {outcome.mutant.key}"
                print(line, flush=True)

        outcomes = run_lesson(lesson, progress, limit)
        summaries.append(summarize(lesson, outcomes, equivalents, time.monotonic() - start))
    print()
    print(table(summaries))
    found = problems(summaries) if limit is None else []
    if found:
        print(
            f"\n{len(found)} problems (list an equivalent mutant in {EQUIVALENTS.relative_to(course.ROOT)}):"
        )
        print("\n".join(found))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or None))
