"""The experiment code of a lesson, for the claims tests: the reference answers plus every function,
class and constant defined in the lesson's own (non-answer) code cells, taken from the solution
notebook, so a test re-runs the lesson's experiment on seeds the notebook does not use."""

import ast

import torch

from autograder.course import answer_namespace, nbgrader_meta, read_solution, tags


def _is_constant(node) -> bool:
    return isinstance(node, ast.Assign) and all(
        isinstance(n, ast.Constant) for n in ast.walk(node.value) if not isinstance(n, (ast.Tuple, ast.Load))
    )


def definitions(lesson: str) -> dict:
    ns = answer_namespace(lesson)
    for cell in read_solution(lesson).cells:
        if cell.cell_type != "code" or "setup" in tags(cell) or nbgrader_meta(cell):
            continue
        tree = ast.parse(cell.source)
        keep = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) or _is_constant(n)]
        exec(compile(ast.Module(body=keep, type_ignores=[]), f"<{lesson} lesson code>", "exec"), ns)
    return ns


class one_thread:
    """Run with one CPU thread, as the lessons do (bit-reproducible, and the same on every machine)."""

    def __enter__(self):
        self.before = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)
