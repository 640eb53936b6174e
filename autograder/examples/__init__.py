"""The bundled example class and the catalogues of mistakes and alternative answers."""

import importlib

from ..course import lessons


def answers_for(lesson: str):
    """The example-answers module of a lesson, or None when it has none yet."""
    try:
        return importlib.import_module(f"{__name__}.answers.a{lesson}")
    except ModuleNotFoundError:
        return None


def lessons_with_answers() -> list:
    return [lesson for lesson in lessons() if answers_for(lesson) is not None]
