"""The experiment code of a lesson, for the claims tests: the reference answers plus every function,
class and constant defined in the lesson's own (non-answer) code cells, taken from the solution
notebook, so a test re-runs the lesson's experiment on seeds the notebook does not use."""

import ast

import pytest
import torch

from autograder.course import answer_namespace, nbgrader_meta, read_solution, tags


def _is_constant(node) -> bool:
    return isinstance(node, ast.Assign) and all(
        isinstance(n, ast.Constant) for n in ast.walk(node.value) if not isinstance(n, (ast.Tuple, ast.Load))
    )


def definitions(lesson: str, assigns=_is_constant, skip_setup=True, only_demo=False, run_plain=False) -> dict:
    """The lesson's reference answers plus the functions, classes and the assignments `assigns`
    accepts of its other code cells (not the answer or test cells; nor the setup cell, unless
    `skip_setup` is False). `only_demo`: only the cells tagged `demo`; `run_plain`: the cells not
    tagged `demo` run whole (they define what the demo cells use)."""
    ns = answer_namespace(lesson)
    for cell in read_solution(lesson).cells:
        if cell.cell_type != "code" or nbgrader_meta(cell) or (skip_setup and "setup" in tags(cell)):
            continue
        demo = "demo" in tags(cell)
        if only_demo and not demo:
            continue
        if run_plain and not demo:
            exec(compile(cell.source, f"<{lesson} plain cell>", "exec"), ns)
            continue
        tree = ast.parse(cell.source)
        keep = [
            n
            for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) or (isinstance(n, ast.Assign) and assigns(n))
        ]
        exec(compile(ast.Module(body=keep, type_ignores=[]), f"<{lesson} lesson code>", "exec"), ns)
    return ns


def upper_case_names(node) -> bool:
    """An assignment to names in capitals only: a lesson's constants and tables."""
    return all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)


class one_thread:
    """Run with one CPU thread, as the lessons do (bit-reproducible, and the same on every machine)."""

    def __enter__(self):
        self.before = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)


def lesson_fixture(name: str, lesson: str, **how):
    """A module-scoped fixture `name` of `definitions(lesson, **how)`, which leaves torch's thread
    count as it found it (a lesson's setup cell sets one thread)."""

    @pytest.fixture(scope="module", name=name)
    def fixture():
        before = torch.get_num_threads()
        ns = definitions(lesson, **how)
        torch.set_num_threads(before)
        return ns

    return fixture


def one_thread_each_test():
    """An autouse fixture: every test of the module that holds it runs on one CPU thread."""

    @pytest.fixture(autouse=True, name="_one_thread")
    def fixture():
        with one_thread():
            yield

    return fixture
